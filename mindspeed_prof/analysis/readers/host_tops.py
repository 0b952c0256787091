"""The time host operators ran: every top-level host op's (start, end), kept per thread in
blocks on disk (``spill``), and each stage and custom range's ``bare`` time from their union,
swept in start order a slice at a time: memory does not grow with the ops.

The union is ``device.breakdown.merge``'s (sorted by start, then end; a piece grows while the
next op starts by its end), and a range's covered time is summed over its pieces in start
order, as ``intervals.covered`` sums it: the same floats.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.spill import Spilled, merged

__all__ = ["bare_times", "pieces", "top_spans"]

_KINDS = ("stage", "range")


def top_spans() -> Spilled:
    """A thread's top-level ops: columns start, end (us)."""
    return Spilled("dd")


def pieces(runs: Iterable[Spilled]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The union of every run's (start, end) spans as disjoint pieces in start order, a chunk
    at a time."""
    open_lo = open_hi = float("nan")  # the piece still growing, none yet
    for lo, hi in merged(list(runs)):
        reach = np.maximum.accumulate(hi)
        if open_hi == open_hi:
            np.maximum(reach, open_hi, out=reach)
        new = np.empty(len(lo), dtype=bool)
        new[0] = bool(lo[0] > open_hi) if open_hi == open_hi else True
        np.greater(lo[1:], reach[:-1], out=new[1:])
        firsts = np.flatnonzero(new)
        if not len(firsts):  # the open piece grows through the whole chunk
            open_hi = float(reach[-1])
            continue
        ends = reach[firsts[1:] - 1]
        if open_hi == open_hi:  # the open piece closes before this chunk's first new one
            closes = float(reach[firsts[0] - 1]) if firsts[0] else open_hi
            yield (
                np.concatenate([[open_lo], lo[firsts[:-1]]]),
                np.concatenate([[closes], ends]),
            )
        else:
            yield lo[firsts[:-1]], ends
        open_lo, open_hi = float(lo[firsts[-1]]), float(reach[-1])
    if open_hi == open_hi:
        yield np.array([open_lo]), np.array([open_hi])


def bare_times(ranges: Sequence[Range], runs: Iterable[Spilled], origin: float) -> list[Range]:
    """``ranges`` with each stage and custom range's ``bare`` time: its length less the part
    that the spans of ``runs`` (top-level host ops on any thread, relative to ``origin``)
    cover."""
    which = [k for k, r in enumerate(ranges) if r.kind in _KINDS]
    los = np.array([ranges[k].ts - origin for k in which], dtype=np.float64)
    his = los + np.array([ranges[k].dur for k in which], dtype=np.float64)
    covered = [0.0] * len(which)
    if len(which):
        for p_lo, p_hi in pieces(runs):
            _cover(covered, los, his, p_lo, p_hi)
    out = list(ranges)
    for k, total in zip(which, covered):
        r = ranges[k]
        out[k] = r._replace(bare=max(r.dur - total, 0.0))
    return out


def _cover(
    covered: list[float], los: np.ndarray, his: np.ndarray, p_lo: np.ndarray, p_hi: np.ndarray
) -> None:
    """Add to each range's covered time the part of these pieces inside it, piece by piece."""
    first = np.maximum(np.searchsorted(p_lo, los, "right") - 1, 0)
    stop = np.searchsorted(p_lo, his, "left")
    hit = np.flatnonzero((stop > first) & (his > los))
    if not len(hit):
        return
    # each (range, piece) pair in range then piece order; ``np.add.at`` adds them one at a
    # time in that order, as a loop over each range's pieces would
    size = stop[hit] - first[hit]
    which = np.repeat(hit, size)
    piece = (
        np.arange(int(size.sum()))
        - np.repeat(np.cumsum(size) - size, size)
        + np.repeat(first[hit], size)
    )
    part = np.minimum(p_hi[piece], his[which]) - np.maximum(p_lo[piece], los[which])
    total = np.array(covered)
    np.add.at(total, which, np.maximum(part, 0.0))
    covered[:] = total.tolist()
