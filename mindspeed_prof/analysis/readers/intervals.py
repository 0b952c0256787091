"""Time intervals ``(start, end)`` merged into a union (``device.merge``): their length, and
how much of a span they cover.

Overlapping ranges (one stage run on two threads, a range nested in another of its name) count
once in a union, so a time taken from one never exceeds the span it lies in.
"""

from __future__ import annotations

import bisect

__all__ = ["covered", "length"]

Interval = tuple[float, float]


def length(merged: list[Interval]) -> float:
    """The total length of disjoint intervals."""
    return sum(hi - lo for lo, hi in merged)


def covered(merged: list[Interval], lo: float, hi: float,
            starts: list[float] | None = None) -> float:
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
