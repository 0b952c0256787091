"""``manifest.json``: what a job profiled, with which config and versions, and what it wrote."""

from __future__ import annotations

import os
import socket
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["host_info", "list_files", "manifest_name", "versions"]


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
