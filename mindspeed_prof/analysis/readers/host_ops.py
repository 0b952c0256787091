"""Host ops (and allocations) of each thread, put back in start order and nested for their self
times: ``fold.Collector``'s host side.

Items come a batch at a time (``op``, ``alloc`` and ``ops`` for many, then ``flush``), kept in
numpy columns (start, kind, minus the duration, sequence, name id or allocation): no Python
object per op outlives its batch. A thread's items pass through a heap of ``REORDER`` (torch
writes them sorted already): once it is full, each new item takes out the least of the heap and
itself. Where every item a batch takes out was already in hand when the heap gives it (the
usual case, items at most ``REORDER`` out of place), what comes out is the first of all of them
sorted, found by one numpy sort; otherwise the heap takes them one at a time. The items that
come out are nested by ``host_nest`` where they nest properly and are in order, else one at a
time on a stack: the same results either way.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from mindspeed_prof.analysis.readers.events import Id, Lane
from mindspeed_prof.analysis.readers.host_nest import nest
from mindspeed_prof.analysis.readers.host_tops import top_spans
from mindspeed_prof.analysis.readers.model import Tally, tally
from mindspeed_prof.analysis.readers.spill import Spilled
from mindspeed_prof.analysis.readers.totals import ids_of

__all__ = ["ALLOC", "MAX_DEPTH", "OP", "REORDER", "HostOps"]

#: Host ops of a thread are put back in start order through a heap of this many (torch writes
#: them sorted already); ops further out of order are named in ``notes``.
REORDER = 4096
#: Host ops nested deeper than this on one thread (real traces nest a few dozen deep; a file of
#: ops that all start together would otherwise nest without end) close the innermost first.
MAX_DEPTH = 512
#: A thread's items, in columns: start (relative to ``HostOps.origin``), kind, order, sequence,
#: what. An op (``OP``: ``order`` minus its duration, longer first; ``what`` its name's id)
#: comes before an allocation at the same time (``ALLOC``: ``what`` unused, its (bytes, device
#: type) kept by sequence); ``seq`` (file order) tells every two apart.
OP, ALLOC = 0, 1
_Cols = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_DTYPES = (np.float64, np.int8, np.float64, np.int64, np.int64)
_Item = tuple[float, int, float, int, int]


def _empty() -> _Cols:
    return tuple(np.zeros(0, dtype=t) for t in _DTYPES)  # type: ignore[return-value]


def _cat(parts: list[_Cols]) -> _Cols:
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(c) for c in zip(*parts))  # type: ignore[return-value]


def _take(cols: _Cols, at: np.ndarray | slice) -> _Cols:
    return tuple(c[at] for c in cols)  # type: ignore[return-value]


class _Thread:
    """One host thread: its heap (columns), its items not yet pushed (``new``), its stack of
    open ops, its top-level ops' spans (``tops``, on disk a block at a time)."""

    __slots__ = ("allocs", "deep", "heap", "late", "last", "new", "ops", "stack", "tops")

    def __init__(self) -> None:
        self.heap: _Cols = _empty()
        self.new: list[_Cols] = []
        self.allocs: dict[int, tuple[float, float | None]] = {}  # seq -> bytes, device type
        self.stack: list[list[Any]] = []  # [end, self_us, name]
        self.ops: dict[str, Tally] = {}  # name -> calls, self time
        self.last = float("-inf")
        self.late = 0
        self.deep = 0  # ops that found the stack MAX_DEPTH deep
        self.tops: Spilled = top_spans()


class HostOps:
    """Every thread's ops: self times per name, allocations per op name (``allocs``: all,
    device), the start and end of each top-level op (each thread's ``tops``; ``tops()`` gives
    them all). Times relative to the first item's (``origin``, the first in file order).

    ``start(n)`` begins a batch of ``n`` events: an item given ``at`` (its index in the batch)
    is ordered by it; without, by the order of the calls."""

    def __init__(self) -> None:
        self.threads: dict[Lane, _Thread] = {}
        self.origin: float | None = None
        self.seq = 0
        self._base = 0
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self.allocs: tuple[dict[str, Tally], dict[str, Tally]] = ({}, {})  # all, device
        #: this batch's items, absolute times: one at a time, and in columns (with lanes)
        self._one: list[tuple[int, Lane, float, int, float, object]] = []
        self._many: list[tuple[list[Id], list[Id], np.ndarray, np.ndarray, np.ndarray, list[str]]]
        self._many = []

    def _thread(self, key: Lane) -> _Thread:
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = _Thread()
        return thread

    def start(self, n: int) -> None:
        self._base = self.seq + 1
        self.seq += n

    def _seq(self, at: int | None) -> int:
        if at is None:
            self.seq += 1
            return self.seq
        return self._base + at

    def op(self, key: Lane, ts: float, dur: float, name: str, at: int | None = None) -> None:
        """An op of thread ``key`` (taken in at the next ``flush``)."""
        self._one.append((self._seq(at), key, ts, OP, -dur, name))

    def alloc(
        self, key: Lane, ts: float, size: float, dev: float | None, at: int | None = None
    ) -> None:
        self._one.append((self._seq(at), key, ts, ALLOC, 0.0, (size, dev)))

    def ops(
        self,
        pids: list[Id],
        tids: list[Id],
        ts: np.ndarray,
        dur: np.ndarray,
        names: list[str],
        at: np.ndarray,
    ) -> None:
        """Ops in columns (``at``: their indices in the batch ``start`` began)."""
        if len(names):
            self._many.append((pids, tids, ts, dur, self._base + at, names))

    def _name_ids(self, names: list[str]) -> np.ndarray:
        before = len(self._ids)
        ids = np.array(ids_of(self._ids, names), dtype=np.int64)
        if len(self._ids) > before:
            self.names.extend(list(self._ids)[before:])
        return ids

    def _gather(self) -> None:
        """This batch's items into their threads' ``new`` columns, relative to ``origin``."""
        from mindspeed_prof.analysis.readers.device.ops import groups

        one, many = self._one, self._many
        self._one, self._many = [], []
        if self.origin is None:
            firsts = [min((o[0], o[2]) for o in one)] if one else []
            firsts += [(int(m[4][0]), float(m[2][0])) for m in many]
            if firsts:
                self.origin = min(firsts)[1]
        origin = self.origin or 0.0
        parts: list[tuple[int, Lane, _Cols]] = []  # first seq, thread, its items
        for pids, tids, ts, dur, seq, names in many:
            cols = (ts - origin, np.zeros(len(ts), np.int8), -dur, seq, self._name_ids(names))
            for lane, at in groups(pids, tids):
                part = cols if at is None else _take(cols, at)
                parts.append((int(part[3][0]), lane, part))
        by: dict[Lane, list[_Item]] = {}
        allocs: list[tuple[Lane, int, object]] = []
        for seq_, lane, ts_, kind, order, what_ in one:
            if kind == ALLOC:
                allocs.append((lane, seq_, what_))
                name = 0
            else:
                name = int(self._name_ids([what_])[0])  # type: ignore[list-item]
            by.setdefault(lane, []).append((ts_ - origin, kind, order, seq_, name))
        parts += [(items[0][3], lane, _rows(items)) for lane, items in by.items()]
        parts.sort(key=lambda p: p[0])  # threads first seen in file order
        for _, lane, part in parts:
            self._thread(lane).new.append(part)
        for lane, seq_, what_ in allocs:
            self.threads[lane].allocs[seq_] = what_  # type: ignore[assignment]

    def flush(self) -> None:
        """Take in every thread's new items."""
        self._gather()
        for thread in self.threads.values():
            if thread.new:
                self._flush(thread)
                thread.tops.settle()

    def _flush(self, thread: _Thread) -> None:
        new = _cat(thread.new)
        thread.new = []
        if len(new[3]) > 1 and bool((new[3][1:] < new[3][:-1]).any()):
            new = _take(new, np.argsort(new[3], kind="stable"))  # in the order they came
        heap = thread.heap
        held = len(heap[0])
        free = REORDER - held
        if len(new[0]) <= free:
            thread.heap = _cat([heap, new])
            return
        taken = len(new[0]) - max(free, 0)
        if free < 0 or taken * 16 < held:  # few come out: a sort of the heap costs more
            self._one_at_a_time(thread, new)
            return
        items = _cat([heap, new])
        order = np.lexsort((items[3], items[2], items[1], items[0]))
        # when the heap gives out its j-th item, it holds the first max(free, 0) + j + 1 new
        arrival = order[:taken] - held
        if np.all(arrival <= free + np.arange(taken)):
            thread.heap = _take(items, order[taken:])
            self._take_all(thread, _take(items, order[:taken]))
            return
        self._one_at_a_time(thread, new)

    def _one_at_a_time(self, thread: _Thread, new: _Cols) -> None:
        heap: list[_Item] = list(zip(*(c.tolist() for c in thread.heap)))
        heapq.heapify(heap)
        out: list[_Item] = []
        for item in zip(*(c.tolist() for c in new)):
            if len(heap) < REORDER:
                heapq.heappush(heap, item)
            else:
                out.append(heapq.heappushpop(heap, item))
        thread.heap = _rows(heap)
        if out:
            self._take_all(thread, _rows(out))

    def _take_all(self, thread: _Thread, items: _Cols) -> None:
        """The thread's next items in start order: ops, or allocations that the innermost op
        still open at their time made: nested in numpy where they can be (``host_nest``)."""
        ts = items[0]
        if not len(ts):
            return
        if (
            ts[0] >= thread.last
            and not items[1].any()
            and not bool((ts[1:] < ts[:-1]).any())
            and self._nested(thread, ts, -items[2], items[4])
        ):
            thread.last = float(ts[-1])
            return
        self._take_each(thread, items)

    def _nested(self, thread: _Thread, ts: np.ndarray, dur: np.ndarray, what: np.ndarray) -> bool:
        stack = thread.stack
        got = nest(
            np.array([e[0] for e in stack], dtype=np.float64),
            np.array([e[1] for e in stack], dtype=np.float64),
            ts,
            dur,
            MAX_DEPTH,
        )
        if got is None:
            return False
        names = self.names
        all_ids = np.concatenate([np.array([self._ids[e[2]] for e in stack], dtype=np.int64), what])
        closed = got.closed
        if len(closed):
            ids = all_ids[closed]
            uniq, first, inv = np.unique(ids, return_index=True, return_inverse=True)
            ops = thread.ops
            for k in np.argsort(first, kind="stable").tolist():  # new names as they close
                if names[uniq[k]] not in ops:
                    ops[names[uniq[k]]] = Tally()
            slots = [ops[names[i]] for i in uniq.tolist()]
            totals = np.array([t.total for t in slots], dtype=np.float64)
            vals = got.self_us[closed]
            inv = inv.reshape(-1)
            np.add.at(totals, inv, np.where(vals > 0.0, vals, 0.0))
            counts = np.bincount(inv, minlength=len(slots)).tolist()
            for slot, c, t in zip(slots, counts, totals.tolist()):
                slot.count += c
                slot.total = t
        top = got.top
        if len(top):
            lo, hi = thread.tops.cols
            lo.frombytes(ts[top].tobytes())
            hi.frombytes((ts[top] + dur[top]).tobytes())
        end = np.concatenate([np.array([e[0] for e in stack]), ts + dur])
        thread.stack = [
            [e, v, names[k]]
            for k, e, v in zip(
                all_ids[got.still].tolist(),
                end[got.still].tolist(),
                got.self_us[got.still].tolist(),
            )
        ]
        return True

    def _take_each(self, thread: _Thread, items: _Cols) -> None:
        """``_take_all`` one item at a time, on the stack."""
        stack = thread.stack
        last, late = thread.last, thread.late
        ops = thread.ops
        names = self.names
        top_lo, top_hi = thread.tops.cols
        for ts, kind, order, seq, what in zip(*(c.tolist() for c in items)):
            if ts < last:
                late += 1
            last = ts
            if kind == ALLOC:
                size, dev = thread.allocs.pop(seq)
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
            stack.append([ts + dur, dur, names[what]])
        thread.last, thread.late = last, late

    def finish(self, ops: dict[str, Tally]) -> tuple[int, int]:
        """Empty every heap and stack, the self times added to ``ops``; how many ops came out
        of order, and how many found the stack too deep."""
        from mindspeed_prof.analysis.readers.model import merge_tallies

        self.flush()
        late = deep = 0
        for thread in self.threads.values():
            heap = thread.heap
            thread.heap = _empty()
            self._take_all(thread, _take(heap, np.lexsort((heap[3], heap[2], heap[1], heap[0]))))
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


def _rows(items: list[_Item]) -> _Cols:
    if not items:
        return _empty()
    return tuple(np.array(c, dtype=t) for c, t in zip(zip(*items), _DTYPES))  # type: ignore[return-value]


def _pop(stack: list[list[Any]], ops: dict[str, Tally]) -> None:
    _, self_us, name = stack.pop()
    slot = ops.get(name)
    if slot is None:
        slot = ops[name] = Tally()
    slot.count += 1
    slot.total += max(self_us, 0.0)
