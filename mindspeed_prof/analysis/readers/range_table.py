"""A capture's ranges held as columns: 24 bytes a range (32 where some range knows its bare
time) instead of a ``Range``'s 160.

A range file is nothing but ranges (millions of them), and the analysis keeps every one to the
end; so ``TraceData.ranges`` holds them as ``RangeTable``: times in ``array``s, each range's
rank, kind, name, source and thread as one index into a short list of the distinct ones, its
step as one into the list of distinct steps; the bare times (no host operator running) only
once some range has one, which a range file's never do. It is a mutable sequence of ``Range``:
iterating, indexing, ``len``, ``append`` and ``+=`` behave as the list it replaces, each
``Range`` made when asked for.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Union, overload

from mindspeed_prof.analysis.readers.model import Range

if TYPE_CHECKING:  # numpy is imported where a pass runs: the CLI's start does without it
    import numpy as np

#: One of a table's columns: label and step codes (``i``), times (``d``).
Column = Union["array[int]", "array[float]"]

__all__ = ["Label", "RangeTable", "as_table", "of_kind", "stepped"]

#: What ranges share: rank, kind, name, source, thread.
Label = tuple[int | None, str, str, str, str]
_new = tuple.__new__


class RangeTable(MutableSequence[Range]):
    """Ranges as columns: ``label`` indexes ``labels``, ``step`` ``steps`` (None among them);
    ``bare`` NaN for None, and empty until some range has one (a range file's never do: 8 of
    its 32 bytes a range)."""

    __slots__ = ("_index", "_steps", "bare", "dur", "label", "labels", "step", "steps", "ts")

    def __init__(self) -> None:
        self.labels: list[Label] = []
        self._index: dict[Label, int] = {}
        self.label = array("i")
        self.steps: list[int | None] = []
        self._steps: dict[int | None, int] = {}
        self.step = array("i")
        self.ts, self.dur, self.bare = array("d"), array("d"), array("d")

    @classmethod
    def of(cls, ranges: Iterable[Range]) -> RangeTable:
        table = cls()
        table.extend(ranges)
        return table

    def code(self, label: Label) -> int:
        """The index of ``label`` in ``labels`` (added when new)."""
        at = self._index.get(label)
        if at is None:
            at = self._index[label] = len(self.labels)
            self.labels.append(label)
        return at

    def step_code(self, step: int | None) -> int:
        """The index of ``step`` in ``steps`` (added when new)."""
        at = self._steps.get(step)
        if at is None:
            at = self._steps[step] = len(self.steps)
            self.steps.append(step)
        return at

    def _like(self) -> RangeTable:
        """An empty table with this one's labels and steps."""
        out = RangeTable()
        out.labels, out._index = list(self.labels), dict(self._index)
        out.steps, out._steps = list(self.steps), dict(self._steps)
        return out

    def add(
        self,
        rank: int | None,
        kind: str,
        name: str,
        step: int | None,
        ts: float,
        dur: float,
        source: str = "",
        tid: str = "",
        bare: float | None = None,
    ) -> None:
        if bare is not None or len(self.bare):
            self._hold_bare()
            self.bare.append(math.nan if bare is None else bare)
        self.label.append(self.code((rank, kind, name, source, tid)))
        self.step.append(self.step_code(step))
        self.ts.append(ts)
        self.dur.append(dur)

    def _hold_bare(self) -> None:
        """Give every range so far its place in ``bare`` (NaN: unknown)."""
        if len(self.bare) < len(self.ts):
            self.bare.extend(_nans(len(self.ts) - len(self.bare)))

    def extend_coded(
        self, label: np.ndarray, step: np.ndarray, ts: np.ndarray, dur: np.ndarray
    ) -> None:
        """Ranges given as columns whose labels and steps are codes of this table already."""
        import numpy as np

        self.label.frombytes(np.ascontiguousarray(label, dtype=np.intc).tobytes())
        self.step.frombytes(np.ascontiguousarray(step, dtype=np.intc).tobytes())
        self.ts.frombytes(np.ascontiguousarray(ts, dtype=np.float64).tobytes())
        self.dur.frombytes(np.ascontiguousarray(dur, dtype=np.float64).tobytes())
        if len(self.bare):
            self.bare.extend(_nans(len(ts)))

    def append(self, r: Range) -> None:
        self.add(r.rank, r.kind, r.name, r.step, r.ts, r.dur, r.source, r.tid, r.bare)

    def extend(self, ranges: Iterable[Range]) -> None:
        if isinstance(ranges, RangeTable):
            if len(ranges.bare) or len(self.bare):
                self._hold_bare()
                self.bare.extend(ranges.bare if len(ranges.bare) else _nans(len(ranges)))
            codes = [self.code(lab) for lab in ranges.labels]
            self.label.extend(codes[i] for i in ranges.label)
            steps = [self.step_code(s) for s in ranges.steps]
            self.step.extend(steps[i] for i in ranges.step)
            self.ts.extend(ranges.ts)
            self.dur.extend(ranges.dur)
            return
        for r in ranges:
            self.append(r)

    def select(self, keep: Iterable[bool]) -> RangeTable:
        """The ranges where ``keep`` is true, in order."""
        import numpy as np

        return self.where(np.fromiter(keep, dtype=bool, count=len(self)))

    def where(self, keep: np.ndarray) -> RangeTable:
        """The ranges where the boolean column ``keep`` is true, in order."""
        import numpy as np

        out = self._like()
        for name in ("label", "step", "ts", "dur", "bare"):
            col: Column = getattr(self, name)
            kept = np.frombuffer(col, dtype=col.typecode)[keep].tobytes() if len(col) else b""
            setattr(out, name, array(col.typecode, kept))
        return out

    def of_kind(self, *kinds: str) -> RangeTable:
        """The ranges of these kinds (``step``, ``stage``, ``range``), in order."""
        import numpy as np

        codes = [i for i, lab in enumerate(self.labels) if lab[1] in kinds]
        if len(codes) == len(self.labels):
            return self
        label = np.frombuffer(self.label, dtype="i") if len(self) else np.zeros(0, np.int32)
        return self.where(np.isin(label, codes))

    def __len__(self) -> int:
        return len(self.ts)

    def _row(self, i: int) -> Range:
        rank, kind, name, source, tid = self.labels[self.label[i]]
        step, bare = self.step[i], self.bare[i] if len(self.bare) else math.nan
        return _new(
            Range,
            (
                rank,
                kind,
                name,
                self.steps[step],
                self.ts[i],
                self.dur[i],
                source,
                tid,
                None if bare != bare else bare,
            ),
        )

    @overload
    def __getitem__(self, i: int) -> Range: ...

    @overload
    def __getitem__(self, i: slice) -> RangeTable: ...

    def __getitem__(self, i: int | slice) -> Range | RangeTable:
        if isinstance(i, slice):
            out = self._like()
            out.label, out.step = self.label[i], self.step[i]
            out.ts, out.dur, out.bare = self.ts[i], self.dur[i], self.bare[i]
            return out
        n = len(self.ts)
        if not -n <= i < n:
            raise IndexError("range index out of range")
        return self._row(i % n if i < 0 else i)

    def __iter__(self) -> Iterator[Range]:
        labels, steps = self.labels, self.steps
        bares = self.bare if len(self.bare) else repeat(math.nan)
        for lab, step, ts, dur, bare in zip(self.label, self.step, self.ts, self.dur, bares):
            rank, kind, name, source, tid = labels[lab]
            yield _new(
                Range,
                (
                    rank,
                    kind,
                    name,
                    steps[step],
                    ts,
                    dur,
                    source,
                    tid,
                    None if bare != bare else bare,
                ),
            )

    @overload
    def __setitem__(self, i: int, r: Range) -> None: ...

    @overload
    def __setitem__(self, i: slice, r: Iterable[Range]) -> None: ...

    def __setitem__(self, i: int | slice, r: Range | Iterable[Range]) -> None:
        if isinstance(i, slice) or not isinstance(r, Range):
            raise TypeError("a RangeTable's ranges are set one at a time")
        n = len(self)
        if not -n <= i < n:
            raise IndexError("range assignment index out of range")
        self.insert(i % n, r)
        del self[i % n + 1]

    def _columns(self) -> tuple[Column, ...]:
        return (self.label, self.step, self.ts, self.dur, self.bare)

    def __delitem__(self, i: int | slice) -> None:
        for col in self._columns():
            if len(col) or col is not self.bare:
                del col[i]

    def insert(self, i: int, r: Range) -> None:
        at = len(self)
        self.append(r)
        if i < at:
            for codes in (self.label, self.step):
                codes.insert(i, codes.pop())
            for times in (self.ts, self.dur, self.bare):
                if len(times):
                    times.insert(i, times.pop())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RangeTable({list(self)!r})"

    def __reduce__(self) -> tuple[object, ...]:
        cols = (self.label, self.step, self.ts, self.dur, self.bare)
        return (_rebuild, (self.labels, self.steps, *cols))

    def columns(self) -> tuple[list[Label], list[int | None], list[memoryview]]:
        """The labels, the steps and each column's bytes (little-endian), as the cache stores
        them."""
        cols: list[Column] = [self.label, self.step, self.ts, self.dur, self.bare]
        if sys.byteorder == "big":
            cols = [array(c.typecode, c.tobytes()) for c in cols]
            for c in cols:
                c.byteswap()
        return self.labels, self.steps, [memoryview(c).cast("B") for c in cols]

    @classmethod
    def from_columns(
        cls, labels: Sequence[Sequence[object]], steps: Sequence[object], cols: Sequence[bytes]
    ) -> RangeTable:
        """The inverse of ``columns``; ValueError when they do not fit together."""
        out = cls()
        for lab in labels:
            rank, kind, name, source, tid = lab
            if not (rank is None or isinstance(rank, int)) or not all(
                isinstance(x, str) for x in (kind, name, source, tid)
            ):
                raise ValueError("a range label is not (rank, kind, name, source, thread)")
            out.code((rank, kind, name, source, tid))  # type: ignore[arg-type]
        for step in steps:
            if not (step is None or type(step) is int):
                raise ValueError("a range's step is not a whole number")
            out.step_code(step)
        if len(out.labels) != len(labels) or len(out.steps) != len(steps):
            raise ValueError("range labels or steps repeat")
        arrays: tuple[Column, ...] = (out.label, out.step, out.ts, out.dur, out.bare)
        if len(cols) != len(arrays):
            raise ValueError("range columns missing")
        for a, raw in zip(arrays, cols):
            a.frombytes(raw)
            if sys.byteorder == "big":
                a.byteswap()
        n = len(out.ts)
        if any(len(a) != n for a in arrays if a is not out.bare) or len(out.bare) not in (0, n):
            raise ValueError("range columns differ in length")
        if n and not 0 <= min(out.label) <= max(out.label) < len(out.labels):
            raise ValueError("a range's label is out of range")
        if n and not 0 <= min(out.step) <= max(out.step) < len(out.steps):
            raise ValueError("a range's step is out of range")
        return out


def _nans(n: int) -> array[float]:
    return array("d", [math.nan]) * n


def _rebuild(
    labels: list[Label],
    steps: list[int | None],
    label: array[int],
    step: array[int],
    *times: array[float],
) -> RangeTable:
    out = RangeTable()
    for lab in labels:
        out.code(lab)
    for s in steps:
        out.step_code(s)
    out.label, out.step = label, step
    out.ts, out.dur, out.bare = times
    return out


def of_kind(ranges: Sequence[Range], *kinds: str) -> Sequence[Range]:
    """The ranges of these kinds, in order: as columns where ``ranges`` are."""
    if isinstance(ranges, RangeTable):
        return ranges.of_kind(*kinds)
    return [r for r in ranges if r.kind in kinds]


def stepped(ranges: Sequence[Range]) -> Sequence[Range]:
    """The ranges within a step (``step`` not None), in order: as columns where ``ranges``
    are."""
    if isinstance(ranges, RangeTable):
        none = ranges._steps.get(None)
        if none is None or not len(ranges):
            return ranges
        import numpy as np

        return ranges.where(np.frombuffer(ranges.step, dtype="i") != none)
    return [r for r in ranges if r.step is not None]


def as_table(ranges: Sequence[Range]) -> RangeTable:
    """``ranges`` as a ``RangeTable`` (itself when it is one)."""
    return ranges if isinstance(ranges, RangeTable) else RangeTable.of(ranges)
