"""Host ops (and allocations) of each thread, put back in start order and nested for their self
times: ``fold.Collector``'s host side.

A thread's items pass through a heap of ``REORDER`` (torch writes them sorted already): once
it is full, each new item takes out the least of the heap and itself. Items come a batch at a
time (``flush``): where every item a batch takes out was already in hand when the heap gives it
(the usual case, items at most ``REORDER`` out of place), what comes out is the first of all of
them sorted, found by one numpy sort; otherwise the heap takes them one at a time. The same
items come out either way, in the same order.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from mindspeed_prof.analysis.readers.events import Lane
from mindspeed_prof.analysis.readers.host_tops import top_spans
from mindspeed_prof.analysis.readers.model import Tally, tally
from mindspeed_prof.analysis.readers.spill import Spilled

__all__ = ["ALLOC", "MAX_DEPTH", "OP", "REORDER", "HostOps"]

#: Host ops of a thread are put back in start order through a heap of this many (torch writes
#: them sorted already); ops further out of order are named in ``notes``.
REORDER = 4096
#: Host ops nested deeper than this on one thread (real traces nest a few dozen deep; a file of
#: ops that all start together would otherwise nest without end) close the innermost first.
MAX_DEPTH = 512
#: A thread's heap holds items of one shape, ``(ts, kind, order, seq, what)``, in start order:
#: an op (``OP``: ``order`` minus its duration, longer first; ``what`` its name) comes before
#: an allocation at the same time (``ALLOC``: ``what`` its (bytes, device type)).
OP, ALLOC = 0, 1
_Item = tuple[float, int, float, int, "str | tuple[float, float | None]"]


class _Thread:
    """One host thread: its heap, its items not yet pushed (``new``), its stack of open ops,
    its top-level ops' spans (``tops``, on disk a block at a time)."""

    __slots__ = ("deep", "heap", "late", "last", "new", "ops", "stack", "tops")

    def __init__(self) -> None:
        self.heap: list[_Item] = []
        self.new: list[_Item] = []
        self.stack: list[list[Any]] = []  # [end, self_us, name]
        self.ops: dict[str, Tally] = {}  # name -> calls, self time
        self.last = float("-inf")
        self.late = 0
        self.deep = 0  # ops that found the stack MAX_DEPTH deep
        self.tops: Spilled = top_spans()


class HostOps:
    """Every thread's ops: self times per name, allocations per op name (``allocs``: all,
    device), the start and end of each top-level op (each thread's ``tops``; ``tops()`` gives
    them all). Times relative to the first item's (``origin``)."""

    def __init__(self) -> None:
        self.threads: dict[Lane, _Thread] = {}
        self.origin: float | None = None
        self.seq = 0
        self.allocs: tuple[dict[str, Tally], dict[str, Tally]] = ({}, {})  # all, device

    def _thread(self, key: Lane) -> _Thread:
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = _Thread()
        return thread

    def op(self, key: Lane, ts: float, dur: float, name: str) -> None:
        """An op of thread ``key`` (taken in at the next ``flush``)."""
        if self.origin is None:
            self.origin = ts
        self.seq += 1
        self._thread(key).new.append((ts - self.origin, OP, -dur, self.seq, name))

    def alloc(self, key: Lane, ts: float, size: float, dev: float | None) -> None:
        if self.origin is None:
            self.origin = ts
        self.seq += 1
        self._thread(key).new.append((ts - self.origin, ALLOC, 0.0, self.seq, (size, dev)))

    def flush(self) -> None:
        """Take in every thread's new items."""
        for thread in self.threads.values():
            if thread.new:
                self._flush(thread)
                thread.tops.settle()

    def _flush(self, thread: _Thread) -> None:
        new, thread.new = thread.new, []
        heap = thread.heap
        free = REORDER - len(heap)
        if len(new) <= free:
            for item in new:
                heapq.heappush(heap, item)
            return
        taken = len(new) - max(free, 0)
        if free < 0 or taken * 16 < len(heap):  # few come out: a sort of the heap costs more
            self._one_at_a_time(thread, new)
            return
        items = heap + new
        # the items' own order (``seq`` tells every two apart); timsort runs through the
        # stretches already in order
        order = sorted(range(len(items)), key=items.__getitem__)
        # when the heap gives out its j-th item, it holds the first max(free, 0) + j + 1 new
        arrival = np.array(order[:taken]) - len(heap)
        if np.all(arrival <= free + np.arange(taken)):
            out = list(map(items.__getitem__, order[:taken]))
            thread.heap = list(map(items.__getitem__, order[taken:]))  # sorted: a heap
            self._take_all(thread, out)
            return
        self._one_at_a_time(thread, new)

    def _one_at_a_time(self, thread: _Thread, new: list[_Item]) -> None:
        heap = thread.heap
        for item in new:
            if len(heap) < REORDER:
                heapq.heappush(heap, item)
            else:
                self._take_all(thread, [heapq.heappushpop(heap, item)])

    def _take_all(self, thread: _Thread, items: list[_Item]) -> None:
        """The thread's next items in start order: ops, or allocations that the innermost op
        still open at their time made."""
        stack = thread.stack
        last, late = thread.last, thread.late
        ops = thread.ops
        top_lo, top_hi = thread.tops.cols
        for ts, _, order, _, what in items:
            if ts < last:
                late += 1
            last = ts
            if isinstance(what, tuple):  # an allocation (``ALLOC``)
                size, dev = what
                for end, _, name in reversed(stack):
                    if end >= ts:
                        tally(self.allocs[0], name, 1, size)
                        if dev:  # a device's (CUDA 1, ROCm 6...), not the CPU's 0
                            tally(self.allocs[1], name, 1, size)
                        break
                continue
            dur = -order
            while stack and stack[-1][0] <= ts:  # ``_pop``, inline: once an op
                _, self_us, name = stack.pop()
                slot = ops.get(name)
                if slot is None:
                    slot = ops[name] = Tally()
                slot.count += 1
                slot.total += max(self_us, 0.0)
            if len(stack) >= MAX_DEPTH:
                thread.deep += 1
                _pop(stack, ops)
            if stack:
                stack[-1][1] -= min(dur, stack[-1][0] - ts)
            else:  # a top-level op: together they are the time the host ran operators
                top_lo.append(ts)
                top_hi.append(ts + dur)
            stack.append([ts + dur, dur, what])
        thread.last, thread.late = last, late

    def finish(self, ops: dict[str, Tally]) -> tuple[int, int]:
        """Empty every heap and stack, the self times added to ``ops``; how many ops came out
        of order, and how many found the stack too deep."""
        from mindspeed_prof.analysis.readers.model import merge_tallies

        self.flush()
        late = deep = 0
        for thread in self.threads.values():
            rest = []
            while thread.heap:
                rest.append(heapq.heappop(thread.heap))
            self._take_all(thread, rest)
            while thread.stack:
                _pop(thread.stack, thread.ops)
            thread.tops.settle()
            late += thread.late
            deep += thread.deep
            merge_tallies(ops, thread.ops)
        return late, deep

    def tops(self) -> list[Spilled]:
        """Each thread's top-level ops (after ``finish``)."""
        return [thread.tops for thread in self.threads.values()]

    def any_tops(self) -> bool:
        return any(len(thread.tops) for thread in self.threads.values())

    def close(self) -> None:
        for thread in self.threads.values():
            thread.tops.close()


def _pop(stack: list[list[Any]], ops: dict[str, Tally]) -> None:
    _, self_us, name = stack.pop()
    slot = ops.get(name)
    if slot is None:
        slot = ops[name] = Tally()
    slot.count += 1
    slot.total += max(self_us, 0.0)
