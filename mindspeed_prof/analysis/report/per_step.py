"""The per-step table (``Tables.per_step``): each rank's steps, each stage's milliseconds in
them, held as columns.

A range file holds a row for each of its many steps (91,000 in 400 MB), and a ``StepRow``
with its dict of stages is about 500 bytes; ``StepTable`` keeps about 110 a row and makes a
``StepRow`` when one is read (``held_rows``). It is built from the ranges' columns in numpy:
each cell (a rank's step and a stage in it) adds up its runs in the ranges' order, as ``+=``
does, and a row's stages keep the order their first runs came in.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from mindspeed_prof.analysis.held_rows import HeldRows, NamedCells
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.report.compute import Warmup
from mindspeed_prof.analysis.rows import StepRow

__all__ = ["StepTable", "per_step"]


class StepTable(HeldRows[StepRow]):
    """Rows per rank and step, in (rank, source, step) order, as columns: ``whos`` the
    (rank, source) of each ``who`` code, ``steps`` each row's step, ``total`` its own length
    (``has_total`` 0 where no step range was captured), ``stages`` its stages' milliseconds in
    the order they first ran in the step."""

    __slots__ = ("has_total", "stages", "steps", "total", "warmup", "who", "whos")

    def __init__(self) -> None:
        self.whos: list[tuple[int | None, str]] = []
        self.who = array("i")
        self.steps: list[int] = []
        self.total = array("d")
        self.has_total = bytearray()
        self.warmup = bytearray()
        self.stages = NamedCells()

    def _len(self) -> int:
        return len(self.steps)

    def _row(self, i: int) -> StepRow:
        rank, source = self.whos[self.who[i]]
        return StepRow(
            rank=rank,
            source=source,
            step=self.steps[i],
            total=self.total[i] if self.has_total[i] else None,
            stages=self.stages.row(i),
            warmup=bool(self.warmup[i]),
        )


def per_step(ranges: Sequence[Range], warmup: Warmup) -> StepTable:
    """Per rank and step: each stage's milliseconds, and ``total`` the step's own length."""
    import numpy as np

    cols = columns(ranges, "step", "stage", stepped=True)
    out = StepTable()
    if not len(cols):
        return out
    labels, steps = cols.table.labels, cols.table.steps
    # per label: its (rank, source) and its stage's code (0: the step itself)
    whos: dict[tuple[int | None, str], int] = {}
    names: dict[str, int] = {}
    who_of = np.zeros(len(labels), dtype=np.int64)
    name_of = np.zeros(len(labels), dtype=np.int64)
    for code, (rank, kind, name, source, _) in enumerate(labels):
        who_of[code] = whos.setdefault((rank, source), len(whos))
        name_of[code] = 0 if kind == "step" else names.setdefault(name, len(names)) + 1
    row_key = who_of[cols.label] * len(steps) + cols.step
    keys, row = np.unique(row_key, return_inverse=True)
    del row_key
    row = row.ravel()
    cell = row * (len(names) + 1) + name_of[cols.label]
    cells, first, inverse = np.unique(cell, return_index=True, return_inverse=True)
    del cell
    ms = np.bincount(inverse.ravel(), weights=cols.dura / 1000.0)  # in order, from 0.0
    del inverse
    cell_row, cell_name = np.divmod(cells, len(names) + 1)
    # rows in (rank, source, step) order; each row's cells in the order they first ran
    who_list = list(whos)
    key_who, key_step = np.divmod(keys, len(steps))
    row_who, row_step = key_who.tolist(), key_step.tolist()
    order = sorted(range(len(keys)), key=lambda i: _order(who_list[row_who[i]], steps[row_step[i]]))
    rank_of_row = np.empty(len(keys), dtype=np.int64)
    rank_of_row[order] = np.arange(len(keys))
    by_row = np.lexsort((first, rank_of_row[cell_row]))
    cell_row, cell_name, ms = rank_of_row[cell_row][by_row], cell_name[by_row], ms[by_row]
    del by_row, first
    is_total = cell_name == 0
    has_total = np.zeros(len(keys), dtype=np.uint8)
    total = np.zeros(len(keys), dtype=np.float64)
    has_total[cell_row[is_total]] = 1
    total[cell_row[is_total]] = ms[is_total]
    stage = ~is_total
    out.whos = who_list
    in_order = np.asarray(order, dtype=np.int64)
    out.who = array("i", key_who[in_order].astype(np.int32).tobytes())
    out.steps = [steps[s] for s in key_step[in_order].tolist()]
    out.total = array("d", total.tobytes())
    out.has_total = bytearray(has_total.tobytes())
    out.warmup = bytearray((who_list[w] + (s,)) in warmup for w, s in zip(out.who, out.steps))
    counts = np.bincount(cell_row[stage], minlength=len(keys))
    out.stages = NamedCells.of_columns(
        list(names),
        array("q", np.concatenate(([0], np.cumsum(counts))).astype(np.int64).tobytes()),
        array("i", (cell_name[stage] - 1).astype(np.int32).tobytes()),
        array("d", ms[stage].tobytes()),
    )
    return out


def _order(who: tuple[int | None, str], step: int | None) -> tuple[object, ...]:
    return (rank_order(who[0]), who[1], step)
