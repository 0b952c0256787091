"""Device time per step and stage: computation, communication, copies, their overlap, idle time.

Kernels are classified by name as HTA does (``nccl...Kernel`` communication, ``Memcpy``/``Memset``/
``dma`` memory, the rest computation; ``...Sync`` and other ``nccl`` kernels busy but neither) and
belong to the step whose host range launched them (an op launched before the capture began is no
step's, as HTA drops it), so the totals over steps equal HTA's temporal breakdown with
``include_last_profiler_step=True`` on the same trace. Where HTA counts otherwise it is wrong,
each case checked by hand in ``tests/analysis/test_device.py``: it rounds fractional-microsecond
times inward (a short kernel shrinks, even below zero), counts CUDA sync events and host ops that
carry a ``stream`` as device work, and ends the last step where its device-side annotation ends.
It also counts ops launched before the first step or between steps: here they form the row
without a step.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import tempfile
from array import array
from collections.abc import Iterator
from typing import IO, Any

from mindspeed_prof.analysis.readers.model import DeviceRow, LaunchStats, StreamIdle

__all__ = ["KERNEL_WAIT_US", "LATE_US", "LAUNCH_CALLS", "PROMPT_US", "SLOW_CALL_US", "TINY_US",
           "DeviceOps",
           "breakdown", "kind_of", "merge", "overlap", "stream_facts", "total"]

_COMM = re.compile(r"^(nccl.*Kernel|hccl)", re.IGNORECASE)
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
_NOT_COMPUTE = re.compile(r"^nccl.*Kernel|.*Memcpy|^Memset|.*Sync")

Interval = tuple[float, float]

#: HTA's ``get_idle_time_breakdown`` default ``consecutive_kernel_delay``: a gap between two ops
#: on a stream shorter than this (us: HTA's docstring says ns, but it compares it with the
#: trace's microseconds) is kernel wait, the delay of launching back-to-back kernels.
KERNEL_WAIT_US = 30.0
#: Launch calls whose device op launch statistics count: HTA's (``cudaLaunchKernel``,
#: ``cudaLaunchKernelExC``, ``cudaMemcpyAsync``, ``cudaMemsetAsync``) and the driver API's
#: ``cuLaunchKernel``/``cuLaunchKernelEx`` (Triton launches through it; HTA leaves them out).
#: A graph launch (``cudaGraphLaunch``) runs many ops under one call: not counted.
LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync",
                          "cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernelEx"})
#: HTA's ``get_cuda_kernel_launch_stats`` defaults: a launch call longer than this (us) is an
#: outlier (``runtime_cutoff``), as is a launch delay longer than ``LATE_US``.
SLOW_CALL_US = 50.0
LATE_US = 100.0
#: An op shorter than this (us) on the device is tiny: its launch costs about as much.
TINY_US = 10.0
#: An op that starts within this (us) of its launch call's end ran as soon as it could be: the
#: device was waiting for it (a queued op starts later, when the work ahead of it is done).
#: A call over ``SLOW_CALL_US`` did more than launch (it blocked on a full launch queue, or
#: copied pageable memory while the device worked): its op is not counted so.
PROMPT_US = 30.0


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
SLICE = 1 << 14
_INF = float("inf")


_COLS = "ddddbi"  # start, end, launch (us), launch call (us, NaN: none counted), kind, name id
_WIDTH = sum(array(t).itemsize for t in _COLS)  # bytes an op
_Row = tuple[float, float, int, float]  # start, end, kind, launch
_NAN = float("nan")


class _Stream:
    """One stream's ops in compact columns (``_WIDTH`` bytes an op). A stream runs its work in
    order, so ops usually come sorted by start: each full block of ``SLICE`` then goes to a
    temporary file and memory keeps one block. A stream that came out of order is read back
    whole and sorted at the end (its memory then grows with it)."""

    __slots__ = ("cols", "file", "in_order", "last", "marks", "spilled")

    def __init__(self) -> None:
        self.cols: list[array[Any]] = [array(t) for t in _COLS]
        self.file: IO[bytes] | None = None
        self.spilled = 0  # blocks in the file
        self.in_order = True
        self.last = -_INF  # the latest start so far
        self.marks: list[float] = []  # each spilled block's first start

    def __len__(self) -> int:
        return self.spilled * SLICE + len(self.cols[0])

    def append(self, row: tuple[float, float, float, float, int, int]) -> None:
        ts = self.cols[0]
        if row[0] < self.last:
            self.in_order = False
        self.last = row[0]
        for col, value in zip(self.cols, row):
            col.append(value)
        if len(ts) == SLICE and self.in_order:
            if self.file is None:
                self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            self.file.seek(0, 2)
            self.marks.append(ts[0])
            for col in self.cols:
                col.tofile(self.file)
                del col[:]
            self.spilled += 1

    def set_launch(self, i: int, launch: float, call: float | None = None) -> None:
        """Op ``i``'s launch time and, unless None, its launch call's duration."""
        k, j = divmod(i, SLICE)
        if k >= self.spilled:
            self.cols[2][i - self.spilled * SLICE] = launch
            if call is not None:
                self.cols[3][i - self.spilled * SLICE] = call
        else:
            assert self.file is not None
            self.file.seek(k * SLICE * _WIDTH + 2 * SLICE * 8 + j * 8)
            self.file.write(array("d", [launch]).tobytes())
            if call is not None:
                self.file.seek(k * SLICE * _WIDTH + 3 * SLICE * 8 + j * 8)
                self.file.write(array("d", [call]).tobytes())

    def blocks(self) -> Iterator[list[array[Any]]]:
        """The columns a block at a time, in order."""
        for k in range(self.spilled):
            assert self.file is not None
            self.file.seek(k * SLICE * _WIDTH)
            block = [array(t) for t in _COLS]
            for col in block:
                col.fromfile(self.file, SLICE)
            yield block
        yield self.cols

    def sort(self) -> None:
        """Start order, for a stream whose ops did not come so (all of it in memory)."""
        if self.in_order:
            return
        cols = [array(t) for t in _COLS]
        for block in self.blocks():
            for col, part in zip(cols, block):
                col.extend(part)
        rows = sorted(zip(*cols))
        del cols
        self.cols = [array(t, [r[c] for r in rows]) for c, t in enumerate(_COLS)]
        self.close()
        self.marks = [self.cols[0][k] for k in range(SLICE, len(rows), SLICE)]
        self.in_order = True

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file, self.spilled = None, 0


class _Cursor:
    """Reads a sorted stream forward: ``take(hi)`` gives its next ops that start before hi."""

    def __init__(self, stream: _Stream) -> None:
        self.blocks = stream.blocks()
        self.block = next(self.blocks)
        self.at = 0

    def take(self, hi: float, out: list[_Row]) -> None:
        while self.block is not None:
            ts, end, launch, _, kind, _ = self.block
            j = bisect.bisect_left(ts, hi, self.at)
            out += zip(ts[self.at:j], end[self.at:j], kind[self.at:j], launch[self.at:j])
            if j < len(ts):
                self.at = j
                return
            self.block, self.at = next(self.blocks, None), 0  # type: ignore[arg-type]


class DeviceOps:
    """Every device op of a trace, per stream, for ``breakdown`` (see ``_Stream``).

    ``launch`` is the host time of the launching call (the op's own start where unknown, minus
    infinity where it came before the capture); ``set_launch`` fills it in when the call comes
    later. ``close`` removes the spilled blocks.
    """

    def __init__(self) -> None:
        self.streams: dict[Any, _Stream] = {}
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        self.count = 0

    def add(self, stream: Any, ts: float, end: float, name: str, launch: float,
            call: float = _NAN) -> tuple[Any, int]:
        """Append an op (``call``: its launch call's duration, where it is one that
        ``LAUNCH_CALLS`` counts); returns where it is, for ``set_launch``."""
        col = self.streams.get(stream)
        if col is None:
            col = self.streams[stream] = _Stream()
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
        where = (stream, len(col))
        col.append((ts, end, launch, call, _CODE[kind_of(name)], i))
        self.count += 1
        return where

    def set_launch(self, where: tuple[Any, int], launch: float,
                   call: float | None = None) -> None:
        self.streams[where[0]].set_launch(where[1], launch, call)

    def slices(self) -> Iterator[list[_Row]]:
        """Every op as (start, end, kind, launch), in start order, a time slice at a time: at
        most a block of each stream."""
        for col in self.streams.values():
            col.sort()
        cuts = sorted({t for col in self.streams.values() for t in col.marks})
        cursors = [_Cursor(col) for col in self.streams.values()]
        for hi in [*cuts, _INF]:
            part: list[_Row] = []
            for cursor in cursors:
                cursor.take(hi, part)
            part.sort()
            yield part

    def comm_clashes(self) -> list[str]:
        """Names of collectives that start before the previous one on their stream ends."""
        out: list[str] = []
        for col in self.streams.values():
            col.sort()
            prev_end = None
            for ts, end, _, _, kind, name in (row for block in col.blocks()
                                           for row in zip(*block)):
                if kind != _IS_COMM:
                    continue
                if prev_end is not None and ts < prev_end:
                    out.append(self.names[name])
                prev_end = end
        return out

    def close(self) -> None:
        for col in self.streams.values():
            col.close()


_BUSY, _COMPUTE, _COMM_T, _MEMCPY, _OVERLAP = range(5)  # what a group totals
_TARGETS = ("busy", "compute", "comm", "memcpy", "overlap")


class _Windows:
    """Lengths within each of the sorted windows ``[lo, hi)``, per target; each target's
    pieces arrive in order."""

    __slots__ = ("at", "his", "los", "totals")

    def __init__(self, los: list[float], his: list[float]) -> None:
        self.los, self.his = los, his
        self.totals = [[0.0] * len(los) for _ in _TARGETS]
        self.at = [0] * len(_TARGETS)

    def add(self, target: int, a: float, b: float) -> None:
        los, his, totals = self.los, self.his, self.totals[target]
        k = self.at[target]
        while k < len(his) and his[k] <= a:
            k += 1
        self.at[target] = k
        while k < len(los) and los[k] < b:
            totals[k] += max(0.0, min(b, his[k]) - max(a, los[k]))
            k += 1


class _Group:
    """Device time of a set of ops fed in start order: the union of all of them (busy), of each
    kind, and the overlap of the comm and compute unions; summed, or per window of ``windows``.

    Flat state (a stage run has one), pieces closed as the next op starts past them: the same
    pieces, in the same order, as ``merge`` and ``overlap`` make of the whole lists.
    """

    __slots__ = ("hi", "lo", "open", "sides", "totals", "windows")

    def __init__(self, windows: _Windows | None = None) -> None:
        self.open = [_INF, -_INF] * 4  # the open piece [a, b] of busy, compute, comm, memcpy
        self.sides: tuple[list[Interval], list[Interval]] = ([], [])  # comm, compute unpaired
        self.totals = [0.0] * len(_TARGETS)
        self.windows = windows
        self.lo, self.hi = _INF, -_INF

    def add(self, ts: float, end: float, kind: int) -> None:
        self._feed(_BUSY, ts, end)
        if kind < len(KINDS) - 1:  # compute, comm, memcpy: targets 1..3
            self._feed(kind + 1, ts, end)
        if ts < self.lo:
            self.lo = ts
        if end > self.hi:
            self.hi = end

    def _feed(self, u: int, ts: float, end: float) -> None:
        o, i = self.open, 2 * u
        if ts <= o[i + 1]:
            if end > o[i + 1]:
                o[i + 1] = end
            return
        if o[i + 1] != -_INF:
            self._piece(u, o[i], o[i + 1])
        o[i], o[i + 1] = ts, end

    def _put(self, target: int, a: float, b: float) -> None:
        if self.windows is None:
            self.totals[target] += b - a
        else:
            self.windows.add(target, a, b)

    def _piece(self, u: int, a: float, b: float) -> None:
        self._put(u, a, b)
        if u in (_COMPUTE, _COMM_T):
            k = 0 if u == _COMM_T else 1
            self.sides[k].append((a, b))
            self._pair(k)

    def _pair(self, k: int | None) -> None:
        """``overlap``'s walk over the pieces in hand. After side ``k`` got one, the other
        side's next piece starts no earlier than its open one (or, none open, than the op that
        closed this piece): side ``k``'s pieces that end by then meet nothing more."""
        a, b = self.sides
        i = j = 0
        while i < len(a) and j < len(b):
            (a0, a1), (b0, b1) = a[i], b[j]
            lo, hi = max(a0, b0), min(a1, b1)
            if lo < hi:
                self._put(_OVERLAP, lo, hi)
            if a1 < b1:
                i += 1
            else:
                j += 1
        del a[:i], b[:j]
        if k is not None:
            mine, other = self.sides[k], 2 * (_COMM_T if k == 1 else _COMPUTE)
            bound = self.open[other] if self.open[other + 1] != -_INF else (
                mine[-1][1] if mine else -_INF)
            n = 0
            while n < len(mine) and mine[n][1] <= bound:
                n += 1
            del mine[:n]

    def close(self) -> None:
        for u in range(4):
            if self.open[2 * u + 1] != -_INF:
                a, b = self.open[2 * u], self.open[2 * u + 1]
                self.open[2 * u], self.open[2 * u + 1] = _INF, -_INF
                self._piece(u, a, b)
        self._pair(None)

    def row(self, step: int | None, stage: str | None, lo: float, hi: float,
            k: int | None = None) -> DeviceRow:
        us = self.totals if k is None or self.windows is None else [
            w[k] for w in self.windows.totals]
        return DeviceRow(step=step, stage=stage, span_ms=(hi - lo) / 1e3,
                         busy_ms=us[_BUSY] / 1e3, compute_ms=us[_COMPUTE] / 1e3,
                         comm_ms=us[_COMM_T] / 1e3, overlap_ms=us[_OVERLAP] / 1e3,
                         memcpy_ms=us[_MEMCPY] / 1e3, idle_ms=(hi - lo - us[_BUSY]) / 1e3)


def breakdown(ops: DeviceOps, steps: list[tuple[int, float, float]],
              stages: list[tuple[str, int | None, float, float]]) -> list[DeviceRow]:
    """Rows per step (``stage`` None) and per stage run: device milliseconds by kind.

    An op belongs to the step (stage) whose host range holds its launch. A step's device window
    runs from its first op to the next step's first op (the last one to the last op's end), so the
    windows tile the device timeline and the sums over steps are whole-trace figures. A stage's
    row counts only the ops it launched, from the first to the end of the last. Ops launched
    outside every step (``launch`` minus infinity: before the capture) form a row with ``step``
    None. Two passes over ``ops`` (the first finds each step's window), each in start order a
    slice at a time, so memory stays that of a slice.
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
    windows = _Group(_Windows(los, [*los[1:], last_end]))
    rest = _Group()
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
                        run = runs[order[j]] = _Group()
                    run.add(ts, end, kind)
                j -= 1
    rows: list[DeviceRow] = []
    windows.close()
    for k, (lo, n) in enumerate(firsts):
        hi = firsts[k + 1][0] if k + 1 < len(firsts) else last_end
        rows.append(windows.row(n, None, lo, hi, k))
    if outside:  # not attributable: its own union, not part of the tiling
        rest.close()
        rows.append(rest.row(None, None, rest.lo, rest.hi))
    for i, (name, step, _, _) in enumerate(stages):  # only the ops the stage launched
        if i in runs:
            runs[i].close()
            rows.append(runs[i].row(step, name, runs[i].lo, runs[i].hi))
    return rows


def stream_facts(ops: DeviceOps, steps: list[tuple[int, float, float]]
                 ) -> tuple[list[StreamIdle], list[LaunchStats]]:
    """Per step, each stream's idle time split as HTA's ``get_idle_time_breakdown`` splits it,
    and the step's kernel launches as HTA's ``get_cuda_kernel_launch_stats`` counts them.

    The ops are those a step launched (HTA keeps only those where a trace has two steps or
    more); in a trace without steps, every op (``step`` None). On each stream, in start order,
    the gap before an op (its start less the end of the op before it) is host wait when it
    was launched after that op ended, else kernel wait when under ``KERNEL_WAIT_US``, else
    other; a launch at or after the op's own start is none recorded (the fallback of an op
    whose call is not in the trace), never host wait. An op whose launch call ``LAUNCH_CALLS``
    counts adds to its step's ``LaunchStats``; a short one (shorter than its call, which took
    at most ``SLOW_CALL_US``) that started within ``PROMPT_US`` of the call's end is
    ``starved``. One pass, a block of a
    stream at a time.
    """
    if not ops.count:
        return [], []
    steps = sorted(steps, key=lambda s: s[1])
    starts = [s[1] for s in steps]
    idle: dict[tuple[int | None, Any], list[float]] = {}
    calls: dict[int | None, list[float]] = {}
    for key, col in ops.streams.items():
        col.sort()
        prev = None  # the end of the stream's previous op counted
        for block in col.blocks():
            for ts, end, launch, call, _, _ in zip(*block):
                if steps:
                    i = bisect.bisect_right(starts, launch) - 1
                    if i < 0 or launch > steps[i][2]:
                        continue  # launched outside every step: no step's (HTA drops it)
                    n: int | None = steps[i][0]
                else:
                    n = None
                slot = idle.get((n, key))
                if slot is None:
                    slot = idle[(n, key)] = [0.0] * 5  # ops, busy, host, kernel, other
                slot[0] += 1
                slot[1] += end - ts
                if prev is not None:
                    gap = ts - prev
                    if prev < launch < ts:
                        slot[2] += gap
                    elif gap < KERNEL_WAIT_US:
                        slot[3] += gap
                    else:
                        slot[4] += gap
                prev = end
                if call == call:  # a counted launch call (NaN otherwise)
                    dur = end - ts
                    c = calls.get(n)
                    if c is None:
                        c = calls[n] = [0.0] * 13
                    c[0] += 1
                    c[1] += call
                    c[2] += dur
                    delay = ts - launch - call
                    if dur < call:
                        c[3] += 1
                        c[4] += call
                        c[5] += dur
                        if delay < PROMPT_US and call <= SLOW_CALL_US:
                            c[10] += 1
                            c[11] += call
                            c[12] += dur
                    if dur < TINY_US:
                        c[6] += 1
                    if delay > 0:
                        c[7] += delay
                    if call > SLOW_CALL_US:
                        c[8] += 1
                    if delay > LATE_US:
                        c[9] += 1
    order: dict[int | None, int] = {n: k for k, (n, _, _) in enumerate(steps)}
    named = sorted(((n, *_names(key)), v) for (n, key), v in idle.items())
    named.sort(key=lambda kv: order.get(kv[0][0], -1))  # steps in order, streams by name
    rows = [StreamIdle(step=n, device=dev, stream=stream, ops=int(v[0]), busy_ms=v[1] / 1e3,
                       host_wait_ms=v[2] / 1e3, kernel_wait_ms=v[3] / 1e3, other_ms=v[4] / 1e3)
            for (n, dev, stream), v in named]
    stats = [LaunchStats(step=n, launches=int(c[0]), cpu_ms=c[1] / 1e3, gpu_ms=c[2] / 1e3,
                         short=int(c[3]), short_cpu_ms=c[4] / 1e3, short_gpu_ms=c[5] / 1e3,
                         tiny=int(c[6]), delay_ms=c[7] / 1e3, slow_calls=int(c[8]),
                         late=int(c[9]), starved=int(c[10]), starved_cpu_ms=c[11] / 1e3,
                         starved_gpu_ms=c[12] / 1e3)
             for n, c in sorted(calls.items(), key=lambda kv: order.get(kv[0], -1))]
    return rows, stats


def _names(stream: Any) -> tuple[str, str]:
    """A stream key's device and stream names: the reader's keys are (pid, stream)."""
    if isinstance(stream, tuple) and len(stream) == 2:
        return str(stream[0]), str(stream[1])
    return "", str(stream)
