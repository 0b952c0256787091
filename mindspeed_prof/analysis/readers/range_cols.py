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

__all__ = ["Columns", "columns", "steps_in"]


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
        whole = _column(col, dtype)
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


def _column(col: Sequence[float] | Sequence[int], dtype: type) -> np.ndarray:
    import numpy as np

    return np.frombuffer(col, dtype=dtype) if len(col) else np.zeros(0, dtype=dtype)  # type: ignore[call-overload]


def columns(ranges: Sequence[Range], *kinds: str, stepped: bool = False) -> Columns:
    """The ranges of ``kinds`` (every range where none is given), those within a step only
    where ``stepped``, as ``Columns``."""
    import numpy as np

    table = as_table(ranges)
    label = _column(table.label, np.int32)
    keep = np.array([not kinds or lab[1] in kinds for lab in table.labels], dtype=bool)
    none = table._steps.get(None) if stepped else None
    if keep.all() and (none is None or none not in table.step):
        return Columns(table, None)
    mask = keep[label]
    if none is not None:
        mask &= _column(table.step, np.int32) != none
    return Columns(table, np.flatnonzero(mask))


def steps_in(ranges: Sequence[Range], *kinds: str) -> set[int]:
    """The steps the ranges of ``kinds`` (any kind where none is given) lie in."""
    import numpy as np

    cols = columns(ranges, *kinds, stepped=True)
    held = np.unique(cols.step).tolist()
    return {cols.table.steps[c] for c in held}
