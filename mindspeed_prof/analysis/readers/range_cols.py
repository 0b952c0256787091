"""A capture's ranges of some kinds as plain columns, for the passes that read them.

A pass over a ``RangeTable`` as ``Range`` tuples makes a tuple and two floats a range (about
0.3 us, six times a list's iteration): the report reads the ranges a dozen times, and a range
file holds millions. ``columns(ranges, *kinds)`` picks the ranges of those kinds with numpy
and gives the fields a pass reads, a range at a time in the ranges' order, from lists of a slice of
the kept ranges (the sums a pass makes add up in the same order as before).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_table import RangeTable, as_table

if TYPE_CHECKING:  # numpy is imported where a pass runs: the CLI's start does without it
    import numpy as np

__all__ = [
    "Columns",
    "Groups",
    "by_start",
    "column",
    "columns",
    "distinct",
    "spans",
    "steps_in",
    "threads",
]


#: Ranges a pass reads at a time (its lists are this long, whatever the file's size).
CHUNK = 1 << 16
_LABEL_FIELDS = {"ranks": 0, "kinds": 1, "names": 2, "sources": 3, "tids": 4}


class Columns:
    """Some of a table's ranges, in its order: ``at`` their places in the table (None: every
    range, the table's own columns read in place), ``label`` their label codes (into
    ``table.labels``), ``step`` their step codes (into ``table.steps``); ``tsa`` and ``dura``
    their times as numpy columns; ``rows`` their fields a range at a time."""

    __slots__ = ("_held", "at", "label", "step", "table")

    def __init__(self, table: RangeTable, at: np.ndarray | None) -> None:
        import numpy as np

        self.table, self.at = table, at
        self.label = self._take(table.label, np.int32)
        self.step = self._take(table.step, np.int32)
        self._held: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.label)

    def _take(
        self, col: Sequence[float] | Sequence[int], dtype: type, lo: int = 0, hi: int = -1
    ) -> np.ndarray:
        """Of a table's column, these ranges' (``lo:hi`` of them)."""
        whole = column(col, dtype)
        hi = len(self.table) if hi < 0 else hi
        return whole[lo:hi] if self.at is None else whole[self.at[lo:hi]]

    @property
    def tsa(self) -> np.ndarray:
        import numpy as np

        return self._take(self.table.ts, np.float64)

    @property
    def dura(self) -> np.ndarray:
        import numpy as np

        return self._take(self.table.dur, np.float64)

    def _values(self, field: str) -> np.ndarray:
        """A field's distinct values as an object column (per label, or per step)."""
        import numpy as np

        held = self._held.get(field)
        if held is None:
            if field == "steps":
                values: list[object] = list(self.table.steps)
            else:
                at = _LABEL_FIELDS[field]
                values = [lab[at] for lab in self.table.labels]
            held = self._held[field] = np.empty(len(values), dtype=object)
            held[:] = values
        return held

    def _field(self, field: str, lo: int, hi: int) -> Iterable[object]:
        """One field of ranges ``lo:hi``: ranks, kinds, names, sources, tids, steps (from their
        codes), ts, dur, bare (None: unknown), at (places in the table)."""
        import numpy as np

        if field in _LABEL_FIELDS:
            out: list[object] = self._values(field)[self.label[lo:hi]].tolist()
            return out
        if field == "steps":
            steps: list[object] = self._values(field)[self.step[lo:hi]].tolist()
            return steps
        if field == "at":
            if self.at is None:
                return range(lo, min(hi, len(self)))
            places: list[object] = self.at[lo:hi].tolist()
            return places
        col = {"ts": self.table.ts, "dur": self.table.dur, "bare": self.table.bare}[field]
        if not len(col):  # (no range's bare time known)
            return [None] * len(self.label[lo:hi])
        times = self._take(col, np.float64, lo, hi)
        if field != "bare":
            return array("d", times.tobytes())  # (floats made as read)
        bare = times.astype(object)
        bare[np.isnan(times)] = None
        held: list[object] = bare.tolist()
        return held

    def rows(self, *fields: str) -> Iterator[tuple[Any, ...]]:
        """Per range, in order, the ``fields`` named (see ``_field``), ``CHUNK`` ranges'
        lists at a time."""
        for lo in range(0, len(self), CHUNK):
            hi = lo + CHUNK
            yield from zip(*(self._field(f, lo, hi) for f in fields))


def column(col: Sequence[float] | Sequence[int], dtype: type) -> np.ndarray:
    import numpy as np

    return np.frombuffer(col, dtype=dtype) if len(col) else np.zeros(0, dtype=dtype)  # type: ignore[call-overload]


def distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, sorted. numpy's plain ``unique`` asks ``np.ma`` whether the array
    is masked, importing the masked-array package (5 ms of a small capture's analysis); asked
    for counts it sorts instead, with the same values."""
    import numpy as np

    return np.unique(values, return_counts=True)[0]


def columns(ranges: Sequence[Range], *kinds: str, stepped: bool = False) -> Columns:
    """The ranges of ``kinds`` (every range where none is given), those within a step only
    where ``stepped``, as ``Columns``."""
    import numpy as np

    table = as_table(ranges)
    label = column(table.label, np.int32)
    keep = np.array([not kinds or lab[1] in kinds for lab in table.labels], dtype=bool)
    none = table._steps.get(None) if stepped else None
    if keep.all() and (none is None or none not in table.step):
        return Columns(table, None)
    mask = keep[label]
    if none is not None:
        mask &= column(table.step, np.int32) != none
    return Columns(table, np.flatnonzero(mask))


def steps_in(ranges: Sequence[Range], *kinds: str) -> set[int]:
    """The steps the ranges of ``kinds`` (any kind where none is given) lie in."""

    cols = columns(ranges, *kinds, stepped=True)
    held = distinct(cols.step).tolist()
    return {cols.table.steps[c] for c in held}


def spans(n: int) -> Iterator[tuple[int, int]]:
    """``lo, hi`` of ``n`` ranges ``CHUNK`` at a time."""
    for lo in range(0, n, CHUNK):
        yield lo, min(lo + CHUNK, n)


class Groups:
    """Per group (``0 .. n-1``) of the values met a chunk at a time, in order: how many, their
    sums and the largest of the first. A sum adds left to right from 0.0, as Python's ``sum``
    of floats does: ``np.bincount`` adds in order, each chunk's values after the sums so far
    (a chunk's own total added to them would round differently)."""

    __slots__ = ("count", "most", "sums")

    def __init__(self, n: int, sums: int = 1) -> None:
        import numpy as np

        self.count = np.zeros(n, dtype=np.int64)
        self.sums = np.zeros((sums, n), dtype=np.float64)
        self.most = np.full(n, -np.inf)

    def add(self, group: np.ndarray, *values: np.ndarray) -> None:
        """Values of the groups ``group`` (one column per sum, the first also for the most)."""
        import numpy as np

        n = len(self.count)
        if not len(group):
            return
        self.count += np.bincount(group, minlength=n)
        at = np.concatenate((np.arange(n), group))
        for k, v in enumerate(values):
            self.sums[k] = np.bincount(at, np.concatenate((self.sums[k], v)), minlength=n)
        np.maximum.at(self.most, group, values[0])


def threads(table: RangeTable, kind: str | None) -> list[array[int]]:
    """Per thread (rank, source, thread) of the ranges of ``kind`` (any: None), in the order
    the ranges first hold it: the places of its ranges, in order (a chunk at a time)."""
    import numpy as np

    codes: dict[tuple[int | None, str, str], int] = {}
    of = np.array(
        [
            codes.setdefault((lab[0], lab[3], lab[4]), len(codes)) if kind in (None, lab[1]) else -1
            for lab in table.labels
        ]
        or [-1],
        dtype=np.int64,
    )
    held: dict[int, array[int]] = {}
    code = "i" if len(table) < 2**31 else "q"  # (4 bytes a range where they do)
    label = column(table.label, np.int32)
    for lo, hi in spans(len(table)):
        thread = of[label[lo:hi]]
        order = np.argsort(thread, kind="stable")
        present, at = np.unique(thread[order], return_index=True)
        ends = [*at[1:].tolist(), len(order)]
        for k in np.argsort(order[at], kind="stable").tolist():  # as the ranges first hold them
            if present[k] >= 0:
                ids = held.setdefault(int(present[k]), array(code))
                ids.frombytes((order[at[k] : ends[k]] + lo).astype(code).tobytes())
    return list(held.values())


def by_start(starts: np.ndarray, durs: np.ndarray, idx: array[int]) -> array[int]:
    """``idx`` in the order of their ranges' start, the longest first where two start together
    (a stable sort: ties keep ``idx``'s order); ``idx`` itself where it is in that order."""
    return idx if _in_order(starts, durs, idx) else _sorted(starts, durs, idx)


def _in_order(starts: np.ndarray, durs: np.ndarray, idx: array[int]) -> bool:
    """Whether ``idx`` are in ``by_start``'s order already (as a file's ranges written as they
    start are: sorting them copies each thread's columns), read a chunk at a time."""
    import numpy as np

    at = np.frombuffer(idx, dtype=idx.typecode) if len(idx) else np.zeros(0, np.int64)
    for lo, hi in spans(len(at)):
        part = at[max(lo - 1, 0) : hi]
        ts, dur = starts[part], durs[part]
        tie = ts[:-1] == ts[1:]
        if not ((ts[:-1] < ts[1:]) | tie & (dur[:-1] >= dur[1:])).all():
            return False
    return True


def _sorted(starts: np.ndarray, durs: np.ndarray, idx: array[int]) -> array[int]:
    """``by_start`` sorted as columns, not a key object per range (a range file holds
    millions)."""
    import numpy as np

    at = np.frombuffer(idx, dtype=idx.typecode) if len(idx) else np.zeros(0, np.int64)
    ts, dur = starts[at], durs[at]
    order = np.lexsort((-dur, ts))
    del ts, dur
    return array(idx.typecode, at[order].tobytes())
