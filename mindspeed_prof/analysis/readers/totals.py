"""Counts and sums per key (a kernel's name, a runtime call's), added a batch at a time in numpy.

``np.add.at`` adds its values one at a time, in order, so each key's sum is the same float as
adding them one by one in file order (``Tally``); ``tallies`` gives them as ``Tally`` objects,
in the order the keys first came.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar, cast

import numpy as np

from mindspeed_prof.analysis.readers.model import Tally

__all__ = ["Totals", "ids_of"]

K = TypeVar("K", bound=Hashable)


def ids_of(table: dict[K, int], keys: Sequence[K]) -> list[int]:
    """Each key's id in ``table``, a new key getting the next id (in order of first sight)."""
    found = list(map(table.get, keys))
    if None not in found:
        return cast("list[int]", found)
    return [table.setdefault(k, len(table)) if i is None else i for i, k in zip(found, keys)]


class Totals(Generic[K]):
    """How many values and their sum per key, in first-seen order of the keys."""

    def __init__(self) -> None:
        self.ids: dict[K, int] = {}
        self._count = np.zeros(16, dtype=np.int64)
        self._total = np.zeros(16, dtype=np.float64)

    def __len__(self) -> int:
        return len(self.ids)

    def _room(self) -> None:
        if len(self.ids) > len(self._count):
            size = max(len(self.ids), 2 * len(self._count))
            self._count = np.concatenate(
                [self._count, np.zeros(size - len(self._count), dtype=np.int64)]
            )
            self._total = np.concatenate([self._total, np.zeros(size - len(self._total))])

    def add(self, keys: Sequence[K], values: np.ndarray) -> np.ndarray:
        """Add ``values`` (in order) to their ``keys``; the keys' ids."""
        if not len(keys):
            return np.zeros(0, dtype=np.intp)
        ids = np.asarray(ids_of(self.ids, keys), dtype=np.intp)
        self._room()
        np.add.at(self._total, ids, values)
        self._count += np.bincount(ids, minlength=len(self._count))
        return ids

    def add_one(self, key: K, value: float) -> None:
        i = self.ids.get(key)
        if i is None:
            i = self.ids[key] = len(self.ids)
            self._room()
        self._count[i] += 1
        self._total[i] += value

    def keys(self) -> list[K]:
        return list(self.ids)

    def tallies(self) -> list[Tally]:
        """Each key's ``Tally``, in the order of ``keys()``."""
        n = len(self.ids)
        return [Tally(c, t) for c, t in zip(self._count[:n].tolist(), self._total[:n].tolist())]

    def as_dict(self) -> dict[K, Tally]:
        return dict(zip(self.ids, self.tallies()))
