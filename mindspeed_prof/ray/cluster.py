"""``analyse --ray``: every node reads the captures on its own disk; only the decoded results
travel. ``reader(address)`` is what the CLI hands ``analyse`` (its ``cluster``).

The driver lists the captures below ROOT on each alive node (a task pinned there with
``NodeAffinitySchedulingStrategy``), gives each capture to a node that holds it (a file seen by
several nodes, on a shared filesystem, is read once, by the node with the fewest bytes so far),
and reads it there, through that node's cache. Ray schedules; nothing here retries or balances
beyond that choice.
"""

from __future__ import annotations

import socket
from functools import partial
from pathlib import Path

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.analyse import ClusterReader
from mindspeed_prof.analysis.parallel import read_encoded
from mindspeed_prof.analysis.readers import BadFile, TraceData, discover
from mindspeed_prof.analysis.report.captures import Placement
from mindspeed_prof.jsonio import within
from mindspeed_prof.ray.link import connect

__all__ = ["assign", "holdings", "read_on_cluster", "reader"]

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


def reader(address: str) -> ClusterReader:
    """``read_on_cluster`` on the cluster at ``address`` ("auto": the one this machine belongs
    to), for ``analyse``'s ``cluster``."""
    return partial(_read, None if address == "auto" else address)


def _read(
    address: str | None, root: Path, use_cache: bool, comm_kernels: str
) -> tuple[list[TraceData | str], list[Placement]]:
    return read_on_cluster(root, address, use_cache, comm_kernels)
