"""``rl.uncovered``: time in a step that no stage covers (weight sync, resharding, data
dispatch): the step's length less the union of its stages, per rank, the time at least half
its steps spent there (the low median: what recurs; a rank descheduled between two stages in
a step or two is not a cost per step, and a cost paid every other step or less often is not
one either)."""

from __future__ import annotations

from array import array
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding, of_ranks, steps_text
from mindspeed_prof.analysis.findings.rl.steps import Who, steps_by_rank, who_order, who_text
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.readers.intervals import merge
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["uncovered"]


@dataclass
class _Piece:
    """Stages that overlap, as one span (us): the stage it starts with and the one that ends
    it."""

    start: float
    end: float
    first: str
    last: str


def _gaps(step: Range, stages: list[Range]) -> tuple[float, dict[str, float]]:
    """The step's time (us) in no stage, and where it lies: ``before X``, ``between X and
    Y``, ``after Y`` (X, Y the stages either side)."""
    lo, hi = step.ts, step.ts + step.dur
    spans = sorted(
        (max(r.ts, lo), min(r.ts + r.dur, hi), r.name)
        for r in stages
        if r.ts < hi and r.ts + r.dur > lo
    )
    pieces: list[_Piece] = []
    for a, b, name in spans:
        if pieces and a <= pieces[-1].end:
            if b > pieces[-1].end:
                pieces[-1].end, pieces[-1].last = b, name
        else:
            pieces.append(_Piece(a, b, name, name))
    where: dict[str, float] = defaultdict(float)
    if not pieces:
        return step.dur, {"in the step": step.dur}
    if pieces[0].start > lo:
        where[f"before {pieces[0].first}"] += pieces[0].start - lo
    for prev, nxt in zip(pieces, pieces[1:]):
        where[f"between {prev.last} and {nxt.first}"] += nxt.start - prev.end
    if hi > pieces[-1].end:
        where[f"after {pieces[-1].last}"] += hi - pieces[-1].end
    covered = sum(b - a for a, b in merge([(p.start, p.end) for p in pieces]))
    return step.dur - covered, dict(where)


def _low_median(values: array[float], n: int) -> float:
    """The low median of ``values`` and ``n - len(values)`` zeros (steps without them): the
    most that at least half of ``n`` steps spent (``statistics.median_low``)."""
    import numpy as np

    a = np.zeros(n)
    a[n - len(values) :] = np.frombuffer(values, dtype=np.float64)
    k = (n - 1) // 2
    return float(np.partition(a, k)[k])


def uncovered(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Per rank, the time in a step that none of its stages covers (the low median over its
    steps), where it is over the noise floor: weight sync, resharding, data dispatch and
    collection run there. Each place's time is its own low median over the steps."""
    hits: list[tuple[float, Who, float, dict[str, float], list[int]]] = []
    for who, steps in steps_by_rank(tables):  # a step's ranges made as it is read
        left, durs = array("d"), array("d")
        places: dict[str, array[float]] = defaultdict(lambda: array("d"))  # where it was
        kept: list[int] = []
        for k, s in steps:
            if s.step is None or not s.stages:
                continue
            us, where = _gaps(s.step, s.stages)
            left.append(us)
            for part, v in where.items():
                places[part].append(v)
            durs.append(s.step.dur)
            kept.append(k)
        if not kept:
            continue
        # what at least half the steps spent: a stall in a step or two moves neither
        n = len(kept)
        ms = _low_median(left, n) / 1000.0
        step_ms = _low_median(durs, n) / 1000.0
        if step_ms > 0 and ms >= noise_floor(settings.noise_ms, step_ms):
            gaps = {part: _low_median(v, n) / 1000.0 for part, v in places.items()}
            hits.append((ms, who, step_ms, gaps, kept))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], who_order(h[1])))
    ms, _, step_ms, gaps, _ = hits[0]
    place, place_ms = max(gaps.items(), key=lambda kv: (kv[1], kv[0]))
    lines = []
    for m, w, s_ms, g, st in hits:
        parts = ", ".join(
            f"{k} {v:,.1f}" for k, v in sorted(g.items(), key=lambda kv: -kv[1]) if v > 0
        )
        lines.append(
            f"{who_text(w)}: {m:,.1f} of {s_ms:,.1f} ms per step ({steps_text(st)}) in "
            f"no stage: {parts} ms"
        )
    share = ratio(ms, step_ms, 0.0)
    held = [h[1] for h in hits]
    return [
        finding(
            captures,
            tables,
            settings,
            held,
            rule="rl.uncovered",
            title=f"{ms:,.1f} ms per step ({share:.0%} of the step) is in no stage on "
            f"{of_ranks(held)}: most {place} ({place_ms:,.1f} ms)",
            detail=detail(lines, "the step's own range less the union of its stage ranges"),
            suggestion="Name what runs there (weight sync to the rollout engine, resharding, "
            "data dispatch and collection, logging): wrap it in mstx.range or record it "
            "as a stage, then shrink or overlap it (bucketed or colocated weight sync, "
            "asynchronous dispatch).",
            share=share,
            impact_ms=ms,
        )
    ]
