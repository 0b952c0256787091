"""``--ray``: every node reads the captures on its own disk; only the decoded results travel.

The driver lists the captures below ROOT on each alive node (a task pinned there with
``NodeAffinitySchedulingStrategy``), gives each capture to a node that holds it (a file seen by
several nodes, on a shared filesystem, is read once, by the node with the fewest bytes so far),
and reads it there, through that node's cache. Ray schedules; nothing here retries or balances
beyond that choice.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import NamedTuple

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.parallel import read_encoded
from mindspeed_prof.analysis.readers import BadFile, TraceData, discover
from mindspeed_prof.analysis.report.captures import Placement
from mindspeed_prof.jsonio import within
from mindspeed_prof.raylink import connect

__all__ = ["Away", "elsewhere", "read_on_cluster", "restarts", "summary_workers"]

Capture = tuple[str, int, int]  # its path on the node that holds it, bytes, newest mtime
Listing = tuple[str, str, str, list[Capture]]  # node id, host, root as the node sees it, captures


def holdings(root: str) -> tuple[str, list[Capture]]:
    """``root`` as this node sees it (``~``: its own home) and the captures it holds there
    (``discover``'s: memory files are not captures; the driver joins them to theirs)."""
    here = Path(root).expanduser()
    found = []
    try:
        for path in discover(here):
            if here.is_dir() and not within(path, here):
                continue  # a link out of the root: not read (as analyse does on one machine)
            key = cache.fingerprint(path)
            if key is not None:
                found.append((str(path), key.size, key.mtime_ns))
    except BadFile:
        pass  # no such root on this node
    return str(here), found


def assign(listings: list[Listing]) -> dict[Capture, str]:
    """The node that reads each capture: a node that holds it; a capture several nodes hold (a
    shared filesystem) goes to whichever has the fewest bytes so far, the first on a tie."""
    load = {node: 0 for node, _, _, _ in listings}
    owner: dict[Capture, str] = {}
    for node, _, _, found in listings:
        for capture in found:
            if capture not in owner or load[node] < load[owner[capture]]:
                if capture in owner:
                    load[owner[capture]] -= capture[1]
                owner[capture] = node
                load[node] += capture[1]
    return owner


def _listing(root: str) -> Listing:
    """On one node: its id, host name and ``holdings(root)``."""
    import ray

    return (ray.get_runtime_context().get_node_id(), socket.gethostname(), *holdings(root))


def _reading(
    path: str, root: str, use_cache: bool, comm_kernels: str = ""
) -> tuple[str, bytes | TraceData | str]:
    import ray

    node = ray.get_runtime_context().get_node_id()
    return node, read_encoded(Path(path), Path(root).expanduser(), use_cache, comm_kernels)


def read_on_cluster(
    root: Path, address: str | None = None, use_cache: bool = True, comm_kernels: str = ""
) -> tuple[list[TraceData | str], list[Placement]]:
    """Every capture below ``root`` on any node, read where it lies, in a stable order, and
    where each was read: ``{"path", "node", "host", "bytes"}``. A ``root`` starting with ``~``
    is each node's own home. ``comm_kernels``: as ``parallel.read_all``."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    connect(address)
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))

    def on(node: str) -> NodeAffinitySchedulingStrategy:
        return NodeAffinitySchedulingStrategy(node_id=node, soft=False)

    lister = ray.remote(num_cpus=0)(_listing)
    listings = ray.get([lister.options(scheduling_strategy=on(n)).remote(str(root)) for n in nodes])
    hosts = {node: host for node, host, _, _ in listings}
    roots = {node: Path(there) for node, _, there, _ in listings}
    owner = assign(listings)

    def under_root(capture: Capture) -> Path:
        """The capture as ``root/...``: where it lies below the root of the node holding it."""
        return root / Path(capture[0]).relative_to(roots[owner[capture]])

    captures = sorted(owner, key=lambda c: (under_root(c), c[1:]))  # discover's order
    reader = ray.remote(num_cpus=1)(_reading)
    refs = [
        reader.options(scheduling_strategy=on(owner[c])).remote(
            c[0], str(root), use_cache, comm_kernels
        )
        for c in captures
    ]
    results: list[TraceData | str] = []
    placed: list[Placement] = []
    for capture, (node, result) in zip(captures, ray.get(refs)):
        if isinstance(result, bytes):
            result = cache.decode(result)
            result.path = under_root(capture)
        results.append(result)
        placed.append(
            {"path": capture[0], "node": node, "host": hosts.get(node, ""), "bytes": capture[1]}
        )
    return results, placed


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
