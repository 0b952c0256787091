"""File names and suffixes of everything mindspeed-prof writes or reads: the one place they live."""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ANALYSIS",
    "CACHE",
    "CLUSTER_SUMMARY",
    "DB",
    "MANIFEST",
    "MEMORY_SNAPSHOT",
    "MEMORY_TIMELINE",
    "NPU_FOLDER",
    "MSPROF_OUTPUT",
    "NPU_OUTPUT",
    "SPANS",
    "SUMMARY",
    "SWEEP_SUMMARY",
    "TRACE",
    "TRACE_GZ",
    "TRACE_STEM",
    "capture_stem",
    "is_capture_file",
]

#: torch Chrome trace, its gzipped form, and the SQLite export (``profile_export_type: db``).
TRACE_STEM = ".pt.trace"
TRACE = TRACE_STEM + ".json"
TRACE_GZ = TRACE + ".gz"
DB = TRACE_STEM + ".db"
#: The span recorder's range file (``mstx`` ranges, ``level_none``).
SPANS = ".mstx.trace.json"
#: Memory captures: torch's memory timeline (CPU) and a CUDA allocator snapshot (a pickle).
MEMORY_TIMELINE = ".memory_timeline.json.gz"
MEMORY_SNAPSHOT = ".memory_snapshot.pickle"
#: Per-capture summary written when ``profile_analysis: true``.
SUMMARY = ".summary.json"
#: torch_npu's capture folders end so; parsed output lives in this sub-folder.
NPU_FOLDER = "_ascend_pt"
NPU_OUTPUT = "ASCEND_PROFILER_OUTPUT"
#: The folder a CANN ``msprof`` export writes its timeline and CSVs to.
MSPROF_OUTPUT = "mindstudio_profiler_output"

#: Cached analysis of a capture, next to it: ``.<capture name>`` + this (msgpack).
CACHE = ".analysis-cache"

MANIFEST = "manifest.json"
CLUSTER_SUMMARY = "cluster_summary.json"
SWEEP_SUMMARY = "sweep_summary.json"
ANALYSIS = "analysis.json"

_CAPTURE_SUFFIXES = (TRACE, TRACE_GZ, DB, SPANS)


def is_capture_file(name: str) -> bool:
    """Whether ``name`` is one of the capture files mindspeed-prof writes."""
    return name.endswith(_CAPTURE_SUFFIXES)


def capture_stem(path: Path) -> str:
    """``rank0_host_1_step2`` for any file of that capture (trace, range file, db, summary)."""
    name = path.name
    for marker in (TRACE_STEM, SPANS[: -len(".json")], SUMMARY, ".memory_"):
        if marker in name:
            name = name.split(marker)[0]
    return name
