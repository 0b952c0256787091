"""Custom ranges (``mstx.range``, ``mstx_timer_decorator``, user annotations): per name and rank."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict

from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.model import rank_order
from mindspeed_prof.analysis.rows import RangeRow

__all__ = ["p95", "range_rows", "self_times", "stage_of"]


def p95(values: list[float]) -> float:
    """95th percentile, interpolated between the closest ranks (the value itself for one)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def self_times(ranges: list[Range]) -> list[float]:
    """Each range's duration minus that of the ranges directly nested in it on its thread (us)."""
    out = [r.dur for r in ranges]
    by_thread: dict[tuple[int | None, str], list[int]] = defaultdict(list)
    for i, r in enumerate(ranges):
        by_thread[(r.rank, r.tid)].append(i)
    for idx in by_thread.values():
        idx.sort(key=lambda i: (ranges[i].ts, -ranges[i].dur))
        stack: list[int] = []
        for i in idx:
            r = ranges[i]
            while stack and ranges[stack[-1]].ts + ranges[stack[-1]].dur <= r.ts:
                stack.pop()
            if stack:
                parent = ranges[stack[-1]]
                out[stack[-1]] -= min(r.dur, parent.ts + parent.dur - r.ts)
            stack.append(i)
    return [max(v, 0.0) for v in out]


def stage_of(ranges: list[Range], stages: list[Range]) -> list[str | None]:
    """The stage (same rank) whose run holds each range's start, or None."""
    by_rank: dict[int | None, list[Range]] = defaultdict(list)
    for s in stages:
        by_rank[s.rank].append(s)
    starts = {}
    for rank, runs in by_rank.items():
        runs.sort(key=lambda s: s.ts)
        starts[rank] = [s.ts for s in runs]
    out: list[str | None] = []
    for r in ranges:
        runs = by_rank.get(r.rank, [])
        i = bisect.bisect_right(starts.get(r.rank, []), r.ts) - 1
        out.append(runs[i].name if i >= 0 and r.ts <= runs[i].ts + runs[i].dur else None)
    return out


def range_rows(ranges: list[Range]) -> list[RangeRow]:
    """Per (name, rank): count, total, self, mean, p95 and max ms and the stage(s) it ran in;
    sorted by total."""
    custom = [r for r in ranges if r.kind == "range"]
    selfs = self_times(custom)
    stages = stage_of(custom, [r for r in ranges if r.kind == "stage"])
    groups: dict[tuple[str, int | None], list[tuple[float, float, str | None]]] = defaultdict(list)
    for r, own, stage in zip(custom, selfs, stages):
        groups[(r.name, r.rank)].append((r.dur / 1e3, own / 1e3, stage))
    rows = []
    for (name, rank), runs in groups.items():
        ms = [m for m, _, _ in runs]
        where = sorted({s for _, _, s in runs if s is not None})
        rows.append(RangeRow(name=name, rank=rank, stage=", ".join(where) or None,
                             count=len(ms), total_ms=sum(ms),
                             self_ms=sum(o for _, o, _ in runs), mean_ms=sum(ms) / len(ms),
                             p95_ms=p95(ms), max_ms=max(ms)))
    return sorted(rows, key=lambda r: (-r.total_ms, r.name, rank_order(r.rank)))
