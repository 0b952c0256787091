"""The verdict: what ``analyse`` says first, each part a pure function of the captures, their
tables, the settings and the findings.

- ``step_time``: the step as the job lived it: each step its slowest rank's (every rank waits
  for it), the median over steps, the spread over steps and over ranks, the rank that gated
  most steps (``judgement.gating``);
- ``slowest``: the stage (or, where no stage was recorded, the custom range by its self time,
  with the range it ran in) that takes the most of a step on its slowest rank, and its share
  of the step the job lived (never over 100%);
- ``straggler``: the rank named behind the others (``judgement.lag``: a consistent lag that
  clears the row's noise), or, where none is, the largest one-off; ``steps``: how many steps
  the verdict rests on (under three, it says so);
- ``phases``: the step the job lived split into generation, training (log-probs, values,
  updates), the transitions between them (weight sync, resharding, offload and onload, the
  engine's sleep and wake), other stages and time no stage covers (``judgement.where``);
- ``causes``: the findings that cost time, ranked by the milliseconds per step each costs
  (``judgement.causes``); Next acts on the first;
- ``device``: what bounds the device (compute, exposed communication, exposed copies, idle)
  with each part's share of the step on the device, from the rows ``device_scope`` counts
  (captures with steps and without are never averaged together), and the time the
  classification rules beyond HTA's gave (DeepEP, NVSHMEM, the user's ``--comm-kernels``...);
- ``worlds``: where captures record their job's world size, how many of its ranks they hold;
- ``memory``: the highest peak against the device's capacity where a capture records it;
- ``throughput``: tokens/s per rank of each stage that counts tokens (``prof.count``), the
  slowest rank, MFU where the model's FLOPs per token and peak are known (``throughput``);
- ``unusual``: captures the job took on its own (``triggered``) and warmup steps left out.

Warmup steps are left out (``Tables.counted``) of every figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from mindspeed_prof.analysis.capture_facts import beyond_hta, classified, worlds
from mindspeed_prof.analysis.device_scope import counted, parts, scope
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.judgement.causes import Cause, causes
from mindspeed_prof.analysis.judgement.cells import who_order
from mindspeed_prof.analysis.judgement.gating import StepTime
from mindspeed_prof.analysis.judgement.lag import Lag, is_wait
from mindspeed_prof.analysis.judgement.where import Phases, Share, phases, slowest
from mindspeed_prof.analysis.next_capture import NextStep, next_steps
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.range_cols import steps_in
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import (
    BOUNDS,
    Bound,
    DeviceVerdict,
    MemoryVerdict,
    Row,
    Straggler,
    World,
)
from mindspeed_prof.analysis.throughput import StageThroughput
from mindspeed_prof.analysis.triggered import Triggered

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "BOUNDS",
    "DeviceVerdict",
    "MemoryVerdict",
    "Share",
    "StepTime",
    "Verdict",
    "bound_of",
    "device",
    "memory",
    "named",
    "rests_on",
    "slowest",
    "straggler",
    "verdict",
]


class Verdict(Row, kw_only=True):
    """Every part of the verdict; a part is None where the captures do not hold what it needs."""

    step: StepTime | None = None
    slowest: Share | None = None
    #: The rank named behind the others: its worst step, and its lag over the steps.
    straggler: Straggler | None = None
    behind: Lag | None = None
    #: No rank named: the largest one-off (a rank behind in a step or few).
    one_off: Straggler | None = None
    #: The steps the verdict rests on (counted: warmup left out).
    steps: int = 0
    #: The step split into generation, training and the transitions between them.
    phases: Phases | None = None
    #: The findings that cost time, most per step first (``judgement.causes``).
    causes: list[Cause] = []
    device: DeviceVerdict | None = None
    memory: MemoryVerdict | None = None
    triggered: list[Triggered] = []
    warmup_steps: list[int] = []
    #: World sizes the captures record, and the ranks of each captured.
    worlds: list[World] = []
    #: Per stage with tokens or samples counted: tokens/s per rank, its spread, MFU
    #: (``throughput``).
    throughput: list[StageThroughput] = []
    #: What to run next (``next_capture``): for the first cause, else the slowest stage.
    next: list[NextStep] = []


def named(lags: Sequence[Lag]) -> Lag | None:
    """The rank the verdict names: of the consistent lags, the largest, a rank that computes
    before one that waits in a collective (with two ranks, the one that arrives last makes
    the other wait as long as it computed), stages before ranges before device compute."""
    order = {"stage": 0, "range": 1, "device": 2}
    found = [g for g in lags if g.consistent]
    if not found:
        return None
    return min(
        found,
        key=lambda g: (is_wait(g.name), -round(g.lag_ms, 6), order[g.kind], who_order(g.who)),
    )


def straggler(lags: Sequence[Lag], margin: float) -> tuple[Lag | None, Straggler | None]:
    """(The rank named behind the others, None) or, where none is, (None, the largest
    one-off: a rank's step over the floor and ``margin`` behind the others', stages first)."""
    lag = named(lags)
    if lag is not None:
        return lag, None
    order = {"stage": 0, "range": 1, "device": 2}
    offs = [
        g.worst
        for g in lags
        if g.behind > 0 and g.worst.ms > g.worst.median_ms * (1 + margin) and not is_wait(g.name)
    ]
    if not offs:
        return None, None
    kind = min(order[w.kind] for w in offs)
    return None, max(
        (w for w in offs if order[w.kind] == kind),
        key=lambda w: (w.excess_ms, w.ratio, -rank_order(w.rank)[1]),
    )


def rests_on(tables: Tables, step: StepTime | None) -> int:
    """How many steps the verdict rests on: those counted (steps, else stages, else the
    device's steps)."""
    steps = steps_in(tables.counted, "step", "stage")
    return len(steps) or (step.steps if step else 0)


def bound_of(compute: float, comm: float, copy: float, idle: float) -> Bound:
    """The largest part of the step on the device (ties: the first of ``BOUNDS``)."""
    parts = dict(zip(BOUNDS, (compute, comm, copy, idle)))
    return max(BOUNDS, key=lambda k: (parts[k], -BOUNDS.index(k)))


def device(captures: Captures, tables: Tables, settings: Settings) -> DeviceVerdict | None:
    """The device split of the rows ``device_scope.counted`` gives (whole steps, warmup and work
    outside steps left out; where no capture has steps, whole captures), averaged."""
    within = scope(captures)
    rows = counted(captures, tables, settings, within)
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
        left_out=[captures.shown(str(t.path)) for t in within.left_out],
        classified=beyond_hta(classified(captures.traces)),
    )


def memory(
    captures: Captures, tables: Tables, settings: Settings, findings: Sequence[Finding] = ()
) -> MemoryVerdict | None:
    """The highest whole-capture peak, against the capacity its trace records; of equal peaks,
    the lowest rank's (never the order the captures were found in); and the growth step over
    step the findings name (``rl.memory_growth``)."""
    best: MemoryVerdict | None = None
    capacity: dict[int | None, float | None] = {
        t.rank: t.meta.device_memory_bytes for t in captures.traces
    }
    for row in sorted(tables.memory, key=lambda r: (rank_order(r.rank), r.source)):
        peak = row.peak_allocated_bytes
        if (
            row.stage is not None
            or peak is None
            or row.source == "host"
            or (best and peak <= best.peak_bytes)
        ):  # host memory is never a device's peak
            continue
        cap = capacity.get(row.rank)
        cap = float(cap) if isinstance(cap, (int, float)) and cap > 0 else None
        best = MemoryVerdict(
            rank=row.rank,
            peak_bytes=peak,
            capacity_bytes=cap,
            share=ratio(peak, cap, None) if cap else None,
        )
    grows = next((f.title for f in findings if f.rule == "rl.memory_growth"), None)
    if grows is not None:
        if best is None:
            return MemoryVerdict(rank=None, peak_bytes=0.0, growth=grows)
        best = msgspec.structs.replace(best, growth=grows)
    return best


def verdict(
    captures: Captures, tables: Tables, settings: Settings, findings: Sequence[Finding] = ()
) -> Verdict:
    """Every part of the verdict of ``result``, its causes from ``findings``."""
    step = tables.step_time
    lags = tables.lags
    lag, one_off = straggler(lags, settings.margin)
    out = Verdict(
        step=step,
        slowest=slowest(tables.counted, lags),
        straggler=lag.worst if lag else None,
        behind=lag,
        one_off=one_off,
        steps=rests_on(tables, step),
        phases=phases(tables.phases, settings.include_warmup),
        causes=causes(findings, step.median_ms if step else None),
        device=device(captures, tables, settings),
        memory=memory(captures, tables, settings, findings),
        triggered=tables.triggered,
        warmup_steps=sorted({s for _, s in tables.warmup}),
        worlds=worlds(captures.traces),
        throughput=tables.throughput.stages,
    )
    out.next = next_steps(
        captures,
        tables,
        settings,
        out.causes[0] if out.causes else None,
        lag,
        out.slowest,
        out.device,
    )
    return out
