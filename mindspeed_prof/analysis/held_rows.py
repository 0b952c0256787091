"""Tables of a row per step held as columns, each row made when it is read.

A range file holds a row for each of its many steps (91,000 in 400 MB) in the per-step table
and the phases; a ``msgspec`` row with a dict of named times is about 500 bytes, its columns
about 100. ``HeldRows`` is the read side (a ``Sequence`` of rows, slices as lists), and
``NamedCells`` holds each row's dict of named milliseconds, in its own key order. ``Points``
holds a memory timeline (a rank's 500 ``[us, allocated, reserved]`` points: 136 bytes a point
as lists of floats, 24 as one array).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain
from typing import TypeVar, overload

__all__ = ["HeldRows", "NamedCells", "Points"]

R = TypeVar("R")


class HeldRows(Sequence[R]):
    """Rows held as columns: ``_row(i)`` makes row ``i``; ``len`` is ``_len()``."""

    __slots__ = ()

    def _row(self, i: int) -> R:
        raise NotImplementedError

    def _len(self) -> int:
        raise NotImplementedError

    def __len__(self) -> int:
        return self._len()

    @overload
    def __getitem__(self, i: int) -> R: ...
    @overload
    def __getitem__(self, i: slice) -> list[R]: ...
    def __getitem__(self, i: int | slice) -> R | list[R]:
        if isinstance(i, slice):
            return [self._row(j) for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._row(i)

    def __iter__(self) -> Iterator[R]:
        return map(self._row, range(len(self)))


class NamedCells:
    """Each row's named milliseconds: row ``i``'s are ``name[lo:hi]`` (codes into ``names``)
    and ``ms[lo:hi]`` for ``lo, hi = bounds[i], bounds[i + 1]``, in the row's key order."""

    __slots__ = ("_codes", "bounds", "ms", "name", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self._codes: dict[str, int] = {}
        self.bounds = array("q", [0])
        self.name = array("i")
        self.ms = array("d")

    def append(self, cells: Mapping[str, float]) -> None:
        """A row's cells, in their order."""
        for key, value in cells.items():
            code = self._codes.get(key)
            if code is None:
                code = self._codes[key] = len(self.names)
                self.names.append(key)
            self.name.append(code)
            self.ms.append(value)
        self.bounds.append(len(self.ms))

    def row(self, i: int) -> dict[str, float]:
        """Row ``i``'s cells as the dict they were."""
        names, name, ms = self.names, self.name, self.ms
        return {names[name[j]]: ms[j] for j in range(self.bounds[i], self.bounds[i + 1])}

    @classmethod
    def of_columns(
        cls, names: Sequence[str], bounds: array[int], name: array[int], ms: array[float]
    ) -> NamedCells:
        """Cells given as columns (``bounds`` starting at 0)."""
        out = cls()
        out.names, out._codes = list(names), {n: i for i, n in enumerate(names)}
        out.bounds, out.name, out.ms = bounds, name, ms
        return out


class Points(HeldRows[list[float]]):
    """Points of ``width`` floats each, held as one array: point ``i`` is a list made when it
    is read. ``of`` packs a timeline only where that changes nothing it is written as (every
    point as wide, every value a float)."""

    __slots__ = ("_values", "_width")

    def __init__(self, values: array[float], width: int) -> None:
        self._values, self._width = values, width

    @classmethod
    def of(cls, points: Sequence[Sequence[float]]) -> Sequence[Sequence[float]]:
        """``points`` as ``Points`` where it can be, else ``points`` itself."""
        if not points or isinstance(points, Points):
            return points
        widths = set(map(len, points))
        values = chain.from_iterable(points)
        if len(widths) != 1 or 0 in widths or set(map(type, values)) != {float}:
            return points  # an odd point, an int (written as one)
        return cls(array("d", chain.from_iterable(points)), widths.pop())

    def _len(self) -> int:
        return len(self._values) // self._width

    def _row(self, i: int) -> list[float]:
        w = self._width
        return self._values[i * w : (i + 1) * w].tolist()

    def __eq__(self, other: object) -> bool:
        """Equal to the points it holds, as lists or as ``Points``."""
        if isinstance(other, Points):
            return self._width == other._width and self._values == other._values
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"Points({list(self)!r})"
