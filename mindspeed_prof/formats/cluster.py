"""``cluster_summary.json``'s rows: one per Ray worker, as ``mindspeed_prof.ray.collect`` gets
them back (dicts through Ray, typed here; each file a ``formats.record.FileEntry``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypedDict

from mindspeed_prof.formats.record import FileEntry
from mindspeed_prof.jsonio import JsonableObject

__all__ = ["FileEntry", "Missing", "RankMetrics", "SummaryStatus", "WorkerSummary"]

#: ``ok``: the worker answered; ``restarted``: it answered, from a process Ray restarted (the
#: files of its earlier process under ``earlier_files``); else why not (its process is gone, no
#: answer in time, or the summary method raised).
SummaryStatus = Literal["ok", "restarted", "died", "timeout", "failed"]


class WorkerSummary(TypedDict, total=False):
    """What a worker wrote (``ProfilerMixin.profiler_summary``), or, with ``status`` other than
    ``ok``, why the driver has no summary of it (``worker``: its place in the list, ``actor``:
    its Ray actor id, ``error``: one line)."""

    run: str
    rank: int | None
    role: str
    host: str
    node: str
    pid: int
    enabled: bool
    failed: bool
    captures: list[Mapping[str, object]]  # the captures' manifest records
    files: list[FileEntry]
    #: Ray restarted this actor (``was_current_actor_reconstructed``): the summary is its new
    #: process's; ``earlier_files``: what its earlier processes of this run left beside its own.
    restarted: bool
    earlier_files: list[FileEntry]
    stage_rank: list[JsonableObject]
    per_step: list[JsonableObject]
    status: SummaryStatus
    worker: int
    actor: str
    error: str


class Missing(TypedDict):
    """A worker without a summary, under ``missing``."""

    rank: int | None
    worker: int | None
    actor: str | None
    status: SummaryStatus | None
    error: str | None


class RankMetrics(TypedDict):
    """A worker's live figures (``ProfilerMixin.profiler_metrics``)."""

    rank: int
    metrics: dict[str, float]
