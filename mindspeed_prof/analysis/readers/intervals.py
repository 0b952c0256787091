"""Time intervals ``(start, end)`` merged into a union (``merge``): their length, and how much
of a span they cover.

Overlapping ranges (one stage run on two threads, a range nested in another of its name) count
once in a union, so a time taken from one never exceeds the span it lies in.
"""

from __future__ import annotations

import bisect

from mindspeed_prof.analysis.readers.model import Range

__all__ = ["bare_times", "covered", "length", "merge"]

Interval = tuple[float, float]


def merge(spans: list[Interval]) -> list[Interval]:
    """The union of ``spans`` as sorted, disjoint intervals."""
    out: list[list[float]] = []
    for ts, end in sorted(spans):
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([ts, end])
    return [(a, b) for a, b in out]


def length(merged: list[Interval]) -> float:
    """The total length of disjoint intervals."""
    return sum(hi - lo for lo, hi in merged)


def covered(
    merged: list[Interval], lo: float, hi: float, starts: list[float] | None = None
) -> float:
    """How much of ``[lo, hi]`` the disjoint, sorted ``merged`` intervals cover (``starts``:
    their starts, when the caller keeps them for many spans)."""
    if hi <= lo or not merged:
        return 0.0
    starts = [s for s, _ in merged] if starts is None else starts
    i = max(bisect.bisect_right(starts, lo) - 1, 0)
    total = 0.0
    while i < len(merged) and merged[i][0] < hi:
        a, b = merged[i]
        total += max(0.0, min(b, hi) - max(a, lo))
        i += 1
    return total


def bare_times(
    ranges: list[Range], ops: list[tuple[float, float]], origin: float = 0.0
) -> list[Range]:
    """``ranges`` with each stage and custom range's ``bare`` time: its length less the part
    that host operators (``ops``, on any thread, their times relative to ``origin``) cover."""
    merged = merge(ops)
    starts = [a for a, _ in merged]

    def bare(r: Range) -> float:
        lo = r.ts - origin
        return max(r.dur - covered(merged, lo, lo + r.dur, starts), 0.0)

    return [r._replace(bare=bare(r)) if r.kind in ("stage", "range") else r for r in ranges]
