"""``manifest.json``: what a job profiled, with which config and versions, and what it wrote."""

from __future__ import annotations

import os
import socket
from importlib import metadata
from pathlib import Path
from typing import Any

from mindspeed_prof.formats import NPU_FOLDER, capture_stem, is_capture_file

__all__ = ["capture_count", "host_info", "list_files", "manifest_name", "nothing_captured",
           "versions"]


def manifest_name(rank: int, job: int | None = None) -> str:
    """``manifest.json`` for rank 0, ``manifest.rank<r>.json`` for other ranks of the same job.

    ``job`` (a multirun job number) is given when several jobs share one save root:
    ``manifest.job<n>.json``, ``manifest.job<n>.rank<r>.json``.
    """
    parts = ["manifest"]
    if job is not None:
        parts.append(f"job{job}")
    if rank:
        parts.append(f"rank{rank}")
    return ".".join(parts) + ".json"


def versions() -> dict[str, str | None]:
    """Installed versions, read from package metadata (nothing is imported)."""
    out: dict[str, str | None] = {}
    for dist in ("mindspeed-prof", "torch", "torch_npu", "hydra-core", "omegaconf", "ray"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def host_info() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def list_files(root: Path) -> list[dict[str, Any]]:
    """Every file under ``root`` (relative path and size), manifests excluded."""
    if not root.is_dir():
        return []
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.startswith((".", "manifest")):
            out.append({"path": str(p.relative_to(root)), "bytes": p.stat().st_size})
    return out


def capture_count(manifest: dict[str, Any], shared: bool = False) -> int:
    """A job's captures: its own profiler's, or, in a save root of its own, every capture there
    (Ray workers write theirs beside the driver's). One capture may be several files."""
    own = len(manifest.get("captures", []))
    if shared:  # the root's files belong to several jobs
        return own
    stems = set()
    for f in manifest.get("files", []):
        path = Path(f["path"])
        npu = [i for i, part in enumerate(path.parts) if part.endswith(NPU_FOLDER)]
        if npu:
            stems.add(Path(*path.parts[: npu[0] + 1]))
        elif is_capture_file(path.name):
            stems.add(path.parent / capture_stem(path))
    return max(own, len(stems))


def nothing_captured(manifest: dict[str, Any], shared: bool = False) -> str | None:
    """Why a finished job captured nothing (its chosen stage never ran...); None if it did."""
    if manifest.get("profiler_failed"):
        return "profiling failed in this job (its log names the cause)"
    if capture_count(manifest, shared) or manifest.get("status") == "running":
        return None
    cfg = manifest.get("profiler_config", {}).get("integrated", {})
    start, end = cfg.get("profile_step_start"), cfg.get("profile_step_end")
    if isinstance(start, int) and isinstance(end, int):
        window = f"step {start}" if end - start == 1 else f"steps {start} to {end - 1}"
    else:
        window = "the profiled steps"
    stage = cfg.get("stage", "all")
    if isinstance(stage, list):
        return f"stages {', '.join(map(str, stage))} never ran in this job ({window})"
    if stage != "all":
        return f"stage {stage} never ran in this job ({window})"
    return f"no step of {window} ran in this job"
