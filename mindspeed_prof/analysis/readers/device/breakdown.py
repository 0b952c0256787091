"""Device time per step and stage: computation, communication, copies, their overlap, idle time.

Ops are classified by ``readers.classify`` (HTA's names for NCCL, copies and the rest, then the
other collective libraries, the trace's own collective arguments and the user's patterns) and
belong to the step whose host range launched them (an op launched before the capture began is
no step's, as HTA drops it), so where only HTA's rules apply the totals over steps equal HTA's
temporal breakdown with ``include_last_profiler_step=True`` on the same trace. Where HTA counts
otherwise it is wrong, each case checked by hand in the breakdown's tests: it rounds
fractional-microsecond times inward (a short kernel shrinks, even below zero), counts CUDA sync
events and host ops that carry a ``stream`` as device work, and ends the last step where its
device-side annotation ends. It also counts ops launched before the first step or between
steps: here they form the row without a step.
"""

from __future__ import annotations

import bisect

import numpy as np

from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.readers.model import DeviceRow

__all__ = ["Interval", "breakdown", "overlap", "total"]

Interval = tuple[float, float]
_INF = float("inf")


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
    for a, b in merged[max(i, 0) :]:
        if a >= hi:
            break
        out += max(0.0, min(b, hi) - max(a, lo))
    return out


_FEW = 8  # pieces under this many are added one at a time (numpy costs more)


def _sum(into: float, values: np.ndarray) -> float:
    """``into`` plus each of ``values`` in order: the float adding them one at a time gives
    (``add.accumulate`` adds in order; ``sum`` would pair them)."""
    out = np.empty(len(values) + 1, dtype=np.float64)
    out[0] = into
    out[1:] = values
    return float(np.add.accumulate(out)[-1])


_BUSY, _COMPUTE, _COMM_T, _MEMCPY, _OVERLAP = range(5)  # what a group totals
_TARGETS = ("busy", "compute", "comm", "memcpy", "overlap")


class _Windows:
    """Lengths within each of the sorted windows ``[lo, hi)``, per target; each target's
    pieces arrive in order."""

    __slots__ = ("at", "his", "his_np", "los", "los_np", "totals")

    def __init__(self, los: list[float], his: list[float]) -> None:
        self.los, self.his = los, his
        self.los_np = np.array(los, dtype=np.float64)
        self.his_np = np.array(his, dtype=np.float64)  # in order too: each window's end
        self.totals = [[0.0] * len(los) for _ in _TARGETS]
        self.at = [0] * len(_TARGETS)

    def add_many(self, target: int, a: np.ndarray, b: np.ndarray) -> None:
        """``add`` of each piece in order: every (piece, window) share found in numpy, each
        window's shares then added in piece order (the same floats)."""
        k0 = np.maximum(np.searchsorted(self.his_np, a, "right"), self.at[target])
        self.at[target] = int(k0[-1])
        n = np.maximum(np.searchsorted(self.los_np, b, "left") - k0, 0)
        if not n.any():
            return
        piece = np.repeat(np.arange(len(a)), n)
        starts = np.cumsum(n) - n
        k = k0[piece] + (np.arange(len(piece)) - starts[piece])
        share = np.maximum(
            0.0, np.minimum(b[piece], self.his_np[k]) - np.maximum(a[piece], self.los_np[k])
        )
        order = np.argsort(k, kind="stable")
        k, share = k[order], share[order]
        windows, at = np.unique(k, return_index=True)
        totals = self.totals[target]
        for w, part in zip(windows.tolist(), np.split(share, at[1:])):
            totals[w] = _sum(totals[w], part)

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

    def add_many(self, ts: np.ndarray, end: np.ndarray, kind: np.ndarray) -> None:
        """Ops in start order (a slice of them): each union's pieces found in numpy, then
        closed in order (the same pieces and sums as feeding the ops one at a time)."""
        if not len(ts):
            return
        self._union(_BUSY, ts, end)
        for u in (_COMPUTE, _COMM_T, _MEMCPY):
            mine = kind == u - 1
            if mine.any():
                self._union(u, ts[mine], end[mine])
        self.lo = min(self.lo, float(ts.min()))
        self.hi = max(self.hi, float(end.max()))
        # the other side's next piece starts no earlier than its open one or than this last op
        self._trim(float(ts[-1]))

    def _union(self, u: int, ts: np.ndarray, end: np.ndarray) -> None:
        """One union's ops: a piece grows while the next op starts by its end; the pieces that
        close, in order, and the last one left open."""
        o, i = self.open, 2 * u
        reach = np.maximum.accumulate(end)
        if o[i + 1] != -_INF:
            np.maximum(reach, o[i + 1], out=reach)
        new = np.empty(len(ts), dtype=bool)
        new[0] = bool(ts[0] > o[i + 1])
        np.greater(ts[1:], reach[:-1], out=new[1:])
        firsts = np.flatnonzero(new)
        if not len(firsts):
            o[i + 1] = float(reach[-1])
            return
        los = ts[firsts].tolist()
        his = reach[firsts[1:] - 1].tolist()
        if o[i + 1] != -_INF:  # the open piece closes at this slice's first new one
            los.insert(0, o[i])
            his.insert(0, float(reach[firsts[0] - 1]) if firsts[0] else o[i + 1])
        if his:  # every piece but the last, which stays open
            self._pieces(u, los[: len(his)], his)
        o[i], o[i + 1] = los[-1], float(reach[-1])

    def _trim(self, bound: float) -> None:
        """Drop each side's pieces that end by where the other side's next piece can start."""
        for k, other in ((0, 2 * _COMPUTE), (1, 2 * _COMM_T)):
            mine = self.sides[k]
            at = self.open[other] if self.open[other + 1] != -_INF else bound
            n = 0
            while n < len(mine) and mine[n][1] <= at:
                n += 1
            del mine[:n]

    def _put(self, target: int, a: float, b: float) -> None:
        if self.windows is None:
            self.totals[target] += b - a
        else:
            self.windows.add(target, a, b)

    def _put_many(self, target: int, a: list[float], b: list[float]) -> None:
        if len(a) < _FEW:
            for x, y in zip(a, b):
                self._put(target, x, y)
        elif self.windows is None:
            self.totals[target] = _sum(self.totals[target], np.subtract(b, a))
        else:
            self.windows.add_many(target, np.array(a), np.array(b))

    def _piece(self, u: int, a: float, b: float) -> None:
        self._put(u, a, b)
        if u in (_COMPUTE, _COMM_T):
            k = 0 if u == _COMM_T else 1
            self.sides[k].append((a, b))
            self._pair(k)

    def _pieces(self, u: int, a: list[float], b: list[float]) -> None:
        """``_piece`` of each, their overlaps walked once (``_trim`` drops what they pass)."""
        self._put_many(u, a, b)
        if u in (_COMPUTE, _COMM_T):
            self.sides[0 if u == _COMM_T else 1].extend(zip(a, b))
            self._pair(None)

    def _pair(self, k: int | None) -> None:
        """``overlap``'s walk over the pieces in hand. After side ``k`` got one, the other
        side's next piece starts no earlier than its open one (or, none open, than the op that
        closed this piece): side ``k``'s pieces that end by then meet nothing more."""
        a, b = self.sides
        i = j = 0
        los: list[float] = []
        his: list[float] = []
        while i < len(a) and j < len(b):
            (a0, a1), (b0, b1) = a[i], b[j]
            lo, hi = max(a0, b0), min(a1, b1)
            if lo < hi:
                los.append(lo)
                his.append(hi)
            if a1 < b1:
                i += 1
            else:
                j += 1
        del a[:i], b[:j]
        if los:
            self._put_many(_OVERLAP, los, his)
        if k is not None:
            mine, other = self.sides[k], 2 * (_COMM_T if k == 1 else _COMPUTE)
            bound = (
                self.open[other]
                if self.open[other + 1] != -_INF
                else (mine[-1][1] if mine else -_INF)
            )
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

    def row(
        self, step: int | None, stage: str | None, lo: float, hi: float, k: int | None = None
    ) -> DeviceRow:
        us = (
            self.totals
            if k is None or self.windows is None
            else [w[k] for w in self.windows.totals]
        )
        return DeviceRow(
            step=step,
            stage=stage,
            span_ms=(hi - lo) / 1e3,
            busy_ms=us[_BUSY] / 1e3,
            compute_ms=us[_COMPUTE] / 1e3,
            comm_ms=us[_COMM_T] / 1e3,
            overlap_ms=us[_OVERLAP] / 1e3,
            memcpy_ms=us[_MEMCPY] / 1e3,
            idle_ms=(hi - lo - us[_BUSY]) / 1e3,
        )


class _StepOf:
    """Each op's step's index in ``steps`` (sorted by start; -1: none): the last step that
    starts by its launch, if it ends at or after it (``bisect_right``)."""

    def __init__(self, steps: list[tuple[int, float, float]]) -> None:
        self.starts = np.array([s[1] for s in steps], dtype=np.float64)
        self.ends = np.array([s[2] for s in steps], dtype=np.float64)

    def __call__(self, launch: np.ndarray) -> np.ndarray:
        i = np.searchsorted(self.starts, launch, "right") - 1
        if not len(self.ends):
            return i
        return np.where((i >= 0) & (launch <= self.ends[np.maximum(i, 0)]), i, -1)


def _windows(
    ops: DeviceOps, steps: list[tuple[int, float, float]], step_of: _StepOf
) -> tuple[list[tuple[float, int]], float, bool]:
    """The first pass: each step's first op (start, step number) in start order, the last
    end of an op a step launched, and whether an op was launched outside every step."""
    first: dict[int, float] = {}
    last_end, outside = 0.0, False
    for ts, end, _, launch in ops.columns():
        idx = step_of(launch)
        inside = idx >= 0
        if not inside.all():
            outside = True
        if inside.any():
            kept, at = np.unique(idx[inside], return_index=True)
            ts_in = ts[inside]
            for pos, k in sorted(zip(at.tolist(), kept.tolist())):
                first.setdefault(steps[k][0], float(ts_in[pos]))  # the first seen: earliest
            last_end = max(last_end, float(end[inside].max()))
    return sorted((lo, n) for n, lo in first.items()), last_end, outside


class _StageRuns:
    """The second pass, a slice at a time: each op to the steps' windows or the rest, and to
    each stage run that launched it (its launch within the run's host range)."""

    def __init__(self, stages: list[tuple[str, int | None, float, float]]) -> None:
        self.order = sorted(range(len(stages)), key=lambda i: stages[i][2])
        self.starts = np.array([stages[i][2] for i in self.order], dtype=np.float64)
        self.ends = np.array([stages[i][2] + stages[i][3] for i in self.order], dtype=np.float64)
        self.reach = np.maximum.accumulate(self.ends) if len(self.ends) else self.ends
        self.runs: dict[int, _Group] = {}

    def feed(
        self,
        ts: np.ndarray,
        end: np.ndarray,
        kind: np.ndarray,
        launch: np.ndarray,
        inside: np.ndarray,
        windows: _Group,
        rest: _Group,
    ) -> None:
        """A slice of ops: each to the steps' windows (``inside``: a step launched it) or to
        ``rest``, and to each stage run that launched it."""
        windows.add_many(ts[inside], end[inside], kind[inside])
        rest.add_many(ts[~inside], end[~inside], kind[~inside])
        if not len(self.ends):
            return
        below = np.searchsorted(self.starts, launch, "right") - 1
        at = np.maximum(below, 0)
        ends, reach = self.ends, self.reach
        # the usual: only the stage run that starts last by the launch can hold it
        first = (below >= 0) & (ends[at] >= launch)
        deeper = (below >= 1) & (reach[np.maximum(below - 1, 0)] >= launch)
        members: dict[int, list[int]] = {}
        sel = np.flatnonzero(first & ~deeper)
        sel = sel[np.argsort(below[sel], kind="stable")]
        js, cut = np.unique(below[sel], return_index=True)
        for j, part in zip(js.tolist(), np.split(sel, cut[1:])):
            members[j] = part.tolist()
        for i in np.flatnonzero(deeper).tolist():  # nested or overlapping runs: walk them
            j, when = int(below[i]), float(launch[i])
            while j >= 0 and reach[j] >= when:
                if ends[j] >= when:
                    members.setdefault(j, []).append(i)
                j -= 1
        for j, rows in members.items():
            idx = np.array(sorted(rows), dtype=np.intp)
            run = self.runs.get(self.order[j])
            if run is None:
                run = self.runs[self.order[j]] = _Group()
            run.add_many(ts[idx], end[idx], kind[idx])


def breakdown(
    ops: DeviceOps,
    steps: list[tuple[int, float, float]],
    stages: list[tuple[str, int | None, float, float]],
) -> list[DeviceRow]:
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
    step_of = _StepOf(steps)
    firsts, last_end, outside = _windows(ops, steps, step_of)
    los = [lo for lo, _ in firsts]
    windows = _Group(_Windows(los, [*los[1:], last_end]))
    rest = _Group()
    runs = _StageRuns(stages)
    for ts, end, kind, launch in ops.columns():
        runs.feed(ts, end, kind, launch, step_of(launch) >= 0, windows, rest)
    rows: list[DeviceRow] = []
    windows.close()
    for k, (lo, n) in enumerate(firsts):
        hi = firsts[k + 1][0] if k + 1 < len(firsts) else last_end
        rows.append(windows.row(n, None, lo, hi, k))
    if outside:  # not attributable: its own union, not part of the tiling
        rest.close()
        rows.append(rest.row(None, None, rest.lo, rest.hi))
    for i, (name, step, _, _) in enumerate(stages):  # only the ops the stage launched
        run = runs.runs.get(i)
        if run is not None:
            run.close()
            rows.append(run.row(step, name, run.lo, run.hi))
    return rows
