"""Every device op of a trace, kept per stream in compact columns (``DeviceOps``), for the
breakdown (``breakdown``) and the streams' facts (``streams``).

An op is kept with its name (and whether the trace gives it c10d's collective arguments), not
its kind: ``classify`` decides kinds once the whole trace is read, by the table of
``readers.classify`` and the patterns the capture records (``comm_kernels``) or the user gives,
and counts how many ops and how much device time each rule classified.
"""

from __future__ import annotations

import bisect
import tempfile
from array import array
from collections.abc import Iterator
from typing import IO, Any, Union

import numpy as np

from mindspeed_prof.analysis.readers.classify import KINDS, Classifier, classifier
from mindspeed_prof.analysis.readers.events import Id, Lane
from mindspeed_prof.analysis.readers.model import Tally
from mindspeed_prof.analysis.readers.totals import Totals, ids_of

__all__ = ["KINDS", "SLICE", "DeviceOps"]

_CODE = {k: i for i, k in enumerate(KINDS)}  # a kind's code in ``DeviceOps.codes``
_IS_COMM = _CODE["comm"]
#: Ops are swept in time slices of about this many ops per stream (bounds the sort's memory).
SLICE = 1 << 14
_INF = float("inf")


_COLS = "ddddi"  # start, end, launch (us), launch call (us, NaN: none counted), name id
_WIDTH = sum(array(t).itemsize for t in _COLS)  # bytes an op
_Row = tuple[float, float, int, float]  # start, end, kind, launch
#: What ``totals`` knows an op by: its name, or (name, True) for a collective.
_Key = Union[str, tuple[str, bool]]
_NAN = float("nan")


class _Stream:
    """One stream's ops in compact columns (``_WIDTH`` bytes an op). A stream runs its work in
    order, so ops usually come sorted by start: each full block of ``SLICE`` then goes to a
    temporary file and memory keeps one block. A stream that came out of order is read back
    whole and sorted at the end (its memory then grows with it)."""

    __slots__ = ("cols", "file", "in_order", "last", "marks", "n", "spilled")

    def __init__(self) -> None:
        self.cols: list[array[Any]] = [array(t) for t in _COLS]
        self.file: IO[bytes] | None = None
        self.spilled = 0  # blocks in the file
        self.in_order = True
        self.last = -_INF  # the latest start so far
        self.marks: list[float] = []  # each spilled block's first start
        self.n = 0  # ops appended

    def __len__(self) -> int:
        return self.spilled * SLICE + len(self.cols[0])

    def append(self, ts: float, end: float, launch: float, call: float, name: int) -> None:
        if ts < self.last:
            self.in_order = False
        self.last = ts
        cols = self.cols
        cols[0].append(ts)
        cols[1].append(end)
        cols[2].append(launch)
        cols[3].append(call)
        cols[4].append(name)
        self.n += 1
        if len(cols[0]) == SLICE and self.in_order:
            self._spill()

    def extend(
        self,
        ts: np.ndarray,
        end: np.ndarray,
        launch: np.ndarray,
        call: np.ndarray,
        name: np.ndarray,
    ) -> None:
        """``append`` for each row of these columns, in order (the same blocks and spills)."""
        n = len(ts)
        if not n:
            return
        out = np.flatnonzero(ts[1:] < ts[:-1])
        # the first op that comes out of order (against the one before it)
        bad = 0 if ts[0] < self.last else int(out[0]) + 1 if len(out) else n
        at = 0
        cols = self.cols
        while at < n:
            stop = n if not self.in_order else min(n, at + SLICE - len(cols[0]))
            if self.in_order and bad < stop:
                stop = max(bad, at)
                if stop == at:  # this op comes out of order: no more spills
                    self.in_order = False
                    continue
            for col, part in zip(cols, (ts, end, launch, call, name)):
                col.frombytes(part[at:stop].tobytes())
            at = stop
            if len(cols[0]) == SLICE and self.in_order:
                self._spill()
        self.last = float(ts[-1])
        self.n += n

    def _spill(self) -> None:
        if self.file is None:
            self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.file.seek(0, 2)
        self.marks.append(self.cols[0][0])
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
    """Reads a sorted stream forward: ``take(hi)`` gives its next ops that start before hi,
    as pieces of its columns (start, end, launch, name id)."""

    def __init__(self, stream: _Stream) -> None:
        self.blocks = stream.blocks()
        self.block = next(self.blocks)
        self.at = 0

    def take(self, hi: float, out: list[tuple[np.ndarray, ...]]) -> None:
        while self.block is not None:
            ts, end, launch, _, name = self.block
            j = bisect.bisect_left(ts, hi, self.at)
            if j > self.at:
                out.append(
                    tuple(
                        np.frombuffer(col, dtype=np.float64 if col.typecode == "d" else np.int32)[
                            self.at : j
                        ]
                        for col in (ts, end, launch, name)
                    )
                )
            if j < len(ts):
                self.at = j
                return
            self.block, self.at = next(self.blocks, None), 0  # type: ignore[arg-type]


def groups(pids: list[Id], streams: list[Id]) -> Iterator[tuple[Lane, np.ndarray | None]]:
    """Each distinct (pid, stream) in order of first sight, with where it is (None: all)."""
    key = _lane_keys(pids, streams)
    if key is not None:
        if not len(key) or bool((key == key[0]).all()):
            yield (pids[0], streams[0]), None
            return
        _, first, which = np.unique(key, return_index=True, return_inverse=True)
        which = which.reshape(-1)
        order = np.argsort(which, kind="stable")  # each lane's places, in order
        bounds = np.searchsorted(which[order], np.arange(len(first) + 1))
        for k in np.argsort(first, kind="stable").tolist():
            at = int(first[k])
            yield (pids[at], streams[at]), order[bounds[k] : bounds[k + 1]]
        return
    table: dict[Lane, int] = {}
    sid = np.array(ids_of(table, list(zip(pids, streams))), dtype=np.intp)
    for k, key_ in enumerate(table):
        yield key_, np.flatnonzero(sid == k)


def _lane_keys(pids: list[Id], streams: list[Id]) -> np.ndarray | None:
    """Each (pid, stream) as one int64 where both are integers that fit 32 bits; else None."""
    if not (set(map(type, pids)) == {int} == set(map(type, streams))):
        return None
    try:
        cols = np.array([pids, streams], dtype=np.int64)
    except OverflowError:
        return None
    if len(pids) and not (bool((np.abs(cols) < 1 << 31).all())):
        return None
    key: np.ndarray = (cols[0] << 32) + cols[1]
    return key


class DeviceOps:
    """Every device op of a trace, per stream, for ``breakdown`` (see ``_Stream``).

    ``launch`` is the host time of the launching call (the op's own start where unknown, minus
    infinity where it came before the capture); ``set_launch`` fills it in when the call comes
    later. ``close`` removes the spilled blocks. Ops are known by name id: ``names`` holds each
    (name, whether the trace gives it collective arguments) with its runs and device time.
    """

    def __init__(self) -> None:
        self.streams: dict[Lane, _Stream] = {}
        self.totals = Totals[_Key]()  # per (name, collective), by name id: runs, device us
        self.count = 0
        self.table: Classifier = classifier()
        self._codes = b""  # each name id's kind code, by ``table``

    @property
    def names(self) -> list[tuple[str, bool]]:
        """Each name id's (name, whether the trace gives it collective arguments)."""
        return [(k, False) if isinstance(k, str) else k for k in self.totals.ids]

    @staticmethod
    def key(name: str, collective: bool) -> _Key:
        """What ``totals`` knows a name by: the name, or (name, True) for a collective."""
        return (name, True) if collective else name

    def add(
        self,
        stream: Lane,
        ts: float,
        end: float,
        name: str,
        launch: float,
        call: float = _NAN,
        collective: bool = False,
    ) -> tuple[Lane, int]:
        """Append an op (``call``: its launch call's duration, where it is one that
        ``LAUNCH_CALLS`` counts; ``collective``: the trace gives it c10d's collective
        arguments); returns where it is, for ``set_launch``."""
        col = self.streams.get(stream)
        if col is None:
            col = self.streams[stream] = _Stream()
        key = (name, True) if collective else name
        totals = self.totals
        totals.add_one(key, end - ts)
        where = (stream, col.n)
        col.append(ts, end, launch, call, totals.ids[key])
        self.count += 1
        return where

    def extend(
        self,
        pids: list[Id],
        streams: list[Id],
        ts: np.ndarray,
        end: np.ndarray,
        launch: np.ndarray,
        call: np.ndarray,
        keys: list[_Key],
    ) -> None:
        """``add`` for many ops, in order (columns; each op's stream is its (pid, stream),
        ``keys`` its ``key``)."""
        ids = self.totals.add(keys, end - ts).astype(np.int32)
        for stream, at in groups(pids, streams):
            col = self.streams.get(stream)
            if col is None:
                col = self.streams[stream] = _Stream()
            if at is None:
                col.extend(ts, end, launch, call, ids)
            else:
                col.extend(ts[at], end[at], launch[at], call[at], ids[at])
        self.count += len(keys)

    def classify(self, table: Classifier) -> dict[str, Tally]:
        """Kinds by ``table`` from now on; how many ops, and how much device time (us), each
        of its rules classified (rules that classified nothing left out)."""
        self.table, self._codes = table, b""
        out: dict[str, Tally] = {}
        for (name, collective), t in zip(self.names, self.totals.tallies()):
            rule = table.rule_of(name, collective).name
            slot = out.get(rule)
            if slot is None:
                slot = out[rule] = Tally()
            slot.count += t.count
            slot.total += t.total
        return out

    @property
    def codes(self) -> bytes:
        """Each name id's kind code (``KINDS``), by the table ``classify`` was given."""
        if len(self._codes) < len(self.names):
            self._codes += bytes(
                _CODE[self.table.kind_of(name, collective)]
                for name, collective in self.names[len(self._codes) :]
            )
        return self._codes

    def set_launch(self, where: tuple[Lane, int], launch: float, call: float | None = None) -> None:
        self.streams[where[0]].set_launch(where[1], launch, call)

    def slices(self) -> Iterator[list[_Row]]:
        """Every op as (start, end, kind, launch), in start order, a time slice at a time: at
        most a block of each stream."""
        for ts, end, kind, launch in self.columns():
            yield list(zip(ts.tolist(), end.tolist(), kind.tolist(), launch.tolist()))

    def columns(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """``slices`` as columns: start, end, kind code, launch; each slice in the order that
        sorting its (start, end, kind, launch) tuples gives."""
        for col in self.streams.values():
            col.sort()
        cuts = sorted({t for col in self.streams.values() for t in col.marks})
        cursors = [_Cursor(col) for col in self.streams.values()]
        codes = np.frombuffer(self.codes, dtype=np.uint8)
        for hi in [*cuts, _INF]:
            pieces: list[tuple[np.ndarray, ...]] = []
            for cursor in cursors:
                cursor.take(hi, pieces)
            if not pieces:
                continue
            ts, end, launch, name = (np.concatenate(c) for c in zip(*pieces))
            kind = codes[name]
            order = np.lexsort((launch, kind, end, ts))
            yield ts[order], end[order], kind[order], launch[order]

    def comm_clashes(self) -> list[str]:
        """Names of collectives that start before the previous one on their stream ends."""
        out: list[str] = []
        codes = np.frombuffer(self.codes, dtype=np.uint8)
        names = self.names
        for col in self.streams.values():
            col.sort()
            prev_end = np.nan  # the last collective's end so far (none: NaN, never above)
            for block in col.blocks():
                ts, end, _, _, name = (
                    np.frombuffer(c, dtype=np.float64 if c.typecode == "d" else np.int32)
                    for c in block
                )
                comm = np.flatnonzero(codes[name] == _IS_COMM)
                if not len(comm):
                    continue
                before = np.concatenate([[prev_end], end[comm[:-1]]])
                out.extend(names[k][0] for k in name[comm[ts[comm] < before]].tolist())
                prev_end = float(end[comm[-1]])
        return out

    def close(self) -> None:
        for col in self.streams.values():
            col.close()
