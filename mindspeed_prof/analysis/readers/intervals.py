"""Time intervals ``(start, end)`` merged into a union (``device.merge``): their length, and
how much of a span they cover.

Overlapping ranges (one stage run on two threads, a range nested in another of its name) count
once in a union, so a time taken from one never exceeds the span it lies in.
"""

from __future__ import annotations

import bisect
from array import array

import numpy as np

from mindspeed_prof.analysis.readers.model import Range

__all__ = ["bare_times", "bare_times_of_columns", "covered", "length"]

Interval = tuple[float, float]


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
    from mindspeed_prof.analysis.readers.device.breakdown import merge

    merged = merge(ops)
    starts = [a for a, _ in merged]

    def bare(r: Range) -> float:
        lo = r.ts - origin
        return max(r.dur - covered(merged, lo, lo + r.dur, starts), 0.0)

    return [r._replace(bare=bare(r)) if r.kind in ("stage", "range") else r for r in ranges]


def bare_times_of_columns(
    ranges: list[Range], starts: array[float], ends: array[float], origin: float
) -> list[Range]:
    """``bare_times`` of ops given as two columns, merged in numpy (the same union: ``merge``
    sorts by start, then end, and extends a piece while the next starts by its end); only the
    pieces a range overlaps become Python floats, summed in the same order as ``covered``."""
    lo_col = np.frombuffer(starts, dtype=np.float64)
    hi_col = np.frombuffer(ends, dtype=np.float64)
    order = np.lexsort((hi_col, lo_col))
    lo_col, hi_col = lo_col[order], hi_col[order]
    reach = np.maximum.accumulate(hi_col)
    new = np.empty(len(lo_col), dtype=bool)
    new[0] = True
    np.greater(lo_col[1:], reach[:-1], out=new[1:])
    firsts = np.flatnonzero(new)
    piece_lo = lo_col[firsts]
    piece_hi = reach[np.append(firsts[1:], len(lo_col)) - 1]
    del lo_col, hi_col, reach, new, order

    def bare(r: Range) -> float:
        lo = r.ts - origin
        hi = lo + r.dur
        total = 0.0
        if hi > lo:
            i = max(int(np.searchsorted(piece_lo, lo, "right")) - 1, 0)
            j = int(np.searchsorted(piece_lo, hi, "left"))
            for a, b in zip(piece_lo[i:j].tolist(), piece_hi[i:j].tolist()):
                total += max(0.0, min(b, hi) - max(a, lo))
        return max(r.dur - total, 0.0)

    return [r._replace(bare=bare(r)) if r.kind in ("stage", "range") else r for r in ranges]
