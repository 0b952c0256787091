"""The launch calls a fold keeps for device ops still to come: correlation id -> (start, the
counted call's duration), in the order the ids first came, as a dict keeps them.

Integer ids live in numpy columns (in arrival order, with a sorted index for look-ups), not as
a Python object per launch: tens of thousands of long-lived tuples, refilled as the trace goes,
scattered the memory that each slice's decoded events are made in, and decoding and folding a
slice grew 25-40% slower as the file went on. From the first id that is no integer (a string,
or one past 64 bits) they move into a dict, in the same order, for good.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from mindspeed_prof.analysis.readers.events import Corr

__all__ = ["Launches", "int_ids"]

_Hit = tuple[float, float]


def int_ids(values: Sequence[Corr]) -> np.ndarray | None:
    """``values`` as int64, or None when one is no integer (or does not fit)."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    if set(map(type, values)) != {int}:
        return None
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return None


class Launches:
    """Correlation id -> (start, counted call duration) of the launches kept (see the module's
    note); ``halve`` keeps the newer half, by the order the ids first came."""

    def __init__(self) -> None:
        self._dict: dict[Corr, _Hit] | None = None
        self._keys = np.zeros(0, dtype=np.int64)  # in the order they came
        self._ts = np.zeros(0, dtype=np.float64)
        self._call = np.zeros(0, dtype=np.float64)
        self._sorted = np.zeros(0, dtype=np.int64)  # the keys sorted
        self._at = np.zeros(0, dtype=np.intp)  # each sorted key's place in ``_keys``

    def __len__(self) -> int:
        return len(self._dict) if self._dict is not None else len(self._keys)

    def _to_dict(self) -> dict[Corr, _Hit]:
        if self._dict is None:
            self._dict = dict(zip(self._keys.tolist(), zip(self._ts.tolist(), self._call.tolist())))
            self._keys = self._sorted = np.zeros(0, dtype=np.int64)
            self._ts = self._call = np.zeros(0, dtype=np.float64)
            self._at = np.zeros(0, dtype=np.intp)
        return self._dict

    def _places(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``ids`` are kept, and the places in ``_keys`` of those that are."""
        if not len(self._sorted) or not len(ids):
            return np.zeros(len(ids), dtype=bool), np.zeros(0, dtype=np.intp)
        idx = np.searchsorted(self._sorted, ids)
        near = np.minimum(idx, len(self._sorted) - 1)
        ok = self._sorted[near] == ids
        return ok, self._at[near[ok]]

    def find(self, ids: Sequence[Corr] | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For each id (an int64 array, or any ids): whether a launch is kept for it, its
        start and call duration (NaN where none)."""
        ts = np.full(len(ids), np.nan)
        call = np.full(len(ids), np.nan)
        if isinstance(ids, np.ndarray) and self._dict is not None:
            ids = ids.tolist()
        if self._dict is None:
            arr = ids if isinstance(ids, np.ndarray) else int_ids(ids)
            if arr is not None:
                ok, at = self._places(arr)
                ts[ok], call[ok] = self._ts[at], self._call[at]
                return ok, ts, call
        ok = np.zeros(len(ids), dtype=bool)
        kept = self._to_dict()
        if kept:
            for j, c in enumerate(ids):
                hit = kept.get(c)
                if hit is not None:
                    ts[j], call[j] = hit
                    ok[j] = True
        return ok, ts, call

    def get(self, corr: Corr) -> _Hit | None:
        ok, ts, call = self.find([corr])
        return (float(ts[0]), float(call[0])) if ok[0] else None

    def update(self, corrs: Sequence[Corr], ts: np.ndarray, call: np.ndarray) -> None:
        """Each id's launch set (the last of an id that comes twice); new ids go last, in the
        order they first come."""
        arr = int_ids(corrs) if self._dict is None else None
        if arr is None:
            self._to_dict().update(zip(corrs, zip(ts.tolist(), call.tolist())))
        elif len(arr):
            self._update(arr, ts, call)

    def _update(self, keys: np.ndarray, ts: np.ndarray, call: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], sk[1:] != sk[:-1]]))
        uniq = sk[starts]
        first = order[starts]  # each id's first place in ``keys``, and its last
        last = order[np.concatenate([starts[1:], [len(sk)]]) - 1]
        found, at = self._places(uniq)
        self._ts[at], self._call[at] = ts[last[found]], call[last[found]]
        new = ~found
        if not new.any():
            return
        fresh, firsts, lasts = uniq[new], first[new], last[new]
        came = np.argsort(firsts, kind="stable")  # the new ids in the order they came
        rank = np.empty(len(came), dtype=np.intp)
        rank[came] = np.arange(len(came))
        base = len(self._keys)
        self._keys = np.concatenate([self._keys, fresh[came]])
        self._ts = np.concatenate([self._ts, ts[lasts[came]]])
        self._call = np.concatenate([self._call, call[lasts[came]]])
        ins = np.searchsorted(self._sorted, fresh)
        self._sorted = np.insert(self._sorted, ins, fresh)
        self._at = np.insert(self._at, ins, base + rank)

    def halve(self) -> None:
        """Keep the newer half (by the order the ids first came)."""
        if self._dict is not None:
            entries = self._dict
            self._dict = dict(itertools.islice(entries.items(), len(entries) // 2, None))
            return
        half = len(self._keys) // 2
        self._keys, self._ts, self._call = self._keys[half:], self._ts[half:], self._call[half:]
        keep = self._at >= half
        self._sorted, self._at = self._sorted[keep], self._at[keep] - half

    def fills_at(self, corrs: Sequence[Corr], lo: int, room: int) -> int | None:
        """Where adding ``corrs[lo:]`` in order takes more than ``room`` new ids: the index
        of the id that does; None where they fit."""
        arr = int_ids(corrs[lo:]) if self._dict is None else None
        if arr is None:
            kept = self._to_dict()
            seen: set[Corr] = set()
            for k in range(lo, len(corrs)):
                c = corrs[k]
                if c not in kept and c not in seen:
                    seen.add(c)
                    room -= 1
                    if room < 0:
                        return k
            return None
        new = ~self._places(arr)[0]
        _, first = np.unique(arr, return_index=True)
        fresh = np.zeros(len(arr), dtype=bool)
        fresh[first] = True
        over = np.flatnonzero(np.cumsum(new & fresh) > room)
        return lo + int(over[0]) if len(over) else None
