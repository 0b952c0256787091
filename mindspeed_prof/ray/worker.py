"""A Ray job's workers profile themselves: ``worker_config`` on the driver, ``ProfilerMixin`` in
each worker's actor class (its profiler, its live figures, its summary at the end).
"""

from __future__ import annotations

import os
import re
import socket
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict, cast

from mindspeed_prof.capture.profiler import Profiler
from mindspeed_prof.capture.run import resolve as resolve_run
from mindspeed_prof.config.schema import EXTENSIONS
from mindspeed_prof.config.validate import RUN_KEY, sections, validate
from mindspeed_prof.formats.cluster import FileEntry, RankMetrics, WorkerSummary
from mindspeed_prof.formats.save_root import anchor
from mindspeed_prof.jsonio import open_regular

__all__ = ["ProfilerMixin", "WorkerConfig", "save_root", "worker_config"]


class WorkerConfig(TypedDict, total=False):
    """``worker_config``'s answer: each section set (its fields by name), and the run id."""

    integrated: dict[str, object]
    extensions: dict[str, object]
    actor: dict[str, object]
    rollout: dict[str, object]
    reference: dict[str, object]
    critic: dict[str, object]
    reward: dict[str, object]
    run: str


def worker_config(profiler_config: object) -> WorkerConfig:
    """``profiler_config`` as a plain dict for workers: every section validated, interpolations
    resolved, unset fields dropped and save paths made absolute (anchored where the Hydra job's
    relative files go), and this driver's run id under ``run``, which every worker's captures
    then carry. Each worker picks its section with ``init_profiler(..., role=...)``."""
    validate(profiler_config)  # every section that sets something; raises naming the key
    config: dict[str, dict[str, object]] = {
        name: dict(fields)
        for name, fields in sections(profiler_config).items()
        if name == "integrated" or fields
    }
    config.setdefault("integrated", {})
    for role, fields in config.items():
        if role == "integrated" or (role != EXTENSIONS and "profile_save_path" in fields):
            fields["profile_save_path"] = str(anchor(validate(config, role).profile_save_path))
    # the keys are SECTIONS' (validate refuses others) and RUN_KEY
    return cast("WorkerConfig", {**config, RUN_KEY: resolve_run()[0]})  # the driver's run


def save_root(config: Mapping[str, object], role: str = "integrated") -> Path:
    """Where ``role``'s workers write (``cluster_summary.json`` goes in ``integrated``'s)."""
    return Path(validate(config, role).profile_save_path)


class ProfilerMixin:
    """For Ray actor classes: ``init_profiler`` in ``__init__``, ``profiler_summary`` at the end."""

    profiler: Profiler

    def init_profiler(
        self, profiler_config: Mapping[str, object], rank: int, role: str = "integrated"
    ) -> None:
        from mindspeed_prof.analysis.summary import after_capture

        self.profiler = Profiler.from_config(
            profiler_config, rank=rank, role=role, on_capture=after_capture(profiler_config, role)
        )

    def profiler_metrics(self, step: int | None = None) -> RankMetrics:
        """This worker's rank and ``prof.metrics(step)`` (``telemetry``), for
        ``gather_metrics`` on the driver."""
        return RankMetrics(rank=self.profiler.rank, metrics=self.profiler.metrics(step))

    def profiler_summary(self) -> WorkerSummary:
        """Close the profiler and describe what this worker wrote, read from its own files."""
        from mindspeed_prof.analysis.summary import capture_summary

        prof = self.profiler
        prof.close()
        files = [Path(f) for c in prof.captures for f in c.files]
        written = [f for f in files if f.is_file()]
        summary = capture_summary(written) if written else None
        earlier = _earlier_files(prof, files)
        return WorkerSummary(
            run=prof.run[0],
            rank=prof.rank,
            role=prof.role,
            host=socket.gethostname(),
            node=_node_id(),  # holds the files below
            pid=os.getpid(),
            enabled=prof.plan.enabled,
            failed=prof.failed,
            captures=list(prof.captures),
            files=[FileEntry(str(f), f.stat().st_size if f.is_file() else None) for f in files],
            restarted=earlier is not None,
            earlier_files=earlier,
            stage_rank=summary["stage_rank"] if summary else [],
            per_step=summary["per_step"] if summary else [],
        )


def _earlier_files(prof: Profiler, files: list[Path]) -> list[FileEntry] | None:
    """Where Ray restarted this actor, the files of this run and rank that another process
    left in the folders this one wrote to (one listing per folder, no walk of the save root);
    None otherwise."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    try:
        with warnings.catch_warnings():  # Ray's own property reads its deprecated actor_id
            warnings.simplefilter("ignore", DeprecationWarning)
            restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # outside an actor: a task, the driver
        return None
    if not restarted:
        return None
    from mindspeed_prof.formats.stem import rank_of

    run = re.compile(rb'"run":\s*"' + re.escape(prof.run[0].encode()) + rb'"')
    mine = {f.resolve() for f in files}
    earlier: list[FileEntry] = []
    for folder in sorted({f.parent for f in files}):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            path = folder / name
            if rank_of(name) != prof.rank or path.resolve() in mine or not path.is_file():
                continue
            if _head_matches(path, run):
                earlier.append(FileEntry(str(path), path.stat().st_size))
    return earlier


def _head_matches(path: Path, pattern: re.Pattern[bytes]) -> bool:
    """Whether the header at the start of ``path`` (its first 64 KiB) matches ``pattern``."""
    try:
        fd = open_regular(path)  # a FIFO or a link planted in a capture folder is not read
    except OSError:
        return False
    try:
        return pattern.search(os.read(fd, 1 << 16)) is not None
    except OSError:
        return False
    finally:
        os.close(fd)


def _node_id() -> str:
    """This process's Ray node, or "" outside Ray (asking Ray's context would start Ray)."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return ""
    return str(ray.get_runtime_context().get_node_id())
