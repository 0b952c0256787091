"""The backend interface: start and stop one capture, and say where its ranges go."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, ContextManager

from mindspeed_prof.capture.plan import Capture
from mindspeed_prof.capture.spans import SpanRecorder
from mindspeed_prof.config.schema import IntegratedConfig
from mindspeed_prof.formats import SPANS
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.mstx import RangeSink

__all__ = ["Backend", "CaptureTarget", "RecordFunctionSink"]


@dataclass(frozen=True)
class CaptureTarget:
    """Where one capture goes: ``directory/stem*``; ``stem`` is unique per capture."""

    directory: Path
    stem: str
    rank: int
    role: str
    capture: Capture
    metadata: CaptureHeader = field(default_factory=CaptureHeader)


class Backend(ABC):
    """Records one capture at a time. Every backend's tests subclass
    ``mindspeed_prof.testing.backend_suite.BackendConformance`` unchanged."""

    name: ClassVar[str]

    def __init__(self, cfg: IntegratedConfig) -> None:
        self.cfg = cfg
        self.spans: SpanRecorder | None = None

    @abstractmethod
    def start(self, target: CaptureTarget) -> None:
        """Begin recording ``target``; called only when no capture is active."""

    @abstractmethod
    def stop(self) -> list[Path]:
        """End the active capture, write it out, and return the files and folders written."""

    def sinks(self) -> list[RangeSink]:
        """Where step, stage and custom ranges go while the capture is active."""
        return [self.spans] if self.spans is not None else []

    def records(self) -> list[str]:
        """What the active capture records, of ``ranges``, ``host ops`` and ``device ops``."""
        return ["ranges"] if self.spans is not None else []

    def _open_spans(self, target: CaptureTarget) -> SpanRecorder:
        self.spans = SpanRecorder(target.directory / f"{target.stem}{SPANS}", target.metadata)
        return self.spans

    def _close_spans(self) -> list[Path]:
        spans, self.spans = self.spans, None
        if spans is None:
            return []
        spans.close()
        return [spans.path]


class RecordFunctionSink:
    """Ranges as ``record_function`` user annotations inside the op-level trace.

    torch's Chrome exporter writes names unescaped, so a ``"`` in a name would break the JSON:
    it is replaced by ``'``.
    """

    def __init__(self) -> None:
        from torch.profiler import record_function

        self._record_function = record_function

    def range(self, name: str, cat: str = "user_annotation") -> ContextManager[object]:
        cm: ContextManager[object] = self._record_function(name.replace('"', "'"))
        return cm

    def mark(self, name: str) -> None:
        with self.range(name):
            pass

    def range_start(self, name: str) -> ContextManager[object]:
        """An id-based range: a ``record_function`` of its own, ended by ``range_end``."""
        cm = self.range(name)
        cm.__enter__()
        return cm

    def range_end(self, cm: ContextManager[object]) -> None:
        cm.__exit__(None, None, None)
