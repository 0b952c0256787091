"""Where telemetry goes besides ``prof.metrics()``: TensorBoard event files here; Ray's metrics
API from ``mindspeed_prof.ray.telemetry`` (a layer above, through ``capture.plugins``).

A sink's ``send`` takes one record; ``NotReady`` means "not now, maybe later" (Ray not started
yet in this process); any other exception ends the sink (the part warns once). TensorBoard is
imported only when the sink first sends.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.capture.telemetry.totals import StepRecord

if TYPE_CHECKING:
    from tensorboard.compat.proto.summary_pb2 import Summary
    from torch.utils.tensorboard import SummaryWriter

__all__ = ["NotReady", "Sink", "TensorBoardSink", "TB_FOLDER"]

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
