"""The spans of a torch_npu export's kernels, from ``kernel_details.csv`` (or msprof's
``op_summary``): a timeline's device detail where no ``trace_view.json`` was written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from mindspeed_prof.analysis.readers.npu.tables import Table, number
from mindspeed_prof.analysis.readers.npu.tasks import is_control
from mindspeed_prof.analysis.readers.npu.text import OP_SUMMARY_COLUMNS, kernel_name

__all__ = ["kernel_spans"]


def kernel_spans(path: Path) -> Iterator[tuple[str, float, float, str]]:
    """``(name, start us, duration us, stream)`` of each kernel of ``kernel_details.csv`` (or
    msprof's ``op_summary``) that has both times, the runtime's own tasks left out: the
    device's slices of a timeline where torch_npu wrote no ``trace_view.json``. Nothing for a
    file without start times or one that cannot be read (its analysis says why)."""
    table = Table.open(path, ("Type", "Start Time(us)", "Duration(us)"), [], OP_SUMMARY_COLUMNS)
    if table is None:
        return
    core = next((c for c in ("Accelerator Core", "Task Type") if table.has(c)), None)
    for row in table.rows:
        if is_control(row[core] if core else None, row["Type"], row.get("Name")):
            continue
        start, dur = number(row["Start Time(us)"]), number(row["Duration(us)"])
        if start is None or dur is None or dur < 0:
            continue
        name = row.get("Name", "").strip() or kernel_name(row["Type"], None)
        yield name, start, dur, row.get("Stream ID", "").strip() or "?"
