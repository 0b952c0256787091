"""The verdict: what ``analyse`` says first, each part a pure function of an ``Analysis``.

- ``step_time``: the step's length (median over steps of the median over ranks) and spread;
- ``slowest``: the stage (or, where no stage was recorded, the custom range) that takes the
  most of a step, and its share (of each rank's own step, its runs merged: never over 100%);
- ``straggler``: the rank furthest behind the other ranks (``stragglers``: against the median
  of the others, above the noise floor), named only when it is behind consistently
  (``stragglers.behind``); else the largest one-off (``one_off``). ``steps``: how many steps the
  verdict rests on (under three, it says so);
- ``device``: what bounds the device (compute, exposed communication, exposed copies, idle) with
  each part's share of the step on the device, from the rows ``device_scope`` counts (captures
  with steps and without are never averaged together), and the time the classification rules
  beyond HTA's gave (DeepEP, NVSHMEM, the user's ``--comm-kernels``...);
- ``worlds``: where captures record their job's world size, how many of its ranks they hold;
- ``memory``: the highest peak against the device's capacity where a capture records it;
- ``throughput``: tokens/s per rank of each stage that counts tokens (``prof.count``), the
  slowest rank, MFU where the model's FLOPs per token and peak are known (``throughput``);
- ``unusual``: captures the job took on its own (``triggered``) and warmup steps left out.

Warmup steps are left out (``Analysis.counted``) of every figure.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.capture_facts import beyond_hta, classified, worlds
from mindspeed_prof.analysis.device_scope import counted, parts, scope
from mindspeed_prof.analysis.next_capture import NextStep, next_steps
from mindspeed_prof.analysis.readers.intervals import covered, length, merge
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import (
    BOUNDS,
    Bound,
    DeviceVerdict,
    MemoryVerdict,
    Row,
    Share,
    StageOrRange,
    StepTime,
    Straggler,
    World,
)
from mindspeed_prof.analysis.stragglers import Behind, behind, noise_floor, step_times
from mindspeed_prof.analysis.throughput import StageThroughput
from mindspeed_prof.analysis.triggered import Triggered, triggered

if TYPE_CHECKING:
    from mindspeed_prof.analysis.result import Analysis

__all__ = [
    "BOUNDS",
    "DeviceVerdict",
    "MemoryVerdict",
    "Share",
    "StepTime",
    "Verdict",
    "bound_of",
    "compute_behind",
    "device",
    "memory",
    "rests_on",
    "slowest",
    "step_time",
    "straggler",
    "verdict",
]


class Verdict(Row, kw_only=True):
    """Every part of the verdict; a part is None where the captures do not hold what it needs."""

    step: StepTime | None = None
    slowest: Share | None = None
    #: The consistent straggler's worst step, and how consistently it is behind.
    straggler: Straggler | None = None
    behind: Behind | None = None
    #: No consistent straggler: the largest one-off (a rank behind in a step or few).
    one_off: Straggler | None = None
    #: The steps the verdict rests on (counted: warmup left out).
    steps: int = 0
    device: DeviceVerdict | None = None
    memory: MemoryVerdict | None = None
    triggered: list[Triggered] = []
    warmup_steps: list[int] = []
    #: World sizes the captures record, and the ranks of each captured.
    worlds: list[World] = []
    #: Per stage with tokens or samples counted: tokens/s per rank, its spread, MFU
    #: (``throughput``).
    throughput: list[StageThroughput] = []
    #: What to run next (``next_capture``).
    next: list[NextStep] = []


def _device_steps(result: Analysis) -> tuple[dict[int, float], set[int | None]]:
    """Per step, the median over ranks of the step on the device (torch_npu's Stage column,
    else the device window), for captures without step ranges; and the ranks counted."""
    per: dict[int, list[float]] = defaultdict(list)
    ranks = set()
    for r in result.device():
        ms = r.step_ms if r.step_ms is not None else r.span_ms
        if (
            r.stage is None
            and r.step is not None
            and ms
            and (result.include_warmup or not r.warmup)
        ):
            per[r.step].append(ms)
            ranks.add(r.rank)
    return {step: statistics.median(v) for step, v in per.items()}, ranks


def step_time(result: Analysis) -> StepTime | None:
    """The step's length and spread over the counted steps: from step ranges, else from the
    device's steps (None: neither)."""
    per_step = step_times(result.counted())
    ranks = {r.rank for r in result.counted() if r.kind == "step"}
    if not per_step:
        per_step, ranks = _device_steps(result)
    if not per_step:
        return None
    ms = list(per_step.values())
    median = statistics.median(ms)
    return StepTime(
        median_ms=median,
        min_ms=min(ms),
        max_ms=max(ms),
        spread=ratio(max(ms) - min(ms), median, 0.0),
        steps=len(ms),
        ranks=len(ranks),
    )


def slowest(result: Analysis, step: StepTime | None) -> Share | None:
    """The stage taking the most of a step; where no stage was recorded (a light capture of
    custom ranges), the custom range taking the most. A name's time in a step is the union of
    its runs (two threads at once count once), cut to the rank's own step where that was
    recorded: its share of that step is never over 100%."""
    ranges = [r for r in result.counted() if r.step is not None]
    # times relative to each step's first start: at epoch microseconds ``ts + dur`` rounds
    first: dict[tuple[int | None, str, int | None], float] = {}
    for r in ranges:
        key = (r.rank, r.source, r.step)
        first[key] = min(first.get(key, r.ts), r.ts)
    boxes: dict[tuple[int | None, str, int | None], tuple[float, float]] = {}
    for r in ranges:
        if r.kind == "step":
            key = (r.rank, r.source, r.step)
            lo = r.ts - first[key]
            a, b = boxes.get(key, (lo, lo + r.dur))
            boxes[key] = (min(a, lo), max(b, lo + r.dur))
    kinds: tuple[StageOrRange, ...] = ("stage", "range")
    for kind in kinds:
        spans: dict[tuple[str, int | None, str, int | None], list[tuple[float, float]]] = (
            defaultdict(list)
        )
        for r in ranges:
            if r.kind == kind:
                lo = r.ts - first[(r.rank, r.source, r.step)]
                spans[(r.name, r.rank, r.source, r.step)].append((lo, lo + r.dur))
        if not spans:
            continue
        per: dict[tuple[str, int | None, str], list[tuple[float, float | None]]] = defaultdict(list)
        for (name, rank, source, n), intervals in spans.items():
            merged, box = merge(intervals), boxes.get((rank, source, n))
            if box is None:
                per[(name, rank, source)].append((length(merged) / 1000.0, None))
            else:
                ms = covered(merged, *box) / 1000.0
                per[(name, rank, source)].append(
                    (ms, ms * 1000.0 / (box[1] - box[0]) if box[1] > box[0] else None)
                )
        names: dict[str, list[tuple[float, float | None, int | None]]] = defaultdict(list)
        for (name, rank, _), runs in per.items():
            shares = [x for _, x in runs if x is not None]
            names[name].append(
                (
                    statistics.fmean(ms for ms, _ in runs),
                    statistics.fmean(shares) if shares else None,
                    rank,
                )
            )
        name, rows = max(
            names.items(), key=lambda kv: (statistics.median(ms for ms, _, _ in kv[1]), kv[0])
        )
        ms = statistics.median(m for m, _, _ in rows)
        top, _, longest = max(rows, key=lambda r: r[0])
        if len(rows) < 2 or top - min(m for m, _, _ in rows) < noise_floor(
            result.noise_ms, step.median_ms if step else None
        ):
            longest = None  # no rank stands out
        shares = [x for _, x, _ in rows if x is not None]
        return Share(
            kind=kind,
            name=name,
            ms=ms,
            rank=longest,
            share=statistics.median(shares) if shares else None,
        )
    return None


def straggler(result: Analysis) -> tuple[Behind | None, Straggler | None]:
    """The rank furthest behind the others, consistently (``stragglers.behind``), at a stage,
    else at a custom range, else (captures without ranges, torch_npu's) in device compute time
    per step: the rank that computes longest is the one the others wait for in their
    collectives. Without one: (None, the largest one-off, stages first)."""
    counted = result.counted()
    found = [
        behind(counted, "stage", result.margin, result.noise_ms),
        behind(counted, "range", result.margin, result.noise_ms),
        compute_behind(result),
    ]
    for rows in found:
        if rows and rows[0].consistent:
            return rows[0], None
    for rows in found:
        if rows:
            return None, max((b.worst for b in rows), key=lambda g: (g.excess_ms, g.ratio))
    return None, None


def compute_behind(result: Analysis) -> list[Behind]:
    """Ranks whose device compute time in a step exceeds the other ranks' median by the
    margin and the noise floor (``kind`` ``device``, ``name`` ``compute``), and how
    consistently (``stragglers.behind``)."""
    steps, _ = _device_steps(result)
    fake = [
        Range(
            rank=r.rank,
            kind="device",
            name="compute",
            step=r.step,
            ts=0.0,
            dur=r.compute_ms * 1000.0,
            source=r.source,
        )
        for r in result.device()
        if r.stage is None and r.step is not None and (result.include_warmup or not r.warmup)
    ]
    fake += [
        Range(rank=None, kind="step", name="step", step=step, ts=0.0, dur=ms * 1000.0)
        for step, ms in steps.items()
    ]  # the step length, for the noise floor's share
    return behind(fake, "device", result.margin, result.noise_ms)


def rests_on(result: Analysis, step: StepTime | None) -> int:
    """How many steps the verdict rests on: those counted (steps, else stages, else the
    device's steps)."""
    steps = {r.step for r in result.counted() if r.kind in ("step", "stage") and r.step is not None}
    return len(steps) or (step.steps if step else 0)


def bound_of(compute: float, comm: float, copy: float, idle: float) -> Bound:
    """The largest part of the step on the device (ties: the first of ``BOUNDS``)."""
    parts = dict(zip(BOUNDS, (compute, comm, copy, idle)))
    return max(BOUNDS, key=lambda k: (parts[k], -BOUNDS.index(k)))


def device(result: Analysis) -> DeviceVerdict | None:
    """The device split of the rows ``device_scope.counted`` gives (whole steps, warmup and work
    outside steps left out; where no capture has steps, whole captures), averaged."""
    within = scope(result)
    rows = counted(result, within)
    if not rows:
        return None
    sums = dict.fromkeys(BOUNDS, 0.0)
    for r in rows:
        for k, ms in parts(r).items():
            sums[k] += ms
    n = len(rows)
    total = sum(sums.values())
    shares: dict[str, float] = {k: ratio(v, total, 0.0) for k, v in sums.items()}
    return DeviceVerdict(
        bound=bound_of(*(sums[k] for k in BOUNDS)),
        compute_ms=sums["compute"] / n,
        comm_ms=sums["communication"] / n,
        copy_ms=sums["copy"] / n,
        idle_ms=sums["idle"] / n,
        shares=shares,
        ranks=len({(r.rank, r.source) for r in rows}),
        steps=len({r.step for r in rows if r.step is not None}),
        per=within.per,
        left_out=[result.shown(str(t.path)) for t in within.left_out],
        classified=beyond_hta(classified(result.traces)),
    )


def memory(result: Analysis) -> MemoryVerdict | None:
    """The highest whole-capture peak, against the capacity its trace records; of equal peaks,
    the lowest rank's (never the order the captures were found in)."""
    best: MemoryVerdict | None = None
    capacity: dict[int | None, float | None] = {
        t.rank: t.meta.device_memory_bytes for t in result.traces
    }
    for row in sorted(result.memory(), key=lambda r: (rank_order(r.rank), r.source)):
        peak = row.peak_allocated_bytes
        if row.stage is not None or peak is None or (best and peak <= best.peak_bytes):
            continue
        cap = capacity.get(row.rank)
        cap = float(cap) if isinstance(cap, (int, float)) and cap > 0 else None
        best = MemoryVerdict(
            rank=row.rank,
            peak_bytes=peak,
            capacity_bytes=cap,
            share=ratio(peak, cap, None) if cap else None,
        )
    return best


def verdict(result: Analysis) -> Verdict:
    """Every part of the verdict of ``result``."""
    step = step_time(result)
    lag, one_off = straggler(result)
    out = Verdict(
        step=step,
        slowest=slowest(result, step),
        straggler=lag.worst if lag else None,
        behind=lag,
        one_off=one_off,
        steps=rests_on(result, step),
        device=device(result),
        memory=memory(result),
        triggered=triggered(result),
        warmup_steps=sorted({s for _, s in result.warmup()}),
        worlds=worlds(result.traces),
        throughput=result.throughput_stages(),
    )
    out.next = next_steps(result, out.straggler, out.slowest, out.device)
    return out
