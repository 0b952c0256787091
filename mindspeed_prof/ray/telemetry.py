"""Live figures through Ray: the ``ray`` telemetry sink (Ray's metrics API, registered with
``capture.plugins`` on import) and ``gather_metrics``, every worker's figures on the driver.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.telemetry import across_ranks
from mindspeed_prof.capture.telemetry.sinks import NotReady
from mindspeed_prof.capture.telemetry.totals import StepRecord
from mindspeed_prof.formats.cluster import RankMetrics

if TYPE_CHECKING:
    from ray.actor import ActorHandle
    from ray.util.metrics import Gauge

__all__ = ["METRICS_TIMEOUT_S", "RaySink", "gather_metrics"]


class RaySink:
    """Ray's metrics API: gauges ``mindspeed_prof_step_ms``, ``mindspeed_prof_stage_ms``,
    ``mindspeed_prof_range_ms``, ``mindspeed_prof_count`` tagged with rank, role and the
    stage, range or counter name. Ray's metrics agent exports them (Prometheus text on each
    node's metrics export port, prefixed ``ray_``; the dashboard's Grafana)."""

    name = "ray"

    def __init__(self) -> None:
        self._gauges: dict[str, Gauge] = {}

    def send(self, record: StepRecord, rank: int, role: str) -> None:
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            raise NotReady(
                "this process is not in an initialised Ray job (ray.init not "
                "called, or not a Ray worker); sent once it is"
            )
        base = {"rank": str(rank), "role": role}
        if record.step_ms is not None:
            self._gauge("step_ms", "step time, ms", ()).set(record.step_ms, tags=base)
        for kind, values, tag, what in (
            ("stage_ms", record.stages, "stage", "stage time, ms"),
            ("range_ms", record.ranges, "range", "custom range time, ms"),
            ("count", record.counts, "name", "counter per step"),
        ):
            if values:
                gauge = self._gauge(kind, what, (tag,))
                for name, value in values.items():
                    gauge.set(value, tags={**base, tag: name})

    def _gauge(self, kind: str, description: str, tags: tuple[str, ...]) -> Gauge:
        gauge = self._gauges.get(kind)
        if gauge is None:
            from ray.util.metrics import Gauge

            gauge = self._gauges[kind] = Gauge(
                f"mindspeed_prof_{kind}",
                f"mindspeed-prof: {description}",
                tag_keys=("rank", "role", *tags),
            )
        return gauge

    def close(self) -> None:
        self._gauges = {}


plugins.add_sink(RaySink.name, RaySink)


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

    refs = [w.profiler_metrics.remote(step) for w in workers]
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s) if refs else ([], [])
    per_rank: dict[int, dict[str, float]] = {}
    for ref in ready:
        try:
            got: RankMetrics = ray.get(ref)
        except ray.exceptions.RayError:
            continue
        per_rank[got.rank] = got.metrics
    return across_ranks(per_rank)
