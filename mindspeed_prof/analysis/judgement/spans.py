"""Each stage's time per step and rank as columns (``where.stage_cells`` in numpy): a stage's
runs in a step merged and cut to the rank's step, times taken from the step's first start.

A range file runs each stage once in each of many steps: a (stage, rank, step) of one run is
computed in numpy, with the same float operations ``intervals.merge`` and ``covered`` make on
one interval; only one of several runs goes through them. None where the columns would not
give the same floats (a time not finite) or a step per rank would not fit a column (many ranks
and steps, few ranges): ``where`` then takes its dict path."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from mindspeed_prof.analysis.judgement.cells import CellCols, Cells, Who
from mindspeed_prof.analysis.readers.intervals import Interval, covered, length, merge
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_cols import CHUNK, columns
from mindspeed_prof.analysis.readers.range_table import RangeTable, as_table

if TYPE_CHECKING:
    import numpy as np

__all__ = ["StageCols", "stage_cols"]


class StageCols(Mapping[str, Cells]):
    """Per stage (in the order the ranges first run it), its ``CellCols``; ``Cells`` read."""

    def __init__(self, rows: dict[str, CellCols]) -> None:
        self.rows = rows

    def cols(self, name: str) -> CellCols:
        return self.rows[name]

    def __getitem__(self, name: str) -> Cells:
        return self.rows[name].cells()

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def _col(col: Sequence[float] | Sequence[int], dtype: type) -> np.ndarray:
    import numpy as np

    return np.frombuffer(col, dtype=dtype) if len(col) else np.zeros(0, dtype=dtype)  # type: ignore[call-overload]


def _firsts(table: RangeTable, who_of: np.ndarray, n_steps: int) -> np.ndarray | None:
    """Per (rank, step) key, the earliest start of its ranges (inf: none), read a chunk at a
    time from the table's own columns; None where a start is not finite."""
    import numpy as np

    first = np.full(len(who_of) and (int(who_of.max()) + 1) * n_steps, np.inf)
    label, step, ts = _col(table.label, np.int32), _col(table.step, np.int32), _col(table.ts, float)
    for lo in range(0, len(table), CHUNK):
        at = ts[lo : lo + CHUNK]
        if not np.isfinite(at).all():
            return None
        key = who_of[label[lo : lo + CHUNK]] * n_steps + step[lo : lo + CHUNK]
        np.minimum.at(first, key, at)
    return first


def _many(
    names: list[int],
    keys: list[int],
    lo: list[float],
    hi: list[float],
    box: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> dict[tuple[int, int], float]:
    """The milliseconds of the (stage, key) groups of several runs, as ``where._cells``."""
    spans: dict[tuple[int, int], list[Interval]] = {}
    for n, k, a, b in zip(names, keys, lo, hi):
        spans.setdefault((n, k), []).append((a, b))
    has, lo_box, hi_box = box
    out = {}
    for (n, k), intervals in spans.items():
        merged = merge(intervals)
        us = covered(merged, float(lo_box[k]), float(hi_box[k])) if has[k] else length(merged)
        out[(n, k)] = us / 1000.0
    return out


def _one(
    lo: np.ndarray,
    hi: np.ndarray,
    key: np.ndarray,
    has: np.ndarray,
    lo_box: np.ndarray,
    hi_box: np.ndarray,
) -> np.ndarray:
    """The milliseconds of runs alone in their group: ``covered([(lo, hi)], *box)``'s floats
    (``length``'s without a box), in numpy."""
    import numpy as np

    a, b = lo_box[key], hi_box[key]
    x = np.minimum(hi, b) - np.maximum(lo, a)
    cut = np.where((b > a) & (lo < b) & (x > 0.0), x, 0.0)
    out: np.ndarray = np.where(has[key], cut, hi - lo) / 1000.0
    return out


def stage_cols(ranges: Sequence[Range]) -> StageCols | None:
    """Per stage, its time per step and rank (``where.stage_cells``) as columns; None where
    the columns cannot give the same floats (see the module)."""
    import numpy as np

    table = as_table(ranges)
    labels, n_steps = table.labels, max(len(table.steps), 1)
    index: dict[Who, int] = {}
    who_of = np.array(
        [index.setdefault((lab[0], lab[3]), len(index)) for lab in labels] or [0], np.int64
    )
    if len(index) * n_steps > 4 * len(table) + 1024:  # a key per rank and step: too many
        return None
    first = _firsts(table, who_of, n_steps)
    if first is None:
        return None
    # each step range's box relative to its step's first start
    s = columns(table, "step")
    key = who_of[s.label] * n_steps + s.step
    lo = s.tsa - first[key]
    dur = s.dura
    if not np.isfinite(dur).all():
        return None
    lo_box, hi_box = np.full(len(first), np.inf), np.full(len(first), -np.inf)
    np.minimum.at(lo_box, key, lo)
    np.maximum.at(hi_box, key, lo + dur)
    has = np.zeros(len(first), dtype=bool)
    has[key] = True
    del s, key, lo, dur
    # each stage run, its (stage, key) group; groups in the order of their first run
    c = columns(table, "stage")
    dur = c.dura
    if not np.isfinite(dur).all():
        return None
    key = who_of[c.label] * n_steps + c.step
    lo = c.tsa - first[key]  # (not in place: ``tsa`` may be the table's own column)
    hi = lo + dur
    del dur
    names: dict[str, int] = {}
    name_of = np.zeros(len(labels) or 1, dtype=np.int64)
    codes, firsts = np.unique(c.label, return_index=True)
    for code in codes[np.argsort(firsts, kind="stable")].tolist():
        name_of[code] = names.setdefault(labels[code][2], len(names))
    group = name_of[c.label] * len(first)
    group += key
    del c
    cell, start, inverse, runs = np.unique(
        group, return_index=True, return_inverse=True, return_counts=True
    )
    del group
    inverse = inverse.ravel()
    one = runs[inverse] == 1
    del runs
    ms = np.zeros(len(cell))
    for at in range(0, len(key), CHUNK):  # a chunk at a time: its temporaries stay small
        part = slice(at, at + CHUNK)
        ms[inverse[part][one[part]]] = _one(lo[part], hi[part], key[part], has, lo_box, hi_box)[
            one[part]
        ]
    many = np.flatnonzero(~one)
    if len(many):
        name, k_many = cell[inverse[many]] // len(first), key[many]
        got = _many(
            name.tolist(),
            k_many.tolist(),
            lo[many].tolist(),
            hi[many].tolist(),
            (has, lo_box, hi_box),
        )
        for g, v in zip(
            inverse[many].tolist(),
            (got[(n, k)] for n, k in zip(name.tolist(), k_many.tolist())),
        ):
            ms[g] = v
    del lo, hi, inverse, one, key
    order = np.argsort(start, kind="stable")
    cell, ms = cell[order], ms[order]
    cell_name, cell_key = cell // len(first), cell % len(first)
    step_code = cell_key % n_steps
    none = table.steps.index(None) if None in table.steps else -1
    whos, steps = list(index), cast(list[int], table.steps)  # (None's cells left out)
    rows: dict[str, CellCols] = {}
    bounds = np.argsort(cell_name, kind="stable")
    cuts = np.searchsorted(cell_name[bounds], np.arange(len(names) + 1)).tolist()
    for at, stage in enumerate(names):
        mine = bounds[cuts[at] : cuts[at + 1]]
        mine = mine[step_code[mine] != none]
        rows[stage] = CellCols(step_code[mine], cell_key[mine] // n_steps, ms[mine], steps, whos)
    return StageCols(rows)
