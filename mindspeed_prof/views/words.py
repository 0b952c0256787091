"""The sentences the text and HTML views share: what they say in words where the analysis gives
typed values (one place, so the two views say the same)."""

from __future__ import annotations

from mindspeed_prof.analysis.capture_facts import worlds_text
from mindspeed_prof.analysis.counts import GENERATE, is_update
from mindspeed_prof.analysis.findings.common import duration
from mindspeed_prof.analysis.judgement.causes import Cause
from mindspeed_prof.analysis.judgement.gating import StepTime
from mindspeed_prof.analysis.judgement.noise import MIN_STEPS
from mindspeed_prof.analysis.judgement.where import Phases, Share
from mindspeed_prof.analysis.readers.events import UNREAD_DEVICE
from mindspeed_prof.analysis.readers.labels import rank_label, ranks_text
from mindspeed_prof.analysis.rows import BOUNDS, DeviceVerdict, Straggler, World
from mindspeed_prof.analysis.throughput import OVER_PEAK, StageThroughput
from mindspeed_prof.analysis.triggered import Triggered
from mindspeed_prof.analysis.verdict import Verdict

__all__ = [
    "CAUSE_WORDS",
    "LINE_CAUSES",
    "LINE_STAGES",
    "causes_text",
    "phases_text",
    "no_device_text",
    "slowest_text",
    "step_text",
    "throughput_line",
    "verdict_lines",
]

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
        out.append(("step", step_text(v.step)))
    if v.slowest:
        out.append(("slowest", slowest_text(v.slowest)))
    rests = (
        f"; the verdict rests on {v.steps} step{'s' * (v.steps != 1)}" if 0 < v.steps < 3 else ""
    )
    if v.straggler and v.behind:
        g, b = v.straggler, v.behind
        out.append(
            (
                "straggler",
                f"rank {rank_label(g.rank, g.source)} at {_at(g.kind, g.name)}: "
                f"{b.lag_ms:+,.1f} ms a step (median of {b.compared} steps, behind in "
                f"{b.behind}; noise {b.noise_ms:,.1f} ms); worst, step {g.step}: "
                f"{_against(g)}{rests}",
            )
        )
    elif v.one_off and 0 < v.steps < MIN_STEPS:
        # too few steps to tell a straggler from a one-off: the rank behind, as such
        g = v.one_off
        out.append(
            (
                "straggler",
                f"none named on {v.steps} step{'s' * (v.steps != 1)} (a straggler needs "
                f"{MIN_STEPS}; furthest behind: rank {rank_label(g.rank, g.source)} at "
                f"{_at(g.kind, g.name)}, step {g.step}: {_against(g)})",
            )
        )
    elif v.one_off:
        g = v.one_off
        out.append(
            (
                "straggler",
                f"no consistent straggler (largest one-off: rank "
                f"{rank_label(g.rank, g.source)} at {_at(g.kind, g.name)}, step {g.step}: "
                f"{_against(g)}){rests}",
            )
        )
    elif v.step and v.step.ranks > 1:
        out.append(
            ("straggler", f"none (no rank behind the others by more than the noise floor){rests}")
        )
    if v.phases and (v.phases.transition_ms or v.phases.generation_ms):
        out.append(("phases", phases_text(v.phases)))
    if v.causes:
        out.append(("causes", causes_text(v.causes)))
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
        peak = (
            f"peak {_gb(m.peak_bytes)} allocated{cap} on rank {rank_label(m.rank)}"
            if m.peak_bytes
            else ""
        )
        out.append(("memory", "; ".join(filter(None, (peak, m.growth)))))
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


#: The causes line names at most this many.
LINE_CAUSES = 3
#: A cause in a few words, per rule (others: the rule's name).
CAUSE_WORDS = {
    "ranks.straggler": "a rank behind",
    "rl.growing_stage": "a stage growing",
    "rl.dropped": "samples dropped",
    "rl.zero_variance": "zero-variance groups",
    "rl.truncated": "truncated responses",
    "rl.long_tail": "long tail of responses",
    "rl.generation_tail": "generation waiting",
    "rl.uncovered": "time no stage covers",
    "rl.role_imbalance": "a role behind",
    "rl.transitions": "transitions",
    "cuda.idle_time": "device idle",
    "cuda.launch_overhead": "launch overhead",
    "cuda.exposed_comm": "exposed communication",
    "host.no_op": "host time outside operators",
}


def step_text(s: StepTime) -> str:
    """The step line: the step the job lived (its slowest rank's), over steps and ranks."""
    if s.ranks < 2:
        on = "1 rank"
        ranks = ""
    else:
        on = f"{s.ranks} ranks, each step its slowest rank's"
        gated = f"{s.gated} of {s.steps}" if s.steps > 1 else "it"
        every = "every step" if s.steps > 1 else "the step"
        if s.gated_by is not None:
            who = f"rank {rank_label(s.gated_by, s.gated_source)} slowest in {gated}"
        elif s.gated < s.steps:
            who = f"ranks take turns as the slowest ({s.tied} ranks in {gated} each)"
        elif s.tied == s.ranks:
            who = f"every rank as slow in {every}"
        else:
            who = f"{s.tied} ranks tie as the slowest in {every}"
        fastest = f", the fastest rank's step {s.fastest_ms or 0.0:,.1f} ms"
        ranks = f"; {who}{fastest if s.tied < s.ranks or s.gated < s.steps else ''}"
    if s.steps == 1:
        return f"{s.median_ms:,.1f} ms (1 step on {on}){ranks}"
    return (
        f"{s.median_ms:,.1f} ms (median of {s.steps} steps on {on}; "
        f"{s.min_ms:,.1f}-{s.max_ms:,.1f} ms, spread {s.spread:.0%}){ranks}"
    )


def slowest_text(w: Share) -> str:
    """The slowest line: the stage (or range, by self time) on its slowest rank, its share of
    the step the job lived, the other ranks beside it."""
    own = " self time" if w.kind == "range" else ""
    on = " on its slowest rank" if w.others_ms is not None else ""
    share = f" ({w.share:.0%} of the step)" if w.share is not None else ""
    others = f"; {w.others_ms:,.1f} ms on the other ranks" if w.others_ms is not None else ""
    behind = f", rank {rank_label(w.rank)} behind" if w.rank is not None else ""
    inside = f", inside range {w.within}" if w.within else ""
    return f"{w.kind} {w.name}: {w.ms:,.1f} ms{own} per step{on}{share}{others}{behind}{inside}"


def phases_text(p: Phases) -> str:
    """The phases line: the step the job lived split into generation, training and the
    transitions between them (the largest named), each its ms and share."""

    def part(name: str, ms: float) -> str:
        return f"{name} {ms:,.1f} ms ({ms / p.step_ms:.0%})" if p.step_ms else f"{name} {ms:,.1f}"

    parts = [part("generation", p.generation_ms), part("training", p.training_ms)]
    if p.transition_ms:
        top = f", most {p.top_transition} {p.top_ms:,.1f} ms" if p.top_transition else ""
        parts.append(part("transitions", p.transition_ms) + top)
    rest = p.other_ms + p.uncovered_ms
    if rest:
        parts.append(part("other", rest))
    return "; ".join(parts) + f" (the median step's, its slowest rank's, of {p.steps})"


def causes_text(causes: list[Cause]) -> str:
    """The causes line: the first ``LINE_CAUSES`` causes, most costly first, each its cost per
    step and share of the step."""
    parts = []
    for c in causes[:LINE_CAUSES]:
        at = " (most {})" if c.rule == "rl.transitions" else " at {}"
        where = at.format(c.stage) if c.stage else ""
        share = f", {c.share:.0%} of the step" if c.share is not None else ""
        if c.rule == "ranks.straggler" and c.rank is not None:
            words = f"rank {rank_label(c.rank)} behind{where}"
        else:
            who = f" (rank {rank_label(c.rank)})" if c.rank is not None else ""
            words = f"{CAUSE_WORDS.get(c.rule, c.rule)}{where}{who}"
        parts.append(f"{words}: {duration(c.cost_ms)} per step{share}")
    more = len(causes) - LINE_CAUSES
    return "; ".join(parts) + (f"; {more} more in the findings" if more > 0 else "")


def _at(kind: str, name: str) -> str:
    return "device compute" if kind == "device" else f"{kind} {name}"


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
