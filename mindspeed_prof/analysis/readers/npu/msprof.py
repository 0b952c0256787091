"""A CANN ``msprof`` export: ``PROF_*/mindstudio_profiler_output/`` holds msprof's own JSON
timeline (``msprof_*.json``) beside CSVs that are views of the same tasks (``op_summary``,
``op_statistic``, ``task_time``, ``api_statistic``...). The folder is one capture, read by the
torch_npu readers as a text export is: kernels from one source (op_summary, else op_statistic,
else the timeline), never added up across them."""

from __future__ import annotations

import re
from pathlib import Path

from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.npu.facts import facts
from mindspeed_prof.analysis.readers.npu.folder import TRACE_VIEW, read_output
from mindspeed_prof.analysis.readers.ranks import name_rank
from mindspeed_prof.analysis.readers.sniff import (
    API_STATISTIC,
    CHROME,
    NPU_KINDS,
    OP_STATISTIC,
    OP_SUMMARY,
    TRACE,
    TRACE_LIST,
    kind_of,
)
from mindspeed_prof.formats import MSPROF_OUTPUT
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["msprof_files", "read_msprof"]

_TIMELINE = re.compile(r"^msprof_[^/]*\.json$")
#: The CSVs read; the others (task_time, communication...) are views of the same tasks.
_READ = (OP_SUMMARY, OP_STATISTIC, API_STATISTIC)


def msprof_files(folder: Path) -> tuple[dict[str, Path], list[Path]]:
    """The files read, by kind (the first timeline, by name), and the timelines left out
    (msprof cuts a large one into slices)."""
    out = folder / MSPROF_OUTPUT
    files: dict[str, Path] = {}
    timelines = sorted(p for p in out.iterdir() if p.is_file() and _TIMELINE.match(p.name))
    timelines = [p for p in timelines if kind_of(p) in (TRACE, TRACE_LIST, CHROME)]
    if timelines:
        files[TRACE_VIEW] = timelines[0]
    for p in sorted(out.iterdir()):
        if p.is_file() and p.suffix == ".csv":
            kind = kind_of(p)
            if kind in _READ and kind in NPU_KINDS and kind not in files:
                files[kind] = p
    return files, timelines[1:]


def read_msprof(folder: Path, group: str) -> TraceData:
    """The export in ``folder`` as one capture; its rank is the one the folder's name (or the
    one above it) gives, else unknown."""
    rank = name_rank(folder.name)
    if rank is None:
        rank = name_rank(folder.parent.name)
    size = sum(p.stat().st_size for p in (folder / MSPROF_OUTPUT).rglob("*") if p.is_file())
    data = TraceData(folder, "npu", rank, group, size, meta=CaptureHeader(rank=rank))
    data.source = folder.name
    facts(data)
    files, slices = msprof_files(folder)
    read_output(files, data)
    if slices:
        data.notes.append(
            f"{folder}: {len(slices) + 1} timeline slices; the first read "
            f"({files[TRACE_VIEW].name})"
        )
    data.meta.rank = data.rank
    return data
