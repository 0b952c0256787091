"""The demo's Ray cluster: one of its own, or a running one when asked (``demo.ray_address``,
else ``RAY_ADDRESS``).

Ray gives a new node ``NODE_WAIT_S`` to register, a wait its own code fixes; on a busy machine
that is not always enough. A start that fails is tried once more (what the failed try left
running is stopped first); after that the demo says so in one line and runs its workers as
plain processes (``demo.local``). A cluster asked for by address is joined, or the demo
stops with one line: it never starts another in its place.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from mindspeed_prof.ray.link import without_token_notice

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ATTEMPTS", "NODE_WAIT_S", "Cluster", "endpoints", "start"]

#: How long Ray waits for a new node to register (``ray/_private/node.py``; not settable).
NODE_WAIT_S = 30
#: Starts of the demo's own cluster before running in-process.
ATTEMPTS = 2

Say = Callable[[str], None]


@dataclass(frozen=True)
class Cluster:
    """The cluster the demo's workers run on: ``connected`` when the demo connected to it
    (and so disconnects at its end, which stops a cluster it started)."""

    connected: bool


def start(
    workers: int, address: str | None, say: Say, init: Callable[..., Any] | None = None
) -> Cluster | None:
    """Start (or join) the cluster for ``workers`` actors; None: run in this process instead
    (said). ``init``: ``ray.init`` (a double in tests)."""
    import ray

    init = init or ray.init
    if ray.is_initialized():  # the caller's cluster (a notebook, a test session)
        return Cluster(connected=False)
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _join(address, workers, init)
        return Cluster(connected=True)
    last = ""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with without_token_notice():
                # address="local": the demo's own cluster, even where `ray start` runs one
                init(
                    address="local",
                    num_cpus=max(workers, 1),
                    include_dashboard=False,
                    log_to_driver=True,
                    configure_logging=False,
                )
            return Cluster(connected=True)
        except Exception as err:  # noqa: BLE001 - any failed start: cleared, tried again, said
            last = _first_line(err)
            _stop_what_was_started(err.__traceback__)
            ray.shutdown()
        if attempt < ATTEMPTS:
            say(
                f"mindspeed-prof demo: Ray did not start ({last}); trying once more (Ray "
                f"gives its node {NODE_WAIT_S} s: a busy machine may need longer)"
            )
    say(
        f"mindspeed-prof demo: Ray did not start in {ATTEMPTS} tries ({last}): running the "
        f"{workers} workers as plain processes instead, without Ray (no capture --ray, no "
        "Ray metrics; RAY_ADDRESS=HOST:PORT joins a running cluster)"
    )
    return None


def _join(address: str, workers: int, init: Callable[..., Any]) -> None:
    """Join the cluster at ``address``, or stop with one line saying why not."""
    import ray

    try:
        with without_token_notice():
            init(address=address, log_to_driver=True, configure_logging=False)
    except Exception as err:  # noqa: BLE001 - one line, whatever Ray raised
        raise SystemExit(
            f"mindspeed-prof demo: cannot join the Ray cluster at {address} "
            f"({_first_line(err)}); unset RAY_ADDRESS (or demo.ray_address) to let the demo "
            "start its own"
        ) from None
    cpus = float(ray.cluster_resources().get("CPU", 0))
    if cpus < workers:
        ray.shutdown()
        raise SystemExit(
            f"mindspeed-prof demo: the Ray cluster at {address} has {cpus:g} CPUs; the demo's "
            f"{workers} workers take one each (demo.workers={int(cpus)}, or add nodes)"
        )


def endpoints(nodes: Sequence[Mapping[str, object]]) -> list[str]:
    """Each alive node's Prometheus endpoint (Ray's metrics export port), from ``ray.nodes()``."""
    return [
        f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
        for n in nodes
        if n.get("Alive", True) and n.get("MetricsExportPort")
    ]


def _first_line(err: BaseException) -> str:
    text = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    line = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return line if len(line) <= 200 else line[:199] + "…"


def _stop_what_was_started(tb: TracebackType | None) -> None:
    """The processes a failed start left (its half-made node is in the failing frames): they
    would hold CPU while the next try starts (else they go only when this process ends)."""
    try:
        from ray._private.node import Node
    except ImportError:
        return
    while tb is not None:
        node = tb.tb_frame.f_locals.get("self")
        if isinstance(node, Node):
            try:
                node.kill_all_processes(check_alive=False, allow_graceful=False)
            except Exception:  # noqa: BLE001, S110 - best effort: they die with this process
                pass
            return
        tb = tb.tb_next
