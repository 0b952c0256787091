"""Where the time goes: the stage (or, where no stage was recorded, the custom range by its
self time) that takes the most of a step on its slowest rank, and its share of the step the
job lived (its slowest rank's); and that step split into generation, training and the
transitions between them (``phases``). Times in a step are each rank's own, the runs of one name
merged (two threads at once count once) and cut to the rank's step where that was recorded:
a share is never over 100%."""

from __future__ import annotations

import statistics
from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence

from mindspeed_prof.analysis.judgement.cells import CellCols, Cells
from mindspeed_prof.analysis.judgement.judge import step_gates
from mindspeed_prof.analysis.judgement.lag import Lag
from mindspeed_prof.analysis.judgement.spans import StageCols, stage_cols
from mindspeed_prof.analysis.phases import PhaseRow
from mindspeed_prof.analysis.ranges import nesting
from mindspeed_prof.analysis.readers.intervals import Interval, covered, length, merge
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_cols import columns, distinct
from mindspeed_prof.analysis.readers.range_table import of_kind, stepped
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Row, StageOrRange

__all__ = ["Phases", "Share", "phases", "range_cells", "slowest", "stage_cells"]


class Share(Row, kw_only=True):
    """Where the time goes: a stage (``kind`` ``stage``; its time in a step) or, where no stage
    was recorded, a custom range (``range``; its self time in a step, the ranges nested in it
    left out). ``ms``: the median over steps of its time on its slowest rank in that step;
    ``share``: the median over steps of that against the step the job lived (its slowest
    rank's; None: no step ranges); ``others_ms``: the same for the other ranks' median (None:
    one rank); ``rank``: the rank named behind the others there (``judgement.lag``; None:
    none is); ``within``: for a range, the range it mostly ran in (None: none)."""

    kind: StageOrRange
    name: str
    ms: float
    share: float | None
    rank: int | None
    others_ms: float | None = None
    within: str | None = None


Key = tuple[int | None, str, int | None]  # rank, source, step


def _boxes(ranges: Sequence[Range]) -> tuple[dict[Key, float], dict[Key, tuple[float, float]]]:
    """Each rank's step's first start (times are taken from it: at epoch microseconds ``ts +
    dur`` rounds) and its step range's box relative to it."""
    first: dict[Key, float] = {}
    c = columns(ranges)
    for rank, source, step, ts in c.rows("ranks", "sources", "steps", "ts"):
        key = (rank, source, step)
        at = first.get(key)
        if at is None or ts < at:  # as ``min``: the earlier start, the first of equal ones
            first[key] = ts
    boxes: dict[Key, tuple[float, float]] = {}
    s = columns(ranges, "step")
    for rank, source, step, ts, dur in s.rows("ranks", "sources", "steps", "ts", "dur"):
        key = (rank, source, step)
        lo = ts - first[key]
        a, b = boxes.get(key, (lo, lo + dur))
        boxes[key] = (min(a, lo), max(b, lo + dur))
    return first, boxes


def _cells(
    spans: dict[tuple[str, Key], list[Interval]], boxes: dict[Key, tuple[float, float]]
) -> dict[str, Cells]:
    out: dict[str, Cells] = defaultdict(lambda: defaultdict(dict))
    for (name, key), intervals in spans.items():
        merged, box = merge(intervals), boxes.get(key)
        ms = (length(merged) if box is None else covered(merged, *box)) / 1000.0
        if key[2] is not None:
            out[name][key[2]][(key[0], key[1])] = ms
    return out


class _StageCells(Mapping[str, Cells]):
    """``_cells`` of each stage's spans, made when the stage is read: in between, its spans are
    columns (a step's key, start and end: 24 bytes a run), not an interval per run and a dict
    per step for every stage at once (a range file runs each stage in each of many steps).
    Stages, steps and their runs come in the order of the ranges, as ``_cells``'s."""

    def __init__(self, boxes: dict[Key, tuple[float, float]]) -> None:
        self.boxes = boxes
        self.index: dict[Key, int] = {}
        self.cols: dict[str, tuple[array[int], array[float], array[float]]] = {}

    def add(self, name: str, key: Key, lo: float, hi: float) -> None:
        col = self.cols.get(name)
        if col is None:
            col = self.cols[name] = (array("q"), array("d"), array("d"))
        col[0].append(self.index.setdefault(key, len(self.index)))
        col[1].append(lo)
        col[2].append(hi)

    def __getitem__(self, name: str) -> Cells:
        keys = list(self.index)
        spans: dict[tuple[str, Key], list[Interval]] = defaultdict(list)
        for k, lo, hi in zip(*self.cols[name]):
            spans[(name, keys[k])].append((lo, hi))
        return _cells(spans, self.boxes).get(name, {})

    def __iter__(self) -> Iterator[str]:
        return iter(self.cols)

    def __len__(self) -> int:
        return len(self.cols)


def stage_cells(ranges: Sequence[Range]) -> Mapping[str, Cells]:
    """Per stage, its time per step and rank (each stage's made when it is read): as columns
    (``spans``) where they give the same floats."""
    cols = stage_cols(ranges)
    if cols is not None:
        return cols
    first, boxes = _boxes(ranges)
    out = _StageCells(boxes)
    c = columns(ranges, "stage")
    for name, rank, source, step, ts, dur in c.rows(
        "names", "ranks", "sources", "steps", "ts", "dur"
    ):
        key = (rank, source, step)
        lo = ts - first[key]
        out.add(name, key, lo, lo + dur)
    return out


def _less(lo: float, hi: float, cuts: list[Interval]) -> list[Interval]:
    """``[lo, hi]`` less the merged ``cuts``."""
    out, at = [], lo
    for a, b in cuts:
        if a > at:
            out.append((at, min(a, hi)))
        at = max(at, b)
        if at >= hi:
            break
    if at < hi:
        out.append((at, hi))
    return out


def range_cells(ranges: Sequence[Range]) -> tuple[dict[str, Cells], dict[str, dict[str, float]]]:
    """Per custom range, its self time per step and rank (the ranges nested in it on its
    thread left out), and the ranges each ran in (by the time it spent in them)."""
    first, boxes = _boxes(ranges)
    custom = stepped(of_kind(ranges, "range"))
    children: dict[int, list[int]] = defaultdict(list)
    within: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for p, c in nesting(custom):
        children[p].append(c)
        if custom[p].name != custom[c].name:
            within[custom[c].name][custom[p].name] += custom[c].dur
    spans: dict[tuple[str, Key], list[Interval]] = defaultdict(list)
    for i, r in enumerate(custom):
        key = (r.rank, r.source, r.step)
        base = first[key]
        cuts = merge(
            [(custom[c].ts - base, custom[c].ts - base + custom[c].dur) for c in children[i]]
        )
        spans[(r.name, key)] += _less(r.ts - base, r.ts - base + r.dur, cuts)
    return _cells(spans, boxes), within


def _named(lags: Sequence[Lag], kind: str, name: str) -> int | None:
    for g in lags:
        if g.consistent and g.kind == kind and g.name == name:
            return g.rank
    return None


def _top(
    cells: Cells | CellCols, gates: dict[int, float]
) -> tuple[float, float | None, float | None] | None:
    """A row's time on its slowest rank (the median over steps), its share of the step and
    the other ranks' median; None without steps. Columns: the slowest rank's per step in
    numpy, a dict per step only where two ranks ran it."""
    if isinstance(cells, CellCols):
        import numpy as np

        codes = distinct(cells.step)
        top = np.full(len(cells.steps) or 1, -np.inf)
        np.maximum.at(top, cells.step, cells.ms)
        per = zip([cells.steps[k] for k in codes.tolist()], top[codes].tolist())
        most = []
        shares = []
        for s, ms in per:
            most.append(ms)
            if s in gates:
                shares.append(ratio(ms, gates[s], 0.0))
        multi = cells.multi().cells()
    else:
        most = [max(by.values()) for by in cells.values() if by]
        shares = [ratio(max(by.values()), gates[s], 0.0) for s, by in cells.items() if s in gates]
        multi = cells
    if not most:
        return None
    others = [statistics.median(sorted(by.values())[:-1]) for by in multi.values() if len(by) > 1]
    return (
        statistics.median(most),
        statistics.median(shares) if shares else None,
        statistics.median(others) if others else None,
    )


def slowest(counted: Sequence[Range], lags: Sequence[Lag] = ()) -> Share | None:
    """The stage taking the most of a step on its slowest rank; where no stage was recorded
    (a light capture of custom ranges), the custom range with the most self time, and the
    range it mostly ran in. Its share is of the step the job lived, each step's own."""
    ranges = stepped(counted)
    gates = step_gates(ranges)
    stages = stage_cells(ranges)
    rows, within = (stages, {}) if stages else range_cells(ranges)
    kind: StageOrRange = "stage" if stages else "range"
    if not rows:
        return None
    tops: dict[str, tuple[float, float | None, float | None]] = {}
    for name in rows:
        top = _top(rows.cols(name) if isinstance(rows, StageCols) else rows[name], gates)
        if top is not None:
            tops[name] = top
    if not tops:
        return None
    name = max(tops, key=lambda n: (tops[n][0], n))
    ms, share, others_ms = tops[name]
    context = within.get(name)
    return Share(
        kind=kind,
        name=name,
        ms=ms,
        share=share,
        rank=_named(lags, kind, name),
        others_ms=others_ms,
        within=max(context, key=lambda p: (context[p], p)) if context else None,
    )


class Phases(Row, kw_only=True):
    """The RL step split into its parts on the rank that gates each step, the median over the
    counted steps (ms): ``generation_ms``, ``training_ms``, ``transition_ms`` (its largest,
    ``top_transition``, with ``top_ms``), ``other_ms`` (stages of no phase) and
    ``uncovered_ms`` (no stage), of ``step_ms``; ``steps`` they rest on."""

    step_ms: float
    generation_ms: float
    training_ms: float
    transition_ms: float
    other_ms: float
    uncovered_ms: float
    top_transition: str | None = None
    top_ms: float = 0.0
    steps: int


def phases(rows: Sequence[PhaseRow], include_warmup: bool = False) -> Phases | None:
    """The parts of the step the job lived (``phases.PhaseRow`` of its gating rank in each
    step), None where no stage of a known phase ran."""
    by_step: dict[int, PhaseRow] = {}
    for r in rows:
        if (include_warmup or not r.warmup) and (
            r.step not in by_step or r.step_ms > by_step[r.step].step_ms
        ):
            by_step[r.step] = r
    gated = list(by_step.values())
    if not gated or not any(r.generation_ms or r.training_ms or r.transition_ms for r in gated):
        return None
    names = {n for r in gated for n in r.transitions}
    per = {n: statistics.median(r.transitions.get(n, 0.0) for r in gated) for n in names}
    top = max(per, key=lambda n: (per[n], n)) if per else None
    return Phases(
        step_ms=statistics.median(r.step_ms for r in gated),
        generation_ms=statistics.median(r.generation_ms for r in gated),
        training_ms=statistics.median(r.training_ms for r in gated),
        transition_ms=statistics.median(r.transition_ms for r in gated),
        other_ms=statistics.median(r.other_ms for r in gated),
        uncovered_ms=statistics.median(r.uncovered_ms for r in gated),
        top_transition=top,
        top_ms=per[top] if top else 0.0,
        steps=len(gated),
    )
