"""``cluster_summary.json``: one row per Ray worker, as ``mindspeed_prof.ray.collect`` gets them
back, and the workers without a summary under ``missing``; written by
``ray.write_cluster_summary``, read back by ``read_cluster_summary`` (``analyse``, ``doctor``
and the manifest's file list, without Ray).

A worker's row is a ``WorkerSummary`` (it answered) or a ``LostWorker`` (``status``: ``died``,
``timeout`` or ``failed``): two shapes with their own key order, as the rows were first written.
A row's fields are in the order they are written; keys this version does not know are ignored,
missing ones defaulted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from mindspeed_prof.formats.record import CaptureRecord, FileEntry, always, field_line
from mindspeed_prof.jsonio import Refused, read_json

__all__ = [
    "ClusterSummary",
    "FileEntry",
    "LostWorker",
    "Missing",
    "RankMetrics",
    "SummaryStatus",
    "Worker",
    "WorkerSummary",
    "read_cluster_summary",
]

#: ``ok``: the worker answered; ``restarted``: it answered, from a process Ray restarted (the
#: files of its earlier process under ``earlier_files``); else why not (its process is gone, no
#: answer in time, or the summary method raised).
SummaryStatus = Literal["ok", "restarted", "died", "timeout", "failed"]
#: The statuses of a worker without a summary (a ``LostWorker``).
LOST: tuple[SummaryStatus, ...] = ("died", "timeout", "failed")


class WorkerSummary(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What a worker wrote (``ProfilerMixin.profiler_summary``). Every field is written but
    ``restarted``, ``earlier_files``, ``worker`` and ``actor`` (only where Ray restarted it)
    and ``status`` (set by ``collect``: absent where the summaries did not cross Ray, as in the
    demo's local mode)."""

    run: str = always("")
    rank: int | None = always(None)
    role: str = always("")
    host: str = always("")
    #: The Ray node that holds ``files`` ("" outside Ray).
    node: str = always("")
    pid: int | None = always(None)
    enabled: bool = always(False)
    failed: bool = always(False)
    #: The captures' manifest records.
    captures: list[CaptureRecord] = always([])
    files: list[FileEntry] = always([])
    #: Ray restarted this actor (``was_current_actor_reconstructed``): the summary is its new
    #: process's; ``earlier_files``: what its earlier processes of this run left beside its own.
    restarted: bool = False
    earlier_files: list[FileEntry] | None = None
    #: ``analysis.summary.capture_summary``'s rows of its captures.
    stage_rank: list[dict[str, Any]] = always([])
    per_step: list[dict[str, Any]] = always([])
    status: SummaryStatus | None = None
    #: Set by ``collect`` with ``status`` where Ray restarted the worker: its place in the
    #: driver's list and its Ray actor id, for its ``missing`` entry.
    worker: int | None = None
    actor: str | None = None


class Missing(msgspec.Struct, kw_only=True):
    """A worker without a summary (or restarted), under ``missing``: its rank (None: not
    known), its place in the driver's list, its Ray actor id and why (``error``: one line).
    Every field is written."""

    rank: int | None = None
    worker: int | None = None
    actor: str | None = None
    status: SummaryStatus | None = None
    error: str | None = None


class LostWorker(Missing, kw_only=True):
    """A worker's row when its summary did not come back: ``Missing``'s fields, and nothing
    captured (every field written)."""

    captures: list[CaptureRecord] = []
    files: list[FileEntry] = []
    stage_rank: list[dict[str, Any]] = []
    per_step: list[dict[str, Any]] = []


#: A row of ``workers``.
Worker = WorkerSummary | LostWorker


class ClusterSummary(msgspec.Struct, kw_only=True):
    """The file: every worker's row, their ``stage_rank`` rows together, and ``missing``. Read
    it with ``read_cluster_summary`` (its rows are of two shapes, told apart by ``status``)."""

    workers: list[Worker] = []
    stage_rank: list[dict[str, Any]] = []
    missing: list[Missing] = []


class RankMetrics(msgspec.Struct, kw_only=True):
    """A worker's live figures (``ProfilerMixin.profiler_metrics``); not written."""

    rank: int
    metrics: dict[str, float]


#: The lists of a row where one entry of the wrong shape costs only itself.
_ENTRIES: dict[str, type] = {
    "captures": CaptureRecord,
    "files": FileEntry,
    "earlier_files": FileEntry,
}


def read_cluster_summary(
    path: Path, refused: Callable[[Refused], None] | None = None
) -> ClusterSummary | None:
    """The cluster summary at ``path``; None when it is missing, not a regular file of JSON
    (``jsonio``'s bounded read) or not an object. A row, or an entry of a row's list, of the
    wrong shape is left out, the rest read; ``refused`` is told, in one line naming the file
    and the fields, of a file not read and of what was left out."""
    try:
        doc = read_json(path)
    except Refused as err:
        if refused is not None:
            refused(err)
        return None
    except OSError:
        return None
    except ValueError:
        if refused is not None:
            refused(Refused(path, "not a cluster summary: not JSON"))
        return None
    if not isinstance(doc, dict):
        if refused is not None:
            refused(Refused(path, "not a cluster summary: not a JSON object"))
        return None
    bad: list[str] = []
    rows = [_row(where, row, bad) for where, row in _list(doc, "workers", bad)]
    summary = ClusterSummary(
        workers=[row for row in rows if row is not None],
        stage_rank=_valid(_list(doc, "stage_rank", bad), dict[str, Any], bad),
        missing=_valid(_list(doc, "missing", bad), Missing, bad),
    )
    if bad and refused is not None:
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        refused(Refused(path, f"left out {'; '.join(bad[:3])}{more}; the rest read"))
    return summary


def _list(doc: dict[str, Any], key: str, bad: list[str], at: str = "") -> list[tuple[str, Any]]:
    """``doc[key]``'s entries, each with where it is (``workers[2]``); [] where it is absent,
    and where it is not a list (named in ``bad``)."""
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        bad.append(f"{at}{key}: expected array, got {type(value).__name__}")
        return []
    return [(f"{at}{key}[{i}]", entry) for i, entry in enumerate(value)]


def _valid(entries: list[tuple[str, Any]], cls: Any, bad: list[str]) -> list[Any]:
    """The entries that are a ``cls``, as one; each other one named in ``bad``."""
    out = []
    for where, entry in entries:
        try:
            out.append(msgspec.convert(entry, cls))
        except msgspec.ValidationError as err:
            bad.append(f"{where}{_at(err)}")
    return out


def _row(where: str, row: Any, bad: list[str]) -> Worker | None:
    """One row of ``workers``, its lists' odd entries left out; None where the row itself is
    of the wrong shape (each named in ``bad``)."""
    if not isinstance(row, dict):
        bad.append(f"{where}: expected object, got {type(row).__name__}")
        return None
    row = dict(row)
    for key, cls in _ENTRIES.items():
        if key in row and row[key] is not None:
            row[key] = _valid(_list(row, key, bad, f"{where}."), cls, bad)
    shape: type[Worker] = LostWorker if row.get("status") in LOST else WorkerSummary
    try:
        return msgspec.convert(row, shape)
    except msgspec.ValidationError as err:
        bad.append(f"{where}{_at(err)}")
        return None


def _at(err: msgspec.ValidationError) -> str:
    """``.rank: expected int, got str`` (``: expected object, got str`` for the entry itself)."""
    line = field_line(err)
    return line.removeprefix("the document") if line.startswith("the document") else f".{line}"
