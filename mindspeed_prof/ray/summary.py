"""``cluster_summary.json`` on the driver: every worker's summary
(``ProfilerMixin.profiler_summary``) collected through Ray, and those that did not come back,
written in the save root. The rows'
shapes are ``formats.cluster``'s (read by ``analyse`` and ``doctor`` without Ray).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from mindspeed_prof.formats import CLUSTER_SUMMARY
from mindspeed_prof.formats.cluster import (
    ClusterSummary,
    LostWorker,
    Missing,
    SummaryStatus,
    Worker,
    WorkerSummary,
)
from mindspeed_prof.jsonio import write_json

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["COLLECT_TIMEOUT_S", "collect", "write_cluster_summary"]


#: How long ``collect`` waits for the workers' summaries (a summary closes the worker's
#: profiler, so it may wait for a last export).
COLLECT_TIMEOUT_S = 300.0


def collect(
    workers: Sequence[ActorHandle],
    method: str = "profiler_summary",
    timeout_s: float = COLLECT_TIMEOUT_S,
    ranks: list[int] | None = None,
) -> list[Worker]:
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
    out: list[Worker] = []
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
            summary.status = "restarted" if summary.restarted else "ok"
            if summary.restarted:
                summary.worker, summary.actor = i, _actor(workers[i])
            out.append(summary)
    return sorted(out, key=_order)


def _order(row: Worker) -> tuple[bool, int, int]:
    """By rank (None last), then by place in the driver's list."""
    worker = row.worker if isinstance(row, LostWorker) and row.worker is not None else -1
    return (row.rank is None, row.rank or 0, worker)


def _missing(
    worker: ActorHandle, index: int, rank: int | None, status: SummaryStatus, error: str
) -> LostWorker:
    """The entry of a worker whose summary did not come back."""
    return LostWorker(rank=rank, worker=index, actor=_actor(worker), status=status, error=error)


def _actor(worker: ActorHandle) -> str:
    """The worker's Ray actor id, in hex ("" where the handle does not say)."""
    actor = getattr(worker, "_actor_id", None)
    return actor.hex() if actor is not None else ""


def _restarted(files: int) -> str:
    """A restarted worker's ``missing`` line: it answered, from a new process."""
    return (
        f"restarted by Ray; its earlier processes left {files} file{'s' * (files != 1)} "
        "(earlier_files)"
    )


def _first_line(err: BaseException) -> str:
    """Ray's error as one line: its type and its first line of text that says something."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0][:200] if lines else ''}".rstrip(": ")


def write_cluster_summary(root: Path, summaries: Sequence[Worker]) -> Path:
    """``cluster_summary.json`` in the save root: one entry per worker, and under ``missing``
    each worker whose summary did not come back (``collect``'s ``died``, ``timeout``,
    ``failed``) or came from a process Ray restarted (``restarted``)."""
    path = Path(root) / CLUSTER_SUMMARY
    missing = [
        Missing(
            rank=s.rank,
            worker=s.worker,
            actor=s.actor,
            status=s.status,
            error=_restarted(len(s.earlier_files or [])),
        )
        if isinstance(s, WorkerSummary)
        else Missing(rank=s.rank, worker=s.worker, actor=s.actor, status=s.status, error=s.error)
        for s in summaries
        if (s.status or "ok") != "ok"
    ]
    summary = ClusterSummary(
        workers=list(summaries),
        stage_rank=[row for s in summaries for row in s.stage_rank],
        missing=missing,
    )
    write_json(path, msgspec.to_builtins(summary))
    return path
