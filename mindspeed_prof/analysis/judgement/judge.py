"""The judgements of one analysis, from its counted ranges and device rows: the step as the job
lived it, every rank's lag at every row, every stage's trend. ``Tables`` holds each, computed
once (``step_time``, ``lags``, ``growths``); the verdict, the findings and Next read those."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from mindspeed_prof.analysis.judgement.cells import Cells, Rows, Who, by_name
from mindspeed_prof.analysis.judgement.gating import StepTime, gate
from mindspeed_prof.analysis.judgement.gating import step_time as gated_time
from mindspeed_prof.analysis.judgement.growth import Growth, growths
from mindspeed_prof.analysis.judgement.lag import Lag, lags
from mindspeed_prof.analysis.readers.model import DeviceRow, Range
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.rows import StragglerKind

__all__ = ["device_steps", "rank_lags", "stage_growths", "step_cells", "step_ms", "step_time"]


def step_cells(counted: Sequence[Range]) -> Cells:
    """Each rank's steps from its step ranges (as the per-step table adds them up)."""
    # ``by_name``'s rows without a Mapping per name (each step's range has a name of its own):
    # a name's runs added up per step and rank first, then the names in turn, as it did
    per: dict[str, dict[tuple[int, Who], float]] = {}
    c = columns(counted, "step", stepped=True)
    for name, step, rank, source, dur in c.rows("names", "steps", "ranks", "sources", "dur"):
        if dur >= 0:
            cells = per.get(name)
            if cells is None:
                cells = per[name] = {}
            key = (step, (rank, source))
            cells[key] = cells.get(key, 0.0) + dur / 1000.0
    out: Cells = defaultdict(lambda: defaultdict(float))
    for cells in per.values():
        for (step, who), ms in cells.items():
            out[step][who] += ms
    return out


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
    return gated_time(step_cells(counted)) or gated_time(device_steps(device))


def step_ms(counted: Sequence[Range], device: list[DeviceRow]) -> float | None:
    """The median gated step (for the floors' 1% of the step), or None."""
    gates = gate(step_cells(counted)) or gate(device_steps(device))
    return statistics.median(gates.values()) if gates else None


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
    ranged = Rows[tuple[StragglerKind, str]]()
    ranged.add(counted, "stage", lambda name: ("stage", name))
    ranged.add(counted, "range", lambda name: ("range", name))
    rows: Mapping[tuple[StragglerKind, str], Cells] = ranged
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
