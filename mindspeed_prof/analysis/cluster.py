"""The cluster summaries (``cluster_summary.json``, written by ``mindspeed_prof.ray``) as
``analyse`` and ``doctor`` read them, without Ray: the captures they name outside the analysed
root (another node's disk), and the workers Ray restarted."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from mindspeed_prof.jsonio import within

__all__ = ["Away", "elsewhere", "restarts", "summary_workers"]


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


def summary_workers(root: Path) -> list[dict[str, object]]:
    """The workers of the cluster summaries in ``root`` and its folders one level down (a
    Hydra job dir holds the save root); [] where there is none or it cannot be read."""
    from mindspeed_prof.formats import CLUSTER_SUMMARY
    from mindspeed_prof.jsonio import Refused, read_json

    if not root.is_dir():
        return []
    try:
        folders = [root, *sorted(p for p in root.iterdir() if p.is_dir())]
    except OSError:
        folders = [root]
    workers: list[dict[str, object]] = []
    for folder in folders:
        path = folder / CLUSTER_SUMMARY
        if not path.is_file():
            continue
        try:
            data = read_json(path)
        except (Refused, OSError, ValueError):
            continue
        found = data.get("workers") if isinstance(data, dict) else None
        workers += [w for w in found or [] if isinstance(w, dict)]
    return workers


def elsewhere(
    root: Path, workers: list[dict[str, object]], read: set[str], run: str | None = None
) -> list[Away]:
    """The files the summary's ``workers`` (of ``run``, where given) wrote that are not under
    ``root``: not read (``read``: the names of what analyse read) and not there, by their own
    path or as a copy of their save root (any tail of their path under ``root``)."""
    groups: dict[tuple[object, str, str, str], list[int]] = {}
    for w in workers:
        if run is not None and w.get("run") not in (None, "", run):
            continue
        for entry in _entries(w.get("files")):
            path, size = entry
            if path.name in read or _under(root, path):
                continue
            key = (
                w.get("rank"),
                str(w.get("host") or ""),
                str(w.get("node") or ""),
                str(path.parent),
            )
            groups.setdefault(key, []).append(size)
    return [
        Away(
            rank if isinstance(rank, int) else None,
            host,
            node,
            folder,
            len(sizes),
            sum(sizes),
            Path(folder).is_dir(),
        )
        for (rank, host, node, folder), sizes in sorted(groups.items(), key=_order)
    ]


def restarts(workers: list[dict[str, object]], run: str | None = None) -> list[str]:
    """One line per worker Ray restarted: its rank, actor and the files its earlier
    processes left (``ray.ProfilerMixin.profiler_summary``'s ``earlier_files``)."""
    lines = []
    for w in workers:
        if w.get("status") != "restarted" or (
            run is not None and w.get("run") not in (None, "", run)
        ):
            continue
        rank = w.get("rank")
        who = f"rank {rank}" if isinstance(rank, int) else "a worker"
        earlier = [str(p) for p, _ in _entries(w.get("earlier_files"))]
        files = (
            f"its earlier process left {len(earlier)} file{'s' if len(earlier) != 1 else ''}: "
            + ", ".join(earlier[:3])
            + (f" and {len(earlier) - 3} more" if len(earlier) > 3 else "")
            if earlier
            else "its earlier process left no file beside its own"
        )
        lines.append(
            f"{who} (host {w.get('host') or '?'}, pid {w.get('pid', '?')}): restarted by Ray "
            f"during the run; {files}"
        )
    return lines


def _entries(files: object) -> list[tuple[Path, int]]:
    """A summary's ``files`` (or ``earlier_files``) that were written: (path, bytes)."""
    out = []
    for f in files if isinstance(files, list) else []:
        if (
            isinstance(f, dict)
            and isinstance(f.get("path"), str)
            and isinstance(f.get("bytes"), int)
        ):
            out.append((Path(f["path"]), int(f["bytes"])))
    return out


def _under(root: Path, path: Path) -> bool:
    """Whether ``path`` lies under ``root`` as it is, or as a copy of its save root does."""
    if within(path, root) and path.exists():
        return True
    parts = path.parts
    return any((root / Path(*parts[i:])).exists() for i in range(1, len(parts)))


def _order(item: tuple[tuple[object, str, str, str], list[int]]) -> tuple[int, int, str]:
    rank = item[0][0]
    return (0, rank, item[0][3]) if isinstance(rank, int) else (1, 0, item[0][3])
