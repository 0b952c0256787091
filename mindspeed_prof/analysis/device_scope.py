"""What the device verdict, the CUDA findings and ``compare``'s device table read, decided once.

- ``scope``: the captures whose device rows count, and per what. A capture with steps gives a
  row per step; a capture without steps gives one row, the whole capture. The two are never
  averaged together: where any capture has steps, the captures without are left out (and
  named); where none has, each capture is its own unit, per capture.
- ``counted``: the whole-step rows of the scope (whole-capture rows without steps), warmup
  steps left out unless ``include_warmup``.
- ``parts``: a row's device time as compute, exposed communication, exposed copy and idle.
  On a CUDA row they add up to its span: copy is the busy time neither compute nor
  communication covers (copies, and the rest HTA leaves out of compute).

What is summed over captures whatever their scope (device time per classification rule, world
sizes) is ``capture_facts``'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.analysis.readers.model import DeviceRow, TraceData
from mindspeed_prof.analysis.report.compute import device_rows
from mindspeed_prof.analysis.rows import BOUNDS, Bound, DevicePer

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["Scope", "counted", "has_steps", "parts", "scope"]


def has_steps(t: TraceData) -> bool:
    """Whether ``t``'s device time is broken down per step."""
    return any(r.step is not None and r.stage is None for r in t.device)


class Scope(NamedTuple):
    """``per`` ``step`` or ``capture``; the ``traces`` whose rows count; the captures without
    steps ``left_out`` beside captures with steps."""

    per: DevicePer
    traces: list[TraceData]
    left_out: list[TraceData]


def scope(captures: Captures) -> Scope:
    """The captures the device verdict, findings and ``compare`` read (see the module)."""
    device = [t for t in captures.traces if t.device]
    stepped = [t for t in device if has_steps(t)]
    if stepped:
        return Scope("step", stepped, [t for t in device if not has_steps(t)])
    return Scope("capture", device, [])


def counted(
    captures: Captures, tables: Tables, settings: Settings, within: Scope | None = None
) -> list[DeviceRow]:
    """The whole-step rows of the scope (without steps: each capture's whole row), rank and
    warmup set, warmup steps left out unless ``include_warmup``."""
    s = within or scope(captures)
    return [
        r
        for r in device_rows(s.traces, tables.warmup_steps)
        if r.stage is None
        and (r.step is not None or s.per == "capture")
        and (settings.include_warmup or not r.warmup)
    ]


def parts(r: DeviceRow) -> dict[Bound, float]:
    """``rows.BOUNDS`` of a row in ms: compute, communication no compute overlaps (torch_npu's own
    figure where it gives one), copy (CUDA: the busy time neither compute nor communication
    covers; torch_npu: none) and idle; none below 0 (a NaN is 0)."""
    comm = _pos(r.comm_ms)
    exposed = (
        _pos(r.comm_exposed_ms)
        if r.comm_exposed_ms is not None
        else comm - min(_pos(r.overlap_ms), comm)
    )
    copy = r.busy_ms - _pos(r.compute_ms) - exposed if r.busy_ms is not None else r.memcpy_ms or 0.0
    return dict(zip(BOUNDS, map(_pos, (r.compute_ms, exposed, copy, r.idle_ms))))


def _pos(ms: float) -> float:
    return ms if ms > 0 else 0.0
