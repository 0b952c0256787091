"""A row's time per step and per rank, from the ranges: what the judgements compare."""

from __future__ import annotations

import functools
from array import array
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_cols import columns

if TYPE_CHECKING:  # numpy is imported where a pass runs
    import numpy as np

__all__ = [
    "CellCols",
    "Cells",
    "Rows",
    "Who",
    "by_name",
    "per_step",
    "ranked",
    "recorded",
    "who_order",
    "who_text",
]

#: A rank and the label that tells apart two captures of one rank (a role, a host).
Who = tuple[int | None, str]
#: One row's milliseconds per step, per rank.
Cells = dict[int, dict[Who, float]]
K = TypeVar("K", bound=Hashable)


def who_order(w: Who) -> tuple[tuple[int, int], str]:
    """A sort key: by rank (unknown ranks last), then label."""
    return rank_order(w[0]), w[1]


def who_text(w: Who) -> str:
    """``rank 3`` (with its label where two captures of a rank clash)."""
    return f"rank {rank_label(*w)}"


def per_step(ranges: Sequence[Range], kind: str) -> dict[str, Cells]:
    """Per name of ``kind`` (``step``, ``stage``, ``range``), its milliseconds per step and
    rank; several runs in one step add up."""
    out: dict[str, Cells] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    whos: dict[Who, Who] = {}  # each rank's key once: a range file holds a cell per step
    c = columns(ranges, kind, stepped=True)
    for name, step, rank, source, dur in c.rows("names", "steps", "ranks", "sources", "dur"):
        if dur >= 0:
            who = (rank, source)
            out[name][step][whos.setdefault(who, who)] += dur / 1000.0
    return out


#: A step's cell: milliseconds per rank, adding up (a C call, not a lambda, per step).
_cell: Callable[[], dict[Who, float]] = functools.partial(defaultdict, float)


class CellCols(NamedTuple):
    """Cells as columns, a cell a (step, rank) in ``Cells``' order: ``step`` codes into
    ``steps`` (the step values), ``who`` codes into ``whos``, ``ms`` the cell's milliseconds
    (numpy columns: a range file's row holds a cell for each of its many steps)."""

    step: np.ndarray
    who: np.ndarray
    ms: np.ndarray
    steps: Sequence[int]
    whos: Sequence[Who]

    @classmethod
    def of(cls, cells: Cells) -> CellCols:
        """``cells`` as columns (steps and ranks in the order they first come)."""
        import numpy as np

        steps: dict[int, int] = {}
        whos: dict[Who, int] = {}
        step, who, ms = [], [], []
        for s, by in cells.items():
            for w, v in by.items():
                step.append(steps.setdefault(s, len(steps)))
                who.append(whos.setdefault(w, len(whos)))
                ms.append(v)
        i64 = np.int64
        return cls(
            np.array(step, i64), np.array(who, i64), np.array(ms, float), list(steps), list(whos)
        )

    def take(self, keep: np.ndarray) -> CellCols:
        """The cells where ``keep`` is true (in order)."""
        return self._replace(step=self.step[keep], who=self.who[keep], ms=self.ms[keep])

    def ranks_per_step(self) -> np.ndarray:
        """Per cell, how many ranks ran its step."""
        import numpy as np

        counts: np.ndarray = np.bincount(self.step, minlength=len(self.steps))[self.step]
        return counts

    def multi(self) -> CellCols:
        """The cells of the steps two ranks or more ran."""
        return self.take(self.ranks_per_step() >= 2)

    def cells(self) -> Cells:
        """As ``Cells`` (a dict per step: for the steps a judgement compares ranks in)."""
        out: Cells = defaultdict(_cell)
        steps, whos = self.steps, self.whos
        for s, w, v in zip(self.step.tolist(), self.who.tolist(), self.ms.tolist()):
            out[steps[s]][whos[w]] = v
        return out


class Rows(Mapping[K, Cells], Generic[K]):
    """``per_step``'s cells for many rows, each row's made when it is read: in between, a row
    is columns (a step, a rank, the milliseconds: about 20 bytes a range) instead of a dict
    per step, for the judgements that read one row at a time (a range file holds a row's
    cells for every one of its many steps). Rows, steps and ranks come in the order
    ``per_step`` gives them, and a cell adds up its runs in the same order."""

    def __init__(self) -> None:
        self._cols: dict[K, tuple[list[int], array[int], array[float]]] = {}
        self._whos: list[Who] = []

    def add(self, ranges: Sequence[Range], kind: str, key: Callable[[str], K]) -> Rows[K]:
        """The ranges of ``kind``, each in the row ``key(name)``: a row's runs in the ranges'
        order (taken a label at a time, in numpy: a range file holds millions)."""
        import numpy as np

        index = {w: i for i, w in enumerate(self._whos)}
        cols, whos = self._cols, self._whos
        c = columns(ranges, kind, stepped=True)
        dur = c.dura
        keep = dur >= 0  # (NaN left out too)
        label, step, ms = c.label[keep], c.step[keep], dur[keep] / 1000.0
        del dur, keep
        labels = c.table.labels
        # each label (in the order the ranges first hold it): its row (``key()`` once a
        # name) and its rank's place in ``whos``
        codes, firsts = np.unique(label, return_index=True)
        row_of = np.zeros(len(labels) or 1, dtype=np.int64)
        who_of = np.zeros(len(labels) or 1, dtype=np.int64)
        rows: list[tuple[list[int], array[int], array[float]]] = []
        places: dict[int, int] = {}  # a row's id (of the row object) -> its place in ``rows``
        by_name: dict[str, int] = {}
        for code in codes[np.argsort(firsts, kind="stable")].tolist():
            rank, _, name, source, _ = labels[code]
            at = by_name.get(name)
            if at is None:
                k = key(name)
                row = cols.get(k)
                if row is None:
                    row = cols[k] = ([], array("q"), array("d"))
                at = by_name[name] = places.setdefault(id(row), len(rows))
                if at == len(rows):
                    rows.append(row)
            row_of[code] = at
            who = (rank, source)
            i = index.get(who)
            if i is None:
                i = index[who] = len(whos)
                whos.append(who)
            who_of[code] = i
        group = row_of[label]
        order = np.argsort(group, kind="stable")
        bounds = np.searchsorted(group[order], np.arange(len(rows) + 1)).tolist()
        step_values = np.empty(len(c.table.steps), dtype=object)
        step_values[:] = c.table.steps
        for at, row in enumerate(rows):
            mine = order[bounds[at] : bounds[at + 1]]
            row[0].extend(step_values[step[mine]].tolist())
            row[1].frombytes(who_of[label[mine]].astype(np.int64).tobytes())
            row[2].frombytes(ms[mine].tobytes())
        return self

    def cols(self, key: K) -> CellCols:
        """A row's cells as columns, in the order ``__getitem__``'s ``Cells`` gives them."""
        import numpy as np

        steps, whos, ms = self._cols[key]
        try:
            at = np.array(steps, dtype=np.int64)
            values, step_code = np.unique(at, return_inverse=True)
            step_values: list[int] = values.tolist()
        except OverflowError:  # a step past 64 bits: its codes made a run at a time
            index: dict[int, int] = {}
            step_code = np.array([index.setdefault(s, len(index)) for s in steps], np.int64)
            step_values = list(index)
        who = np.frombuffer(whos, dtype=np.int64) if len(whos) else np.zeros(0, np.int64)
        # each (step, rank) cell's runs added up in order (``bincount`` adds in order, from
        # 0.0, as ``+=`` on a new cell does); cells in the order the runs first reach them
        cell = step_code.astype(np.int64).ravel() * max(len(self._whos), 1) + who
        _, first, inverse = np.unique(cell, return_index=True, return_inverse=True)
        weights = np.frombuffer(ms, dtype=np.float64) if len(ms) else np.zeros(0)
        sums = np.bincount(inverse.ravel(), weights=weights, minlength=len(first))
        order = np.argsort(first, kind="stable")
        first = first[order]
        code = step_code.ravel()[first].astype(np.int64)
        return CellCols(code, who[first], sums[order], step_values, self._whos)

    def __getitem__(self, key: K) -> Cells:
        return self.cols(key).cells()

    def multi(self, key: K) -> Cells:
        """A row's cells in the steps two ranks or more ran it (what comparing ranks reads)."""
        return self.cols(key).multi().cells()

    @property
    def multis(self) -> Mapping[K, Cells]:
        """Each row's ``multi`` cells, made when read."""
        return _Multi(self)

    def __contains__(self, key: object) -> bool:
        return key in self._cols

    def __iter__(self) -> Iterator[K]:
        return iter(self._cols)

    def __len__(self) -> int:
        return len(self._cols)


class _Multi(Mapping[K, Cells]):
    """``Rows.multis``."""

    def __init__(self, rows: Rows[K]) -> None:
        self.rows = rows

    def __getitem__(self, key: K) -> Cells:
        return self.rows.multi(key)

    def __iter__(self) -> Iterator[K]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def ranked(ranges: Sequence[Range], *kinds: str) -> bool:
    """Whether the ranges of ``kinds`` may hold two ranks (a rank and label each) to compare:
    read off the table's labels, not its ranges (False: one at most, nothing to compare)."""
    from mindspeed_prof.analysis.readers.range_table import as_table

    whos = {(lab[0], lab[3]) for lab in as_table(ranges).labels if lab[1] in kinds}
    return len(whos) >= 2


def recorded(ranges: Sequence[Range], *kinds: str) -> bool:
    """Whether a range of ``kinds`` within a step has a duration (not negative, not NaN): what
    ``Rows.add`` keeps. Read off the table's columns a chunk at a time, up to the first."""
    import numpy as np

    from mindspeed_prof.analysis.readers.range_cols import CHUNK
    from mindspeed_prof.analysis.readers.range_table import as_table

    table = as_table(ranges)
    if not len(table):
        return False
    of_kinds = np.array([lab[1] in kinds for lab in table.labels], dtype=bool)
    steps = np.array([s is not None for s in table.steps] or [False], dtype=bool)
    label = np.frombuffer(table.label, dtype=np.int32)
    step = np.frombuffer(table.step, dtype=np.int32)
    dur = np.frombuffer(table.dur, dtype=np.float64)
    for lo in range(0, len(table), CHUNK):
        hi = lo + CHUNK
        if (of_kinds[label[lo:hi]] & steps[step[lo:hi]] & (dur[lo:hi] >= 0)).any():
            return True
    return False


def by_name(ranges: Sequence[Range], kind: str) -> Rows[str]:
    """``per_step``, each name's cells made when read (``Rows``)."""
    return Rows[str]().add(ranges, kind, str)
