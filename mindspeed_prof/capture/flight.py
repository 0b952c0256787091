"""Flight recorder: the ranges of the last N steps, kept in memory and dumped on demand."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from mindspeed_prof.capture.spans import Chunk, Event, RangeBuffer, write_trace

__all__ = ["FlightRecorder"]


class FlightRecorder:
    """A ring of ``(step, events)`` holding the last ``steps`` steps of one ``RangeBuffer``.

    Ranges recorded outside any step count with the step before them. Memory is bounded by
    what N steps record; adding a step costs an append (and dropping the oldest).
    """

    def __init__(self, steps: int, buffer: RangeBuffer) -> None:
        if steps < 1:
            raise ValueError(f"flight_recorder_steps={steps}: must be >= 1")
        self.steps = steps
        self.buffer = buffer
        self._ring: deque[Chunk] = deque()

    def add(self, step: int | None, events: list[Event]) -> None:
        if not events:
            return
        ring = self._ring
        if ring and ring[-1][0] == step:
            ring[-1][1].extend(events)
            return
        ring.append((step, events))
        if len(ring) > self.steps:
            ring.popleft()

    def held_steps(self) -> list[int | None]:
        """The steps in the ring, oldest first."""
        return [step for step, _ in self._ring]

    def dump(self, path: Path, metadata: dict[str, Any]) -> Path:
        """Write the ring as a range file (read like any other by ``analyse``)."""
        return write_trace(path, list(self._ring), self.buffer, metadata)
