"""Tables of a row per step held as columns, each row made when it is read.

A range file holds a row for each of its many steps (91,000 in 400 MB) in the per-step table
and the phases; a ``msgspec`` row with a dict of named times is about 500 bytes, its columns
about 100. ``HeldRows`` is the read side (a ``Sequence`` of rows, slices as lists), and
``NamedCells`` holds each row's dict of named milliseconds, in its own key order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import TypeVar, overload

__all__ = ["HeldRows", "NamedCells"]

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
