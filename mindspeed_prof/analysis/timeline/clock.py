"""A timeline's one clock: each capture's offset from its trace clock to the wall clock, from
its clock record, else from the step starts of the captures aligned before it."""

from __future__ import annotations

import statistics
from collections import defaultdict

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.labels import rank_order

__all__ = ["align", "clock_offset_us"]


def clock_offset_us(data: TraceData) -> float | None:
    """Microseconds to add to this capture's ``ts`` for wall-clock time; None without a record."""
    clock = data.meta.clock
    if clock is not None and clock.wall_ns is not None and clock.trace_ns is not None:
        return (clock.wall_ns - clock.trace_ns) / 1000.0
    base = data.meta.base_time_ns
    if base is not None:
        return base / 1000.0
    if data.kind == "npu":  # torch_npu converts its device clock to wall-clock microseconds
        return 0.0
    return None


def _step_starts(data: TraceData) -> dict[int, float]:
    starts: dict[int, float] = {}
    for r in data.ranges:
        if r.kind == "step" and r.step is not None:
            starts[r.step] = min(r.ts, starts.get(r.step, r.ts))
    return starts


def align(traces: list[TraceData]) -> tuple[dict[int, float], list[TraceData]]:
    """Per trace (by ``id``), the microseconds that put its ``ts`` on the wall clock: from its
    clock record, or else on the step starts of the traces aligned before it, in rank order
    (never the order the files were found in; returned too)."""
    offsets: dict[int, float] = {}
    reference: dict[int, list[float]] = defaultdict(list)
    on_steps = []
    for t in traces:
        offset = clock_offset_us(t)
        if offset is None:
            on_steps.append(t)
            continue
        offsets[id(t)] = offset
        for step, ts in _step_starts(t).items():
            reference[step].append(ts + offset)
    for t in sorted(on_steps, key=lambda t: (rank_order(t.rank), t.source)):
        starts = _step_starts(t)
        common = [s for s in starts if s in reference]
        if common:
            offset = statistics.median(statistics.median(reference[s]) - starts[s] for s in common)
        elif reference or not starts:  # no step in common: put its start at the first one
            first = min((ts for ts_list in reference.values() for ts in ts_list), default=0.0)
            offset = first - min((r.ts for r in t.ranges), default=0.0)
        else:  # nothing aligned yet: this trace's own clock sets the axis for the rest
            offset = 0.0
        offsets[id(t)] = offset
        for step, ts in starts.items():
            reference[step].append(ts + offset)
    return offsets, on_steps
