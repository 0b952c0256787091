"""``backend: none``: no op-level profiler, only the span recorder's ranges."""

from __future__ import annotations

from pathlib import Path

from mindspeed_prof.capture.backends.base import Backend, CaptureTarget

__all__ = ["SpansOnlyBackend"]


class SpansOnlyBackend(Backend):
    """Writes one ``*.mstx.trace.json`` per capture with step, stage and custom ranges."""

    name = "none"

    def start(self, target: CaptureTarget) -> None:
        if not target.capture.warmup:  # a schedule's warmup: nothing to warm, nothing kept
            self._open_spans(target)

    def stop(self) -> list[Path]:
        return self._close_spans()
