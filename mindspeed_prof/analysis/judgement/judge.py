"""The judgements of one analysis, from its counted ranges and device rows: the step as the job
lived it, every rank's lag at every row, every stage's trend. ``Tables`` holds each, computed
once (``step_time``, ``lags``, ``growths``); the verdict, the findings and Next read those."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from mindspeed_prof.analysis.judgement.cells import (
    CellCols,
    Cells,
    Rows,
    Who,
    by_name,
    ranked,
    recorded,
)
from mindspeed_prof.analysis.judgement.gating import StepTime, gates
from mindspeed_prof.analysis.judgement.gating import step_time as gated_time
from mindspeed_prof.analysis.judgement.growth import Growth, growths
from mindspeed_prof.analysis.judgement.lag import Lag, lags
from mindspeed_prof.analysis.readers.model import DeviceRow, Range
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.rows import StragglerKind

__all__ = [
    "device_steps",
    "rank_lags",
    "stage_growths",
    "step_cells",
    "step_cols",
    "step_gates",
    "step_ms",
    "step_time",
]


def step_cols(counted: Sequence[Range]) -> CellCols:
    """Each rank's steps from its step ranges (as the per-step table adds them up), as
    columns: a name's runs added up per step and rank first, then the names in the order the
    ranges first hold them (each step's range may have a name of its own)."""
    import numpy as np

    c = columns(counted, "step", stepped=True)
    dur = c.dura
    keep = dur >= 0  # (NaN left out too)
    label, step = c.label[keep].astype(np.int64), c.step[keep].astype(np.int64)
    ms = dur[keep] / 1000.0
    del dur, keep
    labels, n_steps = c.table.labels, max(len(c.table.steps), 1)
    codes, firsts = np.unique(label, return_index=True)
    name_of = np.zeros(len(labels) or 1, dtype=np.int64)
    who_of = np.zeros(len(labels) or 1, dtype=np.int64)
    names: dict[str, int] = {}
    index: dict[Who, int] = {}
    for code in codes[np.argsort(firsts, kind="stable")].tolist():
        rank, _, name, source, _ = labels[code]
        name_of[code] = names.setdefault(name, len(names))
        who_of[code] = index.setdefault((rank, source), len(index))
    n_whos = max(len(index), 1)
    # a name's (step, rank) cells, its runs added up in order (``bincount``: from 0.0, in order)
    key = (name_of[label] * n_steps + step) * n_whos + who_of[label]
    del label, step
    cell, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    sums = np.bincount(inverse.ravel(), weights=ms, minlength=len(cell))
    del key, inverse, ms
    # then each (step, rank) adds up its names' in the names' order
    order = np.lexsort((first, cell // (n_steps * n_whos)))
    place = cell[order] % (n_steps * n_whos)
    total_cell, first, inverse = np.unique(place, return_index=True, return_inverse=True)
    totals = np.bincount(inverse.ravel(), weights=sums[order], minlength=len(total_cell))
    order = np.argsort(first, kind="stable")
    at = total_cell[order]
    return CellCols(at // n_whos, at % n_whos, totals[order], c.table.steps, list(index))  # type: ignore[arg-type]


def step_cells(counted: Sequence[Range]) -> Cells:
    """Each rank's steps from its step ranges (``step_cols`` as ``Cells``)."""
    return step_cols(counted).cells()


def step_gates(counted: Sequence[Range]) -> dict[int, float]:
    """Per step, the gating rank's milliseconds (``gates`` of ``step_cols``)."""
    return gates(step_cols(counted)).as_dict()


def device_steps(device: Iterable[DeviceRow]) -> Cells:
    """Each rank's steps on the device (torch_npu's Stage column, else the device window), from
    the counted device rows of whole steps."""
    out: Cells = defaultdict(dict)
    for r in device:
        ms = r.step_ms if r.step_ms is not None else r.span_ms
        if r.stage is None and r.step is not None and ms:
            out[r.step][(r.rank, r.source)] = ms
    return out


def step_time(counted: Sequence[Range], device: list[DeviceRow]) -> StepTime | None:
    """The step as the job lived it (``judgement.gating``): from step ranges, else from the
    device's steps; None where neither was recorded."""
    return gated_time(step_cols(counted)) or gated_time(device_steps(device))


def step_ms(counted: Sequence[Range], device: list[DeviceRow]) -> float | None:
    """The median gated step (for the floors' 1% of the step), or None."""
    ms = (
        gates(step_cols(counted)).ms.tolist()
        or gates(CellCols.of(device_steps(device))).ms.tolist()
    )
    return statistics.median(ms) if ms else None


def _compute(device: Iterable[DeviceRow]) -> Cells:
    """Each rank's device compute per step: the rank that computes longest is the one the
    others wait for in their collectives."""
    out: Cells = defaultdict(dict)
    for r in device:
        if r.stage is None and r.step is not None:
            out[r.step][(r.rank, r.source)] = r.compute_ms
    return out


def rank_lags(
    counted: Sequence[Range], device: list[DeviceRow], margin: float, noise_ms: float
) -> list[Lag]:
    """Every rank's lag at every stage and custom range (and, where no range was recorded, in
    device compute), judged together (``judgement.lag``)."""
    if not ranked(counted, "stage", "range"):  # one rank: no lag, but did it record rows?
        if recorded(counted, "stage", "range"):
            return []
        ranged = Rows[tuple[StragglerKind, str]]()
    else:
        ranged = Rows[tuple[StragglerKind, str]]()
        ranged.add(counted, "stage", lambda name: ("stage", name))
        ranged.add(counted, "range", lambda name: ("range", name))
    # a row's cells in the steps two ranks or more ran it: all a lag compares
    rows: Mapping[tuple[StragglerKind, str], Cells] = ranged.multis
    if not ranged:
        compute = _compute(device)
        rows = {("device", "compute"): compute} if compute else {}
    return lags(rows, step_ms(counted, device), margin, noise_ms)


def stage_growths(
    counted: Sequence[Range], device: list[DeviceRow], noise_ms: float
) -> list[Growth]:
    """Every stage's trend over the steps on each rank, judged together
    (``judgement.growth``)."""
    return growths(by_name(counted, "stage"), step_ms(counted, device), noise_ms)
