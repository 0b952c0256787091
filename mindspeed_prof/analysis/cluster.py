"""The cluster summaries (``cluster_summary.json``, written by ``mindspeed_prof.ray``) as
``analyse`` and ``doctor`` read them, without Ray: the captures they name outside the analysed
root (another node's disk), and the workers Ray restarted."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mindspeed_prof.formats.cluster import FileEntry, Worker, WorkerSummary
from mindspeed_prof.jsonio import within

__all__ = ["Away", "answered", "elsewhere", "restarts", "summary_workers"]


class Away(NamedTuple):
    """Captures a cluster summary names that are not under the analysed root: one rank's
    files in one folder of its node (``here``: that folder is on this machine, elsewhere)."""

    rank: int | None
    host: str
    node: str
    folder: str
    files: int
    bytes: int
    here: bool

    def line(self, root: Path) -> str:
        who = f"rank {self.rank}" if self.rank is not None else "a worker"
        where = f"on node {self.node[:12] or '?'} (host {self.host or '?'})"
        what = f"{self.files} file{'s' if self.files != 1 else ''} ({self.bytes / 2**20:,.1f} MiB)"
        then = (
            f"that folder is on this machine: analyse it too, or copy them under {root}"
            if self.here
            else "not on this machine (another node's disk): read them with --ray, or copy "
            f"them under {root}"
        )
        return (
            f"{who}: the cluster summary names {what} under {self.folder} {where}, outside "
            f"the analysed root; {then}"
        )


def summary_workers(root: Path) -> list[Worker]:
    """The workers of the cluster summaries in ``root`` and its folders one level down (a
    Hydra job dir holds the save root); [] where there is none or it cannot be read."""
    from mindspeed_prof.formats import CLUSTER_SUMMARY
    from mindspeed_prof.formats.cluster import read_cluster_summary

    if not root.is_dir():
        return []
    try:
        folders = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
    except OSError:
        folders = [root]
    workers: list[Worker] = []
    for folder in folders:
        path = folder / CLUSTER_SUMMARY
        summary = read_cluster_summary(path) if path.is_file() else None
        workers += summary.workers if summary is not None else []
    return workers


def answered(workers: Sequence[Worker], run: str | None = None) -> list[WorkerSummary]:
    """The workers that gave their summary (of ``run``, where given: a summary without one
    belongs to every run)."""
    return [
        w for w in workers if isinstance(w, WorkerSummary) and (run is None or w.run in ("", run))
    ]


def elsewhere(
    root: Path, workers: Sequence[Worker], read: set[str], run: str | None = None
) -> list[Away]:
    """The files the summary's ``workers`` (of ``run``, where given) wrote that are not under
    ``root``: not read (``read``: the names of what analyse read) and not there, by their own
    path or as a copy of their save root (any tail of their path under ``root``)."""
    groups: dict[tuple[int | None, str, str, str], list[int]] = {}
    for w in answered(workers, run):
        for path, size in _entries(w.files):
            if path.name in read or _under(root, path):
                continue
            groups.setdefault((w.rank, w.host, w.node, str(path.parent)), []).append(size)
    return [
        Away(rank, host, node, folder, len(sizes), sum(sizes), Path(folder).is_dir())
        for (rank, host, node, folder), sizes in sorted(groups.items(), key=_order)
    ]


def restarts(workers: Sequence[Worker], run: str | None = None) -> list[str]:
    """One line per worker Ray restarted: its rank, actor and the files its earlier
    processes left (``ray.ProfilerMixin.profiler_summary``'s ``earlier_files``)."""
    lines = []
    for w in answered(workers, run):
        if w.status != "restarted":
            continue
        who = f"rank {w.rank}" if w.rank is not None else "a worker"
        earlier = [str(p) for p, _ in _entries(w.earlier_files or [])]
        files = (
            f"its earlier process left {len(earlier)} file{'s' if len(earlier) != 1 else ''}: "
            + ", ".join(earlier[:3])
            + (f" and {len(earlier) - 3} more" if len(earlier) > 3 else "")
            if earlier
            else "its earlier process left no file beside its own"
        )
        lines.append(
            f"{who} (host {w.host or '?'}, pid {w.pid if w.pid is not None else '?'}): "
            f"restarted by Ray during the run; {files}"
        )
    return lines


def _entries(files: list[FileEntry]) -> list[tuple[Path, int]]:
    """A summary's ``files`` (or ``earlier_files``) that were written: (path, bytes)."""
    return [(Path(f.path), f.bytes) for f in files if f.bytes is not None]


def _under(root: Path, path: Path) -> bool:
    """Whether ``path`` lies under ``root`` as it is, or as a copy of its save root does."""
    if within(path, root) and path.exists():
        return True
    parts = path.parts
    return any((root / Path(*parts[i:])).exists() for i in range(1, len(parts)))


def _order(item: tuple[tuple[int | None, str, str, str], list[int]]) -> tuple[int, int, str]:
    rank = item[0][0]
    return (0, rank, item[0][3]) if rank is not None else (1, 0, item[0][3])
