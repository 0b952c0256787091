"""``rl.transitions``: a transition between generation and training (weight sync, resharding,
offload and onload, the engine's sleep and wake) that takes a large share of the step, with the
knobs that move it."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding, of_ranks, steps_text
from mindspeed_prof.analysis.findings.rl.steps import Who, who_order, who_text
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.config.schema import TRANSITIONS, WEIGHT_SYNC_PARTS

if TYPE_CHECKING:
    from mindspeed_prof.analysis.phases import PhaseRow
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["KNOBS", "TRANSITION_SHARE", "transitions"]

#: A transition is named when it takes at least this share of its rank's median step (and
#: the noise floor).
TRANSITION_SHARE = 0.10

#: What moves each transition, in verl's keys where it has one.
KNOBS: dict[str, str] = {
    "weight_sync": "weight sync: colocated placement (actor and rollout on the same devices, "
    "verl's actor_rollout_ref.hybrid_engine: true) moves weights through device memory where "
    "separate placement sends them over the network; a larger bucket (actor_rollout_ref."
    "rollout.checkpoint_engine.update_weights_bucket_megabytes) makes fewer, larger transfers",
    "reshard": "resharding: the same tensor-parallel size for training and rollout leaves "
    "nothing to regather; else reshard once per sync, bucketed, not per tensor",
    "offload": "offload: offload less (verl's fsdp_config.param_offload, optimizer_offload; "
    "the reference model's param_offload) where memory allows, or place the roles apart so "
    "nothing has to leave the device",
    "onload": "onload: as offload, the same settings bring it back: offload less, or place "
    "the roles apart",
    "engine_sleep": "engine sleep: keep the rollout engine's KV cache between steps where "
    "memory allows (verl's actor_rollout_ref.rollout.free_cache_engine: false), or place the "
    "engine apart from training",
    "engine_wake": "engine wake: as engine sleep (free_cache_engine), and onload the weights "
    "bucketed; separate placement has no wake at all",
}


class _Rank:
    """One rank's counted steps: the median ms per step of each transition and of the step
    (as the verdict's phases line reads them), and the mean of each weight-sync part."""

    def __init__(self, who: Who, rows: list[PhaseRow], parts: dict[str, float]) -> None:
        self.who = who
        self.steps = [r.step for r in rows]
        self.step_ms = statistics.median(r.step_ms for r in rows)
        self.total = statistics.median(r.transition_ms for r in rows)
        self.ms = {
            name: statistics.median(r.transitions.get(name, 0.0) for r in rows)
            for name in TRANSITIONS
        }
        self.parts = {k: v / len(rows) for k, v in parts.items()}

    def named(self, floor: float) -> dict[str, float]:
        """The transitions over ``TRANSITION_SHARE`` of the step and the noise floor."""
        return {
            n: ms
            for n, ms in self.ms.items()
            if ms >= floor and ratio(ms, self.step_ms, 0.0) >= TRANSITION_SHARE
        }


def _parts(captures: Captures, tables: Tables, settings: Settings) -> dict[Who, dict[str, float]]:
    """Per rank, each weight-sync part's ms summed over its steps (custom ranges)."""
    out: dict[Who, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    cols = columns(tables.counted, "range", stepped=True)
    for name, rank, source, dur in cols.rows("names", "ranks", "sources", "dur"):
        if name in WEIGHT_SYNC_PARTS:
            out[(rank, source)][name] += dur / 1000.0
    return out


def _line(x: _Rank, names: dict[str, float]) -> str:
    each = []
    for n, ms in sorted(names.items(), key=lambda kv: (-kv[1], kv[0])):
        inner = ""
        if n == "weight_sync" and x.parts:
            inner = "; " + ", ".join(
                f"{p} {x.parts[p]:,.1f}" for p in WEIGHT_SYNC_PARTS if p in x.parts
            )
        each.append(f"{n} {ms:,.1f} ms ({ratio(ms, x.step_ms, 0.0):.0%}{inner})")
    return (
        f"{who_text(x.who)}: {', '.join(each)} of {x.step_ms:,.1f} ms per step "
        f"({steps_text(x.steps)})"
    )


def transitions(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Ranks on which a transition takes ``TRANSITION_SHARE`` of the mean step or more (and
    the noise floor), from the step's split into its phases (``Tables.phases``)."""
    rows: dict[Who, list[PhaseRow]] = defaultdict(list)
    for r in tables.phases:
        if not r.warmup or settings.include_warmup:
            rows[(r.rank, r.source)].append(r)
    parts = _parts(captures, tables, settings)
    hits: list[tuple[float, _Rank, dict[str, float]]] = []
    for who, mine in rows.items():
        x = _Rank(who, mine, parts.get(who, {}))
        named = x.named(noise_floor(settings.noise_ms, x.step_ms))
        if named:
            hits.append((x.total, x, named))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], who_order(h[1].who)))
    ms, top, named = hits[0]
    share = ratio(ms, top.step_ms, 0.0)
    biggest = max(named, key=lambda n: (named[n], n))
    knobs = sorted({n for _, _, nm in hits for n in nm}, key=TRANSITIONS.index)
    held = [h[1].who for h in hits]
    return [
        finding(
            captures,
            tables,
            settings,
            held,
            rule="rl.transitions",
            title=f"transitions take {ms:,.1f} ms per step ({share:.0%} of the step) on "
            f"{of_ranks(held)}: most {biggest} ({named[biggest]:,.1f} ms, "
            f"{ratio(named[biggest], top.step_ms, 0.0):.0%})",
            detail=detail(
                [_line(x, nm) for _, x, nm in hits],
                "each transition's stage ranges per step (overlaps counted once), the median "
                f"over the counted steps; named from {TRANSITION_SHARE:.0%} of the step",
            ),
            suggestion="Shrink or hide the transitions: "
            + "; ".join(KNOBS[n] for n in knobs)
            + ".",
            share=share,
            impact_ms=ms,
            what="transition stage ranges",
            stage=biggest,
        )
    ]
