"""A thread's host ops nested in numpy: what ``host_ops``' stack gives one op at a time (each op's
parent, self time, when it leaves the stack), for ops in start order that nest properly.

The stack: an op arriving at ``ts`` first closes every open op that ends by ``ts`` (innermost
first), then takes from the innermost still open (its parent) ``min(dur, parent's end - ts)``
of its self time, and opens. Where every op ends by its parent's end (and the open ops carried
in do too), the ops open at an arrival are exactly those before it that end after it starts, so
an op's parent is the last op before it that ends after its start: found for all ops at once
by pointer jumping (each op's candidate moves to its candidate's, which never passes the
parent). An op closes at the first arrival at or after its end; those that close together
leave innermost first. Self times subtract their children in arrival order (``np.subtract.at``
adds one at a time, in order): the same floats.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Nested", "nest"]

_ROUNDS = 64  # pointer-jumping rounds before giving up (depth doubles each round)


@dataclass
class Nested:
    """``nest``'s answer, over the carried stack's entries then the new ops (``m`` in all)."""

    self_us: np.ndarray  # each entry's self time, its children taken off
    closed: np.ndarray  # the entries that close, in the order they leave the stack
    still: np.ndarray  # the entries still open after the last op, innermost last
    top: np.ndarray  # the new ops (their index among the new) with no op open around them


def nest(
    open_end: np.ndarray,
    open_self: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    max_depth: int,
) -> Nested | None:
    """The ops ``ts``/``dur`` (start order, none before the last carried one) pushed onto the
    stack ``open_end``/``open_self`` (outermost first); None where they do not nest properly
    (an op ending after its parent), a stack would reach ``max_depth``, or the pointer
    jumping does not settle: the one at a time path answers those."""
    s, n = len(open_end), len(ts)
    if s > 1 and bool((open_end[1:] > open_end[:-1]).any()):
        return None
    end = np.concatenate([open_end, ts + dur])
    # each entry's candidate parent: the entry before it (the carried ones' is their parent)
    cand = np.arange(-1, s + n - 1, dtype=np.intp)
    active = np.arange(n, dtype=np.intp)
    for _ in range(_ROUNDS):
        c = cand[s + active]
        done = c < 0
        done[~done] = end[c[~done]] > ts[active[~done]]
        active, c = active[~done], c[~done]
        if not len(active):
            break
        cand[s + active] = cand[c]
    else:
        return None
    parent = cand[s:]
    has = parent >= 0
    if bool((end[s:][has] > end[parent[has]]).any()):
        return None
    if _depth(cand) >= max_depth:
        return None
    self_us = np.concatenate([open_self, dur])
    np.subtract.at(self_us, parent[has], np.minimum(dur[has], end[parent[has]] - ts[has]))
    # where each entry closes: the first new op after it that starts at or after its end
    closes = np.searchsorted(ts, end, "left")
    np.maximum(closes[s:], np.arange(1, n + 1), out=closes[s:])
    gone = np.flatnonzero(closes < n)
    order = np.lexsort((-gone, closes[gone]))
    return Nested(self_us, gone[order], np.flatnonzero(closes >= n), np.flatnonzero(~has))


def _depth(parent: np.ndarray) -> int:
    """The most entries open together: the longest chain of parents (list ranking)."""
    if not len(parent):
        return 0
    depth = np.ones(len(parent), dtype=np.int64)
    up = parent.copy()
    while True:
        on = np.flatnonzero(up >= 0)
        if not len(on):
            return int(depth.max())
        nxt = up[on]
        depth[on] += depth[nxt]
        up[on] = up[nxt]
