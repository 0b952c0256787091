"""File names and suffixes of everything mindspeed-prof writes or reads: the one place they live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "ANALYSIS", "CACHE", "CLUSTER_SUMMARY", "DB", "MANIFEST", "MEMORY_SNAPSHOT", "MEMORY_TIMELINE",
    "NPU_FOLDER", "NPU_OUTPUT", "SPANS",
    "SUMMARY", "SWEEP_SUMMARY", "TRACE", "TRACE_GZ", "TRACE_STEM", "anchor", "capture_stem",
    "hydra_chdir", "hydra_save_root", "is_capture_file", "job_save_root",
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


def anchor(path: str | Path) -> Path:
    """An absolute save path. Inside a Hydra job a relative one lives where the app's own
    relative files do (``job_save_root``); elsewhere in the current directory."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return hydra_save_root(p, HydraConfig.get())
    except Exception:  # noqa: BLE001 - no Hydra, or its config is not set: plain cwd
        pass
    return p.absolute()


def hydra_save_root(path: Path, hydra: Any) -> Path:
    """``job_save_root`` for the Hydra job whose ``hydra`` config node is given."""
    multirun = str(getattr(hydra, "mode", "")).endswith("MULTIRUN")
    try:
        num = int(hydra.job.num) if multirun else None
    except (TypeError, ValueError):
        num = None
    return job_save_root(path, launch_dir=Path(hydra.runtime.cwd),
                         output_dir=Path(hydra.runtime.output_dir),
                         chdir=hydra_chdir(hydra.job.chdir), job_num=num)


def hydra_chdir(value: bool | None) -> bool:
    """Whether Hydra moves a job into its output dir: ``hydra.job.chdir``, or when unset
    Hydra's own default (no for ``version_base`` 1.2 and later, ``None`` included)."""
    if value is not None:
        return bool(value)
    from hydra import version

    return not version.base_at_least("1.2")


def job_save_root(path: Path, *, launch_dir: Path, output_dir: Path, chdir: bool,
                  job_num: int | None) -> Path:
    """Where a relative save ``path`` lives for a Hydra job: in the job's working directory,
    as the app's own relative files do. That is the job's output dir with ``hydra.job.chdir``
    true, else the launch dir (MindSpeed-RL's ``version_base=None`` apps: ``./profiler_data``
    next to where it was started), where a multirun job gets ``<path>/<job num>/`` of its own.
    """
    if path.is_absolute():
        return path
    if chdir:
        return output_dir / path
    return launch_dir / path / str(job_num) if job_num is not None else launch_dir / path
