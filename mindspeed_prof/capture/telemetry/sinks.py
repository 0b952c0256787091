"""Where telemetry goes besides ``prof.metrics()``: Ray's metrics API and TensorBoard event files.

A sink's ``send`` takes one record; ``NotReady`` means "not now, maybe later" (Ray not started
yet in this process); any other exception ends the sink (the part warns once). Ray and
TensorBoard are imported only by the sink that needs them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.capture.telemetry.totals import StepRecord

if TYPE_CHECKING:
    from ray.util.metrics import Gauge
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import SummaryWriter

__all__ = ["NotReady", "RaySink", "Sink", "TensorBoardSink", "TB_FOLDER"]

#: Under the save root: ``telemetry/<role>/rank<r>/``, one TensorBoard run per rank.
TB_FOLDER = "telemetry"
#: Seconds between TensorBoard's flushes to disk (its default, 120, is not live).
TB_FLUSH_S = 10


class NotReady(Exception):
    """The sink cannot send now, and may later (the message says why)."""


class Sink(Protocol):
    name: str

    def send(self, record: StepRecord, rank: int, role: str) -> None: ...

    def close(self) -> None: ...


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


class TensorBoardSink:
    """TensorBoard event files (``torch.utils.tensorboard``'s writer; needs the ``tensorboard``
    package): one scalar per flat name at the record's step, one run per rank. A record is one
    event holding all its scalars (a fifth of ``add_scalar``'s cost per name)."""

    name = "tensorboard"

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._open: tuple[SummaryWriter, type[Summary]] | None = None  # the writer, its type

    def send(self, record: StepRecord, rank: int, role: str) -> None:
        if self._open is None:
            try:
                from tensorboard.compat.proto.summary_pb2 import Summary
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as err:
                from mindspeed_prof.extras import install_line

                raise RuntimeError(
                    f"needs the tensorboard package ({install_line('tensorboard')})"
                ) from err
            self._open = SummaryWriter(str(self.folder), flush_secs=TB_FLUSH_S), Summary
        writer, summary = self._open
        values = [
            summary.Value(tag=name, simple_value=value) for name, value in record.flat().items()
        ]
        writer._get_file_writer().add_summary(summary(value=values), record.step)

    def close(self) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            opened[0].close()
