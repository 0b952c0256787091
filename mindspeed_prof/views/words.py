"""The sentences the text and HTML views share: what they say in words where the analysis gives
typed values (one place, so the two views say the same)."""

from __future__ import annotations

from mindspeed_prof.analysis.capture_facts import worlds_text
from mindspeed_prof.analysis.counts import GENERATE, is_update
from mindspeed_prof.analysis.readers.events import UNREAD_DEVICE
from mindspeed_prof.analysis.readers.labels import rank_label, ranks_text
from mindspeed_prof.analysis.rows import BOUNDS, DeviceVerdict, Straggler, World
from mindspeed_prof.analysis.throughput import OVER_PEAK, StageThroughput
from mindspeed_prof.analysis.triggered import Triggered
from mindspeed_prof.analysis.verdict import Verdict

__all__ = ["LINE_STAGES", "no_device_text", "throughput_line", "verdict_lines"]

#: The stages the verdict's throughput line names, at most (generation, then the update
#: stages).
LINE_STAGES = 2


def no_device_text(unread: dict[str, int], memory_sources: list[str | None] | None = None) -> str:
    """Why there is no device table: what is missing (launches without device activity), a
    device's memory without a timeline (an allocator snapshot), another tool's events, device
    events not read as time, or no device in the captures at all. ``memory_sources``: the
    memory rows' sources."""
    from mindspeed_prof.analysis.readers.events import NOT_RECORDED, OTHER_TOOL

    launches = unread.get(NOT_RECORDED, 0)
    other = unread.get(OTHER_TOOL, 0)
    unread = {cat: n for cat, n in unread.items() if cat not in (NOT_RECORDED, OTHER_TOOL)}
    if launches:
        return (
            f"No device data: {launches:,} kernel launches were recorded, but no device "
            "activity: device activity not recorded (was CUPTI / the device profiler on?)."
        )
    if not unread and "snapshot" in (memory_sources or []):
        return (
            "No device timeline: these captures hold a device's memory (an allocator "
            "snapshot), but no kernels, copies or collectives were recorded."
        )
    if not unread and other:
        return (
            f"No device breakdown: these captures are other tools' Chrome traces; their "
            f"{other:,} events are read as ranges of their processes, not as device time."
        )
    if not unread:
        return (
            "No device data: these are CPU-only captures (no kernels, copies or "
            "collectives were recorded)."
        )
    what = ", ".join(
        f"{n:,} {UNREAD_DEVICE.get(cat, cat)} ({cat})" for cat, n in sorted(unread.items())
    )
    return (
        f"No device breakdown: these captures hold {what}, which are not read as device "
        "time (kernels, copies and collectives of CUDA, ROCm and Ascend are)."
    )


def verdict_lines(v: Verdict) -> list[tuple[str, str]]:
    """The verdict in words: (label, sentence) pairs, the order ``analyse`` prints them (the
    text view and the report say the same)."""
    out = []
    if v.step:
        s = v.step
        on = f"on {s.ranks} rank{'s' * (s.ranks != 1)}"
        out.append(
            (
                "step",
                f"{s.median_ms:,.1f} ms (1 step {on})"
                if s.steps == 1
                else f"{s.median_ms:,.1f} ms (median of {s.steps} steps {on}; "
                f"{s.min_ms:,.1f}-{s.max_ms:,.1f} ms, spread {s.spread:.0%})",
            )
        )
    if v.slowest:
        w = v.slowest
        share = f" ({w.share:.0%} of the step)" if w.share is not None else ""
        where = f", longest on rank {rank_label(w.rank)}" if w.rank is not None else ""
        out.append(("slowest", f"{w.kind} {w.name}: {w.ms:,.1f} ms per step{share}{where}"))
    rests = (
        f"; the verdict rests on {v.steps} step{'s' * (v.steps != 1)}" if 0 < v.steps < 3 else ""
    )
    if v.straggler and v.behind:
        g, b = v.straggler, v.behind
        out.append(
            (
                "straggler",
                f"rank {rank_label(g.rank, g.source)} at {g.kind} {g.name}: "
                f"behind in {b.behind} of {b.compared} step{'s' * (b.compared != 1)}, "
                f"{b.mean_excess_ms:+,.1f} ms a step on average; worst, step {g.step}: "
                f"{_against(g)}{rests}",
            )
        )
    elif v.one_off:
        g = v.one_off
        out.append(
            (
                "straggler",
                f"no consistent straggler (largest one-off: rank "
                f"{rank_label(g.rank, g.source)} at {g.kind} {g.name}, step {g.step}: "
                f"{_against(g)}){rests}",
            )
        )
    elif v.step and v.step.ranks > 1:
        out.append(
            ("straggler", f"none (no rank behind the others by more than the noise floor){rests}")
        )
    out += _device_lines(v.device, v.worlds)
    if line := throughput_line(v.throughput):
        out.append(("throughput", line))
    if v.memory:
        m = v.memory
        cap = (
            f" of {_gb(m.capacity_bytes)} ({m.share:.0%})"
            if m.capacity_bytes and m.share is not None
            else ""
        )
        out.append(
            ("memory", f"peak {_gb(m.peak_bytes)} allocated{cap} on rank {rank_label(m.rank)}")
        )
    unusual = [_triggered_text(t) for t in v.triggered[:3]]
    if len(v.triggered) > 3:
        unusual.append(f"{len(v.triggered) - 3} more triggered captures")
    if v.warmup_steps:
        unusual.append(
            f"warmup step{'s' * (len(v.warmup_steps) > 1)} {ranks_text(v.warmup_steps)} left out"
        )
    if unusual:
        out.append(("unusual", "; ".join(unusual)))
    return out


def _device_lines(d: DeviceVerdict | None, held: list[World]) -> list[tuple[str, str]]:
    """The device line, the time of the classification rules beyond HTA's, and the ranks
    captured of each world size the captures record."""
    out = []
    if d:
        shares = ", ".join(f"{k} {d.shares[k]:.0%}" for k in BOUNDS)
        ms = {
            "compute": d.compute_ms,
            "communication": d.comm_ms,
            "copy": d.copy_ms,
            "idle": d.idle_ms,
        }[d.bound]
        label = "idle (host-bound)" if d.bound == "idle" else f"{d.bound}-bound"
        per = (
            "per step"
            if d.per == "step"
            else "per capture (no steps)"
            if d.ranks > 1 or d.steps > 1
            else "in the capture (no steps)"
        )
        left = (
            f"; captures without steps left out: {', '.join(d.left_out[:3])}"
            f"{f' and {len(d.left_out) - 3} more' if len(d.left_out) > 3 else ''}"
            if d.left_out
            else ""
        )
        out.append(
            (
                "device",
                f"{label}: {d.bound} {ms:,.1f} ms {per}; {shares} "
                f"(communication and copy: not overlapped){left}",
            )
        )
        if d.classified:
            out.append(
                (
                    "classified",
                    "communication found beyond NCCL's names: "
                    + ", ".join(
                        f"{c.rule} {c.ms:,.1f} ms ({c.kernels:,} kernel run"
                        f"{'s' * (c.kernels != 1)})"
                        for c in d.classified
                    ),
                )
            )
    if held:
        out.append(("ranks", worlds_text(held)))
    return out


def _against(g: Straggler) -> str:
    return (
        f"{g.ms:,.1f} ms against {g.median_ms:,.1f} ms on the other ranks ({g.ratio:.1f}x, "
        f"{g.excess_ms:+,.1f} ms)"
    )


def _gb(n: float) -> str:
    return f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.1f} MiB"


def _triggered_text(t: Triggered) -> str:
    what = (
        f"flight dump ({t.reason})"
        if t.trigger == "flight" and t.reason
        else f"{t.trigger.replace('_', '-')} capture"
    )
    held = f", holds steps {ranks_text(t.steps)}" if t.steps else ""
    return f"{what} at step {t.step} on rank {rank_label(t.rank)}{held}"


def throughput_line(stages: list[StageThroughput]) -> str | None:
    """The verdict's ``throughput`` line: ``LINE_STAGES`` stages with tokens (generation and
    training first), tokens/s per rank (the median), the slowest rank where ranks differ, MFU
    where known."""
    parts = []
    named = sorted(
        (s for s in stages if s.tokens_per_s is not None),
        key=lambda s: (s.stage != GENERATE, not is_update(s.stage)),
    )  # generation, then training, first
    for s in named[:LINE_STAGES]:
        text = f"{s.stage} {s.tokens_per_s:,.0f} tok/s per rank"
        if s.ranks > 1 and (s.min_tokens_per_s or 0.0) < (s.max_tokens_per_s or 0.0):
            text += (
                f" (slowest rank {rank_label(s.slowest_rank, s.slowest_source)}: "
                f"{s.min_tokens_per_s or 0.0:,.0f})"
            )
        if s.mfu is not None:
            text += f", MFU {s.mfu:.0%}"
        elif s.mfu_note and s.mfu_note.startswith(OVER_PEAK):
            text += f", MFU not shown: {OVER_PEAK} (check tokens, FLOPs per token, peak)"
        parts.append(text)
    return "; ".join(parts) or None
