"""Ray integration: each worker profiles itself; summaries come back to the driver through Ray.

    cfg = worker_config(hydra_cfg.profiler_config)            # on the driver: plain, resolved
    workers = [Worker.remote(rank=r, profiler_config=cfg) for r in range(n)]
    ...                                                        # Worker mixes in ProfilerMixin
    summaries = collect(workers, ranks=list(range(n)))        # no shared filesystem needed
    write_cluster_summary(save_root(cfg), summaries)

``open_board()`` on the driver, after ``ray.init``, lets ``mindspeed-prof capture --ray`` reach
the workers of this job (see ``mindspeed_prof.capture.control.board``).
"""

from __future__ import annotations

import os
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

import msgspec

from mindspeed_prof.capture.profiler import Profiler
from mindspeed_prof.capture.run import resolve as resolve_run
from mindspeed_prof.config.schema import EXTENSIONS
from mindspeed_prof.config.validate import RUN_KEY, sections, validate
from mindspeed_prof.formats import CLUSTER_SUMMARY
from mindspeed_prof.formats.cluster import (
    FileEntry,
    Missing,
    RankMetrics,
    SummaryStatus,
    WorkerSummary,
)
from mindspeed_prof.formats.save_root import anchor
from mindspeed_prof.jsonio import open_regular, write_json

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = [
    "COLLECT_TIMEOUT_S",
    "METRICS_TIMEOUT_S",
    "ProfilerMixin",
    "collect",
    "gather_metrics",
    "open_board",
    "save_root",
    "worker_config",
    "write_cluster_summary",
    "WorkerConfig",
]


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
        return {"rank": self.profiler.rank, "metrics": self.profiler.metrics(step)}

    def profiler_summary(self) -> WorkerSummary:
        """Close the profiler and describe what this worker wrote, read from its own files."""
        from mindspeed_prof.analysis.summary import capture_summary

        prof = self.profiler
        prof.close()
        files = [Path(f) for c in prof.captures for f in c.files]
        written = [f for f in files if f.is_file()]
        summary = capture_summary(written) if written else None
        return {
            "run": prof.run[0],
            "rank": prof.rank,
            "role": prof.role,
            "host": socket.gethostname(),
            "node": _node_id(),  # holds the files below
            "pid": os.getpid(),
            "enabled": prof.plan.enabled,
            "failed": prof.failed,
            "captures": [c.to_json() for c in prof.captures],
            "files": [FileEntry(str(f), f.stat().st_size if f.is_file() else None) for f in files],
            **_restart(prof, files),
            "stage_rank": summary["stage_rank"] if summary else [],
            "per_step": summary["per_step"] if summary else [],
        }


def _restart(prof: Profiler, files: list[Path]) -> WorkerSummary:
    """``restarted`` and ``earlier_files`` where Ray restarted this actor: the files of this
    run and rank that another process left in the folders this one wrote to (one listing per
    folder, no walk of the save root); {} otherwise."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return {}
    try:
        restarted = bool(ray.get_runtime_context().was_current_actor_reconstructed)
    except Exception:  # outside an actor: a task, the driver
        return {}
    if not restarted:
        return {}
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
    return {"restarted": True, "earlier_files": earlier}


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


#: The board this driver opened: Ray stops an actor once no handle to it is left.
_board: ActorHandle | None = None


def open_board() -> ActorHandle:
    """On the driver, after ``ray.init``: this job's capture board, the actor
    ``board-<job id>`` in the namespace ``mindspeed_prof`` (opened once; it lives as long as
    the driver). Workers' on-demand checks find it by that name; ``capture --ray`` posts on it."""
    import ray

    from mindspeed_prof.capture.control.board import NAMESPACE, ControlBoard, board_name

    global _board
    name = board_name(ray.get_runtime_context().get_job_id())
    _board = (
        ray.remote(num_cpus=0)(ControlBoard)
        .options(name=name, namespace=NAMESPACE, get_if_exists=True)
        .remote()
    )
    return _board


#: How long ``collect`` waits for the workers' summaries (a summary closes the worker's
#: profiler, so it may wait for a last export).
COLLECT_TIMEOUT_S = 300.0


def collect(
    workers: Sequence[ActorHandle],
    method: str = "profiler_summary",
    timeout_s: float = COLLECT_TIMEOUT_S,
    ranks: list[int] | None = None,
) -> list[WorkerSummary]:
    """Every worker's summary the driver gets within ``timeout_s``, sorted by rank, each with
    ``status: ok``. A worker that did not answer is an entry of its own, ``status``: ``died``
    (its process is gone: killed, crashed, out of memory), ``timeout`` (no answer in time:
    stopped, hung or still exporting) or ``failed`` (``method`` raised); with ``worker`` (its
    place in ``workers``), ``rank`` (``ranks[worker]`` when given, else None), ``actor`` (its
    Ray actor id) and ``error`` (one line), and no captures. No worker's fault costs another's
    summary, and none blocks for longer than ``timeout_s``."""
    import ray

    refs = [getattr(w, method).remote() for w in workers]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s) if refs else ([], [])
    answered = set(ready)
    out: list[WorkerSummary] = []
    for i, ref in enumerate(refs):
        rank = ranks[i] if ranks is not None and i < len(ranks) else None
        if ref not in answered:
            out.append(
                _missing(
                    workers[i],
                    i,
                    rank,
                    "timeout",
                    f"no answer within {timeout_s:g} s (stopped, hung or still exporting)",
                )
            )
            continue
        try:
            summary: WorkerSummary = ray.get(ref)
        except ray.exceptions.RayActorError as err:
            out.append(_missing(workers[i], i, rank, "died", _first_line(err)))
        except ray.exceptions.RayError as err:
            out.append(_missing(workers[i], i, rank, "failed", _first_line(err)))
        else:
            out.append({**summary, "status": "restarted" if summary.get("restarted") else "ok"})
    return sorted(
        out, key=lambda s: (s.get("rank") is None, s.get("rank") or 0, s.get("worker", -1))
    )


#: How long ``gather_metrics`` waits: a live figure that is late is left out, not waited for.
METRICS_TIMEOUT_S = 10.0


def gather_metrics(
    workers: Sequence[ActorHandle], step: int | None = None, timeout_s: float = METRICS_TIMEOUT_S
) -> dict[str, float]:
    """On the driver: every worker's ``prof.metrics(step)`` (``ProfilerMixin.profiler_metrics``)
    as ``across_ranks`` gives them, max, median and the slowest rank per figure, for the
    driver's tracker. Workers that do not answer within ``timeout_s`` or fail are left out
    (``prof/ranks`` counts those that answered)."""
    import ray

    from mindspeed_prof.capture.telemetry import across_ranks

    refs = [w.profiler_metrics.remote(step) for w in workers]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s) if refs else ([], [])
    per_rank: dict[int, dict[str, float]] = {}
    for ref in ready:
        try:
            got: RankMetrics = ray.get(ref)
        except ray.exceptions.RayError:
            continue
        per_rank[int(got["rank"])] = got["metrics"]
    return across_ranks(per_rank)


def _missing(
    worker: ActorHandle, index: int, rank: int | None, status: SummaryStatus, error: str
) -> WorkerSummary:
    """The entry of a worker whose summary did not come back."""
    actor = getattr(worker, "_actor_id", None)
    return {
        "rank": rank,
        "worker": index,
        "actor": actor.hex() if actor is not None else "",
        "status": status,
        "error": error,
        "captures": [],
        "files": [],
        "stage_rank": [],
        "per_step": [],
    }


def _first_line(err: BaseException) -> str:
    """Ray's error as one line: its type and its first line of text that says something."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


def write_cluster_summary(root: Path, summaries: Sequence[WorkerSummary]) -> Path:
    """``cluster_summary.json`` in the save root: one entry per worker, and under ``missing``
    each worker whose summary did not come back (``collect``'s ``died``, ``timeout``,
    ``failed``)."""
    path = Path(root) / CLUSTER_SUMMARY
    missing = [
        Missing(
            rank=s.get("rank"),
            worker=s.get("worker"),
            actor=s.get("actor"),
            status=s.get("status"),
            error=s.get("error"),
        )
        for s in summaries
        if s.get("status", "ok") != "ok"
    ]
    summary = {
        "workers": summaries,
        "stage_rank": [row for s in summaries for row in s.get("stage_rank", [])],
        "missing": missing,
    }
    write_json(path, msgspec.to_builtins(summary))  # its files: FileEntry structs
    return path
