"""Flight recorder: the ranges of the last N steps, kept in memory and dumped when asked.

``FlightRecorder`` is the ring; ``Flight`` the profiler's part that fills it from the range
tap and dumps it to ``<save>/flight/`` on a failed step or stage, a signal, an anomaly or an
on-demand request.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from pathlib import Path

from mindspeed_prof.capture import crash
from mindspeed_prof.capture.buffer import Chunk, Event, RangeBuffer
from mindspeed_prof.capture.naming import inside, release_stem
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.capture.plan import ALL
from mindspeed_prof.capture.ranges import RangeTap
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.capture.trace_file import write_trace
from mindspeed_prof.formats import SPANS
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["Flight", "FlightRecorder"]

log = logging.getLogger("mindspeed_prof")


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

    def dump(self, path: Path, metadata: CaptureHeader) -> Path:
        """Write the ring as a range file (read like any other by ``analyse``)."""
        return write_trace(path, list(self._ring), self.buffer, metadata)


class Flight(Part):
    """``flight_recorder_steps``: the ring, filled from ``tap``, dumped by ``dump``."""

    def __init__(self, host: Host, tap: RangeTap, steps: int) -> None:
        self.host = host
        self._tap = tap
        self.ring = FlightRecorder(steps, tap.shared_buffer())
        tap.listen(self.ring.add)  # the ring itself: a step's end calls no more than that
        self._due = False  # a stage failed inside a step: dumped at the step's end
        #: Dumped on a signal while ranges were open: the handler may leave them failed, and
        #: the dump already holds them (until none is open any more).
        self._signalled = False
        self._signal_dumped = False  # a dump for a signal was written (``on_close``)
        self._pid = os.getpid()  # a forked child never dumps its parent's ring

    def on_stage_end(self, stage: str, step: int | None, took_ns: int | None, failed: bool) -> None:
        if failed and not self._signalled:
            if self._tap.in_step:
                self._due = True  # dumped at the step's end, with the whole step
            else:
                self.dump(_failed())
        if self._signalled and not self._tap.open_count:
            self._signalled = False

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        if (failed or self._due) and not self._signalled:
            self.dump(_failed())
        self._due = False
        if self._signalled and not self._tap.open_count:
            self._signalled = False

    def on_signal(self, signum: int) -> None:
        self.dump("signal")
        self._signalled = self._tap.open_count > 0

    def on_close(self) -> None:
        """A signal came but no dump was written for it (the signal interrupted this
        profiler's hook, and the trainer's handler exited from there): dumped now."""
        if crash.signalled() and not self._signal_dumped:
            self.dump("signal")

    def dump(self, reason: str, at: int | None = None) -> Path | None:
        """Write the ring to ``<save>/flight/``; its path, or None when it could not be.
        ``at``: the step that asked for it (an anomaly's), recorded with the dump."""
        if reason == "signal":
            self._signal_dumped = True
        host = self.host
        if host.failed or os.getpid() != self._pid:
            return None
        self._tap.drain(host.step_now)
        steps = [s for s in self.ring.held_steps() if s is not None]
        first = steps[0] if steps else host.step_now or 0
        metadata = host.metadata("flight", first)
        metadata.reason, metadata.steps, metadata.trigger_step = reason, list(steps), at
        record = CaptureRecord(
            stage=ALL,
            step=first,
            index=0,
            rank=host.rank,
            role=host.role,
            backend="flight",
            steps=steps,
            reason=reason,
            trigger="flight",
            recorded=["ranges"],
            trigger_step=at,
        )
        started = time.time()
        folder, stem = host.save_root, ""
        try:
            folder = inside(host.save_root, "flight")
            stem = host.new_stem(folder, first, 0)
            path = self.ring.dump(folder / f"{stem}{SPANS}", metadata)
        except Exception as err:  # an OSError names the file; nothing of it is left
            log.warning("mindspeed-prof: flight recorder dump (%s) failed: %s", reason, err)
            return None
        finally:
            if stem:
                release_stem(folder, stem)
        record.files = [str(path)]
        record.seconds = round(time.time() - started, 6)
        host.captures.append(record)
        return path


def _failed() -> str:
    """Why a step or stage failed: ``signal`` once SIGTERM or SIGINT came (a preemption's
    handler exiting through the step), else ``error``."""
    return "signal" if crash.signalled() else "error"
