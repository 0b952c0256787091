"""The operators and kernels of a torch_npu export that wrote no ``trace_view.json``, as a
timeline's detail: the text export's ``kernel_details.csv`` (or msprof's ``op_summary``), the
db export's tables."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

from mindspeed_prof.analysis.readers.npu.db import API_OP, as_ns, rows_of, tables_of
from mindspeed_prof.analysis.readers.npu.tables import Table, number
from mindspeed_prof.analysis.readers.npu.tasks import is_control
from mindspeed_prof.analysis.readers.npu.text import OP_SUMMARY_COLUMNS, kernel_name
from mindspeed_prof.formats.sqlite_read import connect

__all__ = ["db_spans", "kernel_spans"]

#: A span: (category, name, start us, duration us, process, thread).
Span = tuple[str, str, float, float, "str | int", "str | int"]


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


def db_spans(path: Path) -> Iterator[Span]:
    """The spans of a profiler db (``ascend_pytorch_profiler*.db``): PYTORCH_API's operators
    (``cpu_op``, on their thread), TASK's kernels joined with COMPUTE_TASK_INFO (category "",
    as torch_npu's device events, a thread per stream) and COMMUNICATION_OP's collectives (an
    ``HCCL`` thread). A table that cannot be read gives nothing (its analysis says why)."""
    unsaid: list[str] = []
    with closing(connect(path)) as con:
        tables = tables_of(con)
        strings = dict(rows_of(con, "SELECT id, value FROM STRING_IDS", path, unsaid))
        if "PYTORCH_API" in tables:
            types = (
                dict(rows_of(con, "SELECT id, name FROM ENUM_API_TYPE", path, unsaid))
                if "ENUM_API_TYPE" in tables
                else {}
            )
            sql = "SELECT startNs, endNs, globalTid, name, type FROM PYTORCH_API"
            for start, end, tid, api, kind in rows_of(con, sql, path, unsaid):
                if types.get(kind, API_OP) == API_OP:
                    yield from _span("cpu_op", strings.get(api, str(api)), start, end, 0, tid)
        if {"TASK", "COMPUTE_TASK_INFO"} <= tables:
            sql = (
                "SELECT t.startNs, t.endNs, t.streamId, c.name FROM TASK t "
                "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId"
            )
            for start, end, stream, op in rows_of(con, sql, path, unsaid):
                yield from _span(
                    "", strings.get(op, str(op)), start, end, "NPU", f"stream {stream}"
                )
        if "COMMUNICATION_OP" in tables:
            sql = "SELECT startNs, endNs, opName FROM COMMUNICATION_OP"
            for start, end, op in rows_of(con, sql, path, unsaid):
                yield from _span("", strings.get(op, str(op)), start, end, "NPU", "HCCL")


def _span(
    cat: str, name: str, start: object, end: object, pid: str | int, tid: object
) -> Iterator[Span]:
    s, e = as_ns(start), as_ns(end)
    if s is not None and e is not None and e >= s:
        yield (
            cat,
            name,
            s / 1000.0,
            (e - s) / 1000.0,
            pid,
            tid if isinstance(tid, (int, str)) else str(tid),
        )
