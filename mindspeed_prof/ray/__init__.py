"""Ray integration, a layer above capture and analysis: each worker profiles itself; summaries
come back to the driver through Ray.

    cfg = worker_config(hydra_cfg.profiler_config)            # on the driver: plain, resolved
    workers = [Worker.remote(rank=r, profiler_config=cfg) for r in range(n)]
    ...                                                        # Worker mixes in ProfilerMixin
    summaries = collect(workers, ranks=list(range(n)))        # no shared filesystem needed
    write_cluster_summary(save_root(cfg), summaries)

``open_board()`` on the driver, after ``ray.init``, lets ``mindspeed-prof capture --ray`` reach
the workers of this job.

Its modules: ``worker`` (the worker's mixin and config), ``board`` (on-demand capture's carrier
through Ray, every Ray actor's request source), ``summary`` (``cluster_summary.json``),
``telemetry`` (the ``ray`` sink, ``gather_metrics``), ``cluster`` (``analyse --ray``: reading
captures on the nodes that hold them) and ``link`` (joining a cluster from a command). Each
name here is imported on first use (``link`` alone for a command that only joins a cluster);
``capture.plugins`` imports ``board`` and ``telemetry``, which register themselves, where a
profiler needs them. Ray itself is imported only when called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from mindspeed_prof.ray.board import open_board
    from mindspeed_prof.ray.summary import COLLECT_TIMEOUT_S, collect, write_cluster_summary
    from mindspeed_prof.ray.telemetry import METRICS_TIMEOUT_S, gather_metrics
    from mindspeed_prof.ray.worker import ProfilerMixin, WorkerConfig, save_root, worker_config

_LAZY = {
    "open_board": "board",
    "COLLECT_TIMEOUT_S": "summary",
    "collect": "summary",
    "write_cluster_summary": "summary",
    "METRICS_TIMEOUT_S": "telemetry",
    "gather_metrics": "telemetry",
    "ProfilerMixin": "worker",
    "WorkerConfig": "worker",
    "save_root": "worker",
    "worker_config": "worker",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
