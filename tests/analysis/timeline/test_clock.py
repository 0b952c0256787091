"""A timeline's clock: each capture's offset from its clock record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.timeline.clock import clock_offset_us
from mindspeed_prof.formats.header import read_header


def test_clock_offset_needs_both_halves_of_a_clock_record(tmp_path: Path) -> None:
    """Half a clock record is no record; torch_npu's times are wall-clock already (offset 0)."""

    def data(kind: str, **meta: Any) -> TraceData:
        return TraceData(tmp_path / "c", kind, 0, "actor", 0, meta=read_header(meta, "x")[0])

    assert clock_offset_us(data("torch", clock={"wall_ns": 5000, "trace_ns": None})) is None
    assert clock_offset_us(data("torch", clock={"trace_ns": 5000})) is None
    assert clock_offset_us(data("spans", clock={"wall_ns": 5000, "trace_ns": 2000})) == 3.0
    assert clock_offset_us(data("npu")) == 0.0
    assert clock_offset_us(data("torch", baseTimeNanoseconds=True)) is None
