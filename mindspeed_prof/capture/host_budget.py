"""``capture_host_mb``: a capture's host memory estimated before it starts (``estimate``), and
the capture lowered to the level that fits, with one line saying what and why.

The step before the window is the calibration step: recorded with the capture's own settings
(its ranges too) into a folder of its own, measured and thrown away. Each capture's actual
peak resident set over it (``HostMemory``, reset as it starts: the step's own memory and the
export included) and its trace bytes are kept beside its estimate (``results``) for the
benchmark that holds the estimate to them.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

from mindspeed_prof.capture.backends import Backend, CaptureTarget, select_backend
from mindspeed_prof.capture.budget import bytes_under
from mindspeed_prof.capture.estimate import Estimate, Measured, choose
from mindspeed_prof.capture.memory.allocator import HostMemory
from mindspeed_prof.capture.naming import inside
from mindspeed_prof.capture.part import Host, Part, Starting
from mindspeed_prof.capture.plan import ALL, Capture
from mindspeed_prof.capture.ranges import RangeTap
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import Level, field_key

__all__ = ["HostBudget", "Result"]

#: Where the calibration step is written (and removed), under the save root.
CALIBRATION = ".calibration"


@dataclasses.dataclass(frozen=True)
class Result:
    """A capture's estimate and what it took: peak host bytes over it (its export included),
    trace bytes written, seconds its stop held the rank."""

    estimate: Estimate
    host_bytes: float
    trace_bytes: float
    flush_seconds: float | None


class HostBudget(Part):
    """Calibrates on the step before the window, then holds each capture to the budget."""

    def __init__(self, host: Host, tap: RangeTap, memory: HostMemory) -> None:
        self.host, self.tap, self.memory = host, tap, memory
        self.limit = host.cfg.capture_host_mb * 2**20
        self.measured: Measured | None = None
        self.results: list[Result] = []
        self._start_rss = 0.0
        self._calibrating: Backend | None = None
        self._pending: Estimate | None = None

    def _peak_since_reset(self) -> float:
        return float(self.memory.max_memory_allocated()) - self._start_rss

    def _reset(self) -> None:  # the peak resident set from now on
        self.memory.reset_peak_memory_stats()
        self._start_rss = float(self.memory.max_memory_allocated())

    def on_step_start(self, step: int) -> None:
        host = self.host
        if self.measured is not None or host.capturing or step != host.plan.first - 1:
            return
        try:
            backend = select_backend(host.cfg)
            folder = inside(host.save_root, CALIBRATION, f"rank{host.rank}_{os.getpid()}")
            target = CaptureTarget(folder, "calibration", host.rank, host.role, Capture(ALL, step))
            backend.start(target)
            self._calibrating = backend
            spans = backend.spans
            if spans is not None:  # its ranges too, as the capturer feeds a capture's
                self.tap.drain(step)
                spans.buffer, spans.step = self.tap.listen(spans.add), step
            self.tap.attach([s for s in backend.sinks() if s is not spans])
        except Exception as err:
            self._warn(f"the calibration step could not start ({err})")

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        backend, self._calibrating = self._calibrating, None
        if backend is None:
            return
        try:
            self.tap.detach()
            self.tap.drain(step)
            if backend.spans is not None:
                self.tap.unlisten(backend.spans.add)
            files = backend.stop()
            trace = float(sum(bytes_under(f) for f in files))
            self.measured = Measured(self.host.cfg.profile_level.value, trace)
        except Exception as err:
            self._warn(f"the calibration step failed ({err})")
        finally:
            shutil.rmtree(inside(self.host.save_root, CALIBRATION), ignore_errors=True)

    def before_capture(self, starting: Starting) -> None:
        if starting.skip or self.measured is None:
            if self.measured is None and not starting.skip:
                self._warn(
                    "no step ran before the window to measure what a step costs "
                    f"(profile_step_start={self.host.plan.first}); the capture runs unchecked: "
                    "start the window at step 2 or later"
                )
            return
        cfg, capture = starting.cfg, starting.capture
        plan = self.host.plan
        steps = (
            starting.trigger.steps
            if starting.trigger is not None and capture.stage == ALL
            else 1
            if capture.stage != ALL or plan.one_per_step
            else plan.run_end(capture.step) - capture.step
        )
        level = cfg.profile_level.value
        chosen = choose(self.measured, level, steps, self.limit)
        if chosen.level != level:
            first = choose(self.measured, level, steps, float("inf"))
            self.host.warn_once(
                "host_budget",
                f"mindspeed-prof: {field_key('capture_host_mb', self.host.role)}="
                f"{self.host.cfg.capture_host_mb}: capturing {steps} step(s) from step "
                f"{capture.step} at {chosen.level} instead of {level}: {level} would take about "
                f"{first.host_mb:,.0f} MB of host memory ({first.host_mb / steps:,.1f} MB a "
                f"step, measured on step {plan.first - 1}); {chosen.level}: about "
                f"{chosen.host_mb:,.0f} MB",
            )
            starting.cfg = dataclasses.replace(cfg, profile_level=Level[chosen.level])
        self._pending = chosen
        self._reset()

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        pending, self._pending = self._pending, None
        if pending is None or error or not record.files:
            return
        trace = float(sum(bytes_under(Path(f)) for f in record.files))
        self.results.append(Result(pending, self._peak_since_reset(), trace, record.flush_seconds))

    def _warn(self, why: str) -> None:
        self.host.warn_once(
            "host_budget",
            f"mindspeed-prof: {field_key('capture_host_mb', self.host.role)}: {why}",
        )
