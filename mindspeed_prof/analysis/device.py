"""Device time per step and stage: computation, communication, copies, their overlap, idle time.

Kernels are classified by name as HTA does (``nccl...Kernel`` communication, ``Memcpy``/``Memset``/
``dma`` memory, the rest computation; ``...Sync`` and other ``nccl`` kernels busy but neither), so
the totals over steps equal HTA's temporal breakdown on the same trace.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DeviceOps", "breakdown", "kind_of", "merge", "overlap", "total"]

_COMM = re.compile(r"^(nccl.*Kernel|hccl)", re.IGNORECASE)
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
_NOT_COMPUTE = re.compile(r"^nccl.*Kernel|.*Memcpy|^Memset|.*Sync")

Interval = tuple[float, float]


@functools.lru_cache(maxsize=4096)
def kind_of(name: str) -> str:
    if _COMM.match(name):
        return "comm"
    if _MEMORY.match(name):
        return "memcpy"
    return "other" if _NOT_COMPUTE.match(name) else "compute"


def merge(spans: list[Interval]) -> list[Interval]:
    """The union of ``spans`` as sorted, disjoint intervals."""
    out: list[list[float]] = []
    for ts, end in sorted(spans):
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([ts, end])
    return [(a, b) for a, b in out]


def overlap(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def total(merged: list[Interval], lo: float = float("-inf"), hi: float = float("inf")) -> float:
    """Length of ``merged`` (sorted, disjoint) inside ``[lo, hi)``."""
    i = bisect.bisect_right(merged, (lo, float("inf"))) - 1  # the interval open at lo, if any
    out = 0.0
    for a, b in merged[max(i, 0):]:
        if a >= hi:
            break
        out += max(0.0, min(b, hi) - max(a, lo))
    return out


#: Kind codes of ``DeviceOps.kind``.
KINDS = ("compute", "comm", "memcpy", "other")
_CODE = {k: i for i, k in enumerate(KINDS)}
_IS_COMM = _CODE["comm"]
#: Ops are swept in time slices of about this many ops per stream (bounds the sort's memory).
SLICE = 1 << 16
_INF = float("inf")


class _Stream:
    """One stream's ops in compact columns (29 bytes an op), normally appended in start order."""

    __slots__ = ("end", "in_order", "kind", "launch", "name", "ts")

    def __init__(self) -> None:
        self.ts, self.end, self.launch = array("d"), array("d"), array("d")
        self.kind, self.name = array("b"), array("i")
        self.in_order = True

    def sort(self) -> None:
        """Start order, for a stream whose ops did not arrive so (a copy of it while sorting)."""
        if self.in_order:
            return
        rows = sorted(zip(self.ts, self.end, self.name, self.kind, self.launch))
        cols: tuple[array[Any], ...] = (self.ts, self.end, self.name, self.kind, self.launch)
        for i, col in enumerate(cols):
            col[:] = array(col.typecode, [r[i] for r in rows])
        self.in_order = True


class DeviceOps:
    """Every device op of a trace in compact columns per stream, for ``breakdown``.

    A stream runs its work in order, so its ops usually arrive sorted by start; a stream whose
    ops do not is sorted once at the end. ``launch`` is the host time of the launching call
    (the op's own start where unknown); ``set_launch`` fills it in when the call comes later.
    """

    def __init__(self) -> None:
        self.streams: dict[Any, _Stream] = {}
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self.count = 0

    def add(self, stream: Any, ts: float, end: float, name: str, launch: float) -> tuple[Any, int]:
        """Append an op; returns where it is, for ``set_launch``."""
        col = self.streams.get(stream)
        if col is None:
            col = self.streams[stream] = _Stream()
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
        if col.ts and ts < col.ts[-1]:
            col.in_order = False
        col.ts.append(ts)
        col.end.append(end)
        col.launch.append(launch)
        col.kind.append(_CODE[kind_of(name)])
        col.name.append(i)
        self.count += 1
        return stream, len(col.ts) - 1

    def set_launch(self, where: tuple[Any, int], launch: float) -> None:
        self.streams[where[0]].launch[where[1]] = launch

    def slices(self) -> Iterator[list[tuple[float, float, int, float]]]:
        """Every op as (start, end, kind, launch), in start order, a time slice at a time."""
        cols = list(self.streams.values())
        for col in cols:
            col.sort()
        cuts = sorted({col.ts[k] for col in cols for k in range(SLICE, len(col.ts), SLICE)})
        at = [0] * len(cols)
        for hi in [*cuts, _INF]:
            part: list[tuple[float, float, int, float]] = []
            for c, col in enumerate(cols):
                j = len(col.ts) if hi == _INF else bisect.bisect_left(col.ts, hi, at[c])
                part += zip(col.ts[at[c]:j], col.end[at[c]:j], col.kind[at[c]:j],
                            col.launch[at[c]:j])
                at[c] = j
            part.sort()
            yield part

    def comm_clashes(self) -> list[str]:
        """Names of collectives that start before the previous one on their stream ends."""
        out: list[str] = []
        for col in self.streams.values():
            col.sort()
            prev_end = None
            for ts, end, kind, name in zip(col.ts, col.end, col.kind, col.name):
                if kind != _IS_COMM:
                    continue
                if prev_end is not None and ts < prev_end:
                    out.append(self.names[name])
                prev_end = end
        return out


class _Union:
    """The union of intervals fed in start order; each finished piece goes to ``sinks``."""

    __slots__ = ("a", "b", "sinks")

    def __init__(self, *sinks: Callable[[float, float], None]) -> None:
        self.a, self.b, self.sinks = _INF, -_INF, sinks

    def add(self, ts: float, end: float) -> None:
        if ts <= self.b:
            if end > self.b:
                self.b = end
            return
        self.close()
        self.a, self.b = ts, end

    def close(self) -> None:
        if self.b != -_INF:
            for sink in self.sinks:
                sink(self.a, self.b)
        self.a, self.b = _INF, -_INF


class _Overlap:
    """``overlap`` of two unions' pieces (comm: side 0, compute: side 1) as they close."""

    def __init__(self, sink: Callable[[float, float], None]) -> None:
        self.sides: tuple[deque[Interval], deque[Interval]] = (deque(), deque())
        self.unions: tuple[_Union, _Union] | None = None
        self.sink = sink

    def side(self, k: int) -> Callable[[float, float], None]:
        def add(a: float, b: float) -> None:
            self.sides[k].append((a, b))
            self.drain(k)
        return add

    def drain(self, k: int | None = None) -> None:
        """Pair the pieces in hand. After side ``k`` got one, the other side's next piece starts
        no earlier than its open interval (or, with none open, than the op that closed this
        piece): side ``k``'s pieces that end by then meet nothing more and are dropped."""
        a, b = self.sides
        while a and b:
            (a0, a1), (b0, b1) = a[0], b[0]
            lo, hi = max(a0, b0), min(a1, b1)
            if lo < hi:
                self.sink(lo, hi)
            if a1 < b1:
                a.popleft()
            else:
                b.popleft()
        if k is not None and self.unions is not None:
            mine, other = self.sides[k], self.unions[1 - k]
            bound = other.a if other.b != -_INF else mine[-1][1] if mine else -_INF
            while mine and mine[0][1] <= bound:
                mine.popleft()


class _Sum:
    __slots__ = ("total",)

    def __init__(self) -> None:
        self.total = 0.0

    def add(self, a: float, b: float) -> None:
        self.total += b - a


class _Windows:
    """Lengths of pieces (arriving in order) within each of the sorted windows ``[lo, hi)``."""

    __slots__ = ("at", "his", "los", "totals")

    def __init__(self, los: list[float], his: list[float]) -> None:
        self.los, self.his, self.totals, self.at = los, his, [0.0] * len(los), 0

    def add(self, a: float, b: float) -> None:
        los, his, totals = self.los, self.his, self.totals
        while self.at < len(his) and his[self.at] <= a:
            self.at += 1
        k = self.at
        while k < len(los) and los[k] < b:
            totals[k] += max(0.0, min(b, his[k]) - max(a, los[k]))
            k += 1


class _Group:
    """Device time of a set of ops fed in start order: busy, per kind, comm/compute overlap."""

    def __init__(self, sink: Callable[[], Any]) -> None:
        self.out = {k: sink() for k in ("busy", "compute", "comm", "memcpy", "overlap")}
        self.overlap = _Overlap(self.out["overlap"].add)
        self.busy = _Union(self.out["busy"].add)
        comp = _Union(self.out["compute"].add, self.overlap.side(1))
        comm = _Union(self.out["comm"].add, self.overlap.side(0))
        self.overlap.unions = (comm, comp)
        self.kinds = (comp, comm, _Union(self.out["memcpy"].add), None)
        self.lo, self.hi = _INF, -_INF

    def add(self, ts: float, end: float, kind: int) -> None:
        self.busy.add(ts, end)
        union = self.kinds[kind]
        if union is not None:
            union.add(ts, end)
        if ts < self.lo:
            self.lo = ts
        if end > self.hi:
            self.hi = end

    def close(self) -> None:
        for union in (self.busy, *self.kinds):
            if union is not None:
                union.close()
        self.overlap.drain()


def _row(out: dict[str, Any], lo: float, hi: float, k: int | None = None) -> dict[str, float]:
    def ms(key: str) -> float:
        return (out[key].total if k is None else out[key].totals[k]) / 1e3

    busy = out["busy"].total if k is None else out["busy"].totals[k]
    return {"span_ms": (hi - lo) / 1e3, "busy_ms": busy / 1e3, "compute_ms": ms("compute"),
            "comm_ms": ms("comm"), "overlap_ms": ms("overlap"), "memcpy_ms": ms("memcpy"),
            "idle_ms": (hi - lo - busy) / 1e3}


def breakdown(ops: DeviceOps, steps: list[tuple[int, float, float]],
              stages: list[tuple[str, int | None, float, float]]) -> list[dict[str, Any]]:
    """Rows per step (``stage`` None) and per stage run: device milliseconds by kind.

    An op belongs to the step (stage) whose host range holds its launch. A step's device window
    runs from its first op to the next step's first op (the last one to the last op's end), so the
    windows tile the device timeline and the sums over steps are whole-trace figures. A stage's
    row counts only the ops it launched, from the first to the end of the last. Ops launched
    outside every step form a row with ``step`` None. Two passes over ``ops`` (the first finds
    each step's window), each in start order a slice at a time, so memory stays that of a slice.
    """
    if not ops.count:
        return []
    steps = sorted(steps, key=lambda s: s[1])
    starts = [s[1] for s in steps]

    def step_of(launch: float) -> int | None:
        i = bisect.bisect_right(starts, launch) - 1
        return steps[i][0] if i >= 0 and launch <= steps[i][2] else None

    first: dict[int, float] = {}
    last_end, outside = 0.0, False
    for part in ops.slices():
        for ts, end, _, launch in part:
            n = step_of(launch)
            if n is None:
                outside = True
            else:
                if n not in first:
                    first[n] = ts  # in start order: the first seen is the earliest
                last_end = max(last_end, end)
    firsts = sorted((lo, n) for n, lo in first.items())
    los = [lo for lo, _ in firsts]
    windows = _Group(lambda: _Windows(los, [*los[1:], last_end]))
    rest = _Group(_Sum)
    order = sorted(range(len(stages)), key=lambda i: stages[i][2])
    s_starts = [stages[i][2] for i in order]
    s_ends = [stages[i][2] + stages[i][3] for i in order]
    reach = list(itertools.accumulate(s_ends, max))  # the latest end among stages so far
    runs: dict[int, _Group] = {}
    for part in ops.slices():
        for ts, end, kind, launch in part:
            (rest if step_of(launch) is None else windows).add(ts, end, kind)
            j = bisect.bisect_right(s_starts, launch) - 1
            while j >= 0 and reach[j] >= launch:
                if s_ends[j] >= launch:
                    run = runs.get(order[j])
                    if run is None:
                        run = runs[order[j]] = _Group(_Sum)
                    run.add(ts, end, kind)
                j -= 1
    rows: list[dict[str, Any]] = []
    windows.close()
    for k, (lo, n) in enumerate(firsts):
        hi = firsts[k + 1][0] if k + 1 < len(firsts) else last_end
        rows.append({"step": n, "stage": None, **_row(windows.out, lo, hi, k)})
    if outside:  # not attributable: its own union, not part of the tiling
        rest.close()
        rows.append({"step": None, "stage": None, **_row(rest.out, rest.lo, rest.hi)})
    for i, (name, step, _, _) in enumerate(stages):  # only the ops the stage launched
        if i in runs:
            runs[i].close()
            rows.append({"step": step, "stage": name, **_row(runs[i].out, runs[i].lo,
                                                             runs[i].hi)})
    return rows
