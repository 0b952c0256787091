"""Anomaly trigger: a step or stage slower than ``factor`` times its rolling median, at least
``anomaly_min_ms`` over it, and an outlier against the window's own noise (``OUTLIER_SDS``
robust standard deviations of the durations in it, from their median absolute deviation): on
a machine whose steps scatter, a step as slow as the scatter spends no capture.

``AnomalyDetector`` and ``AnomalyTrigger`` are pure decisions; ``AnomalyPart`` is the
profiler's part that feeds them and, when one fires, dumps the flight recorder and queues a
capture of the next ``anomaly_capture_steps`` steps.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections import deque

import msgspec

from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.capture.plan import Trigger
from mindspeed_prof.formats.anomaly import Action, Anomaly
from mindspeed_prof.stats.robust import robust_sd

__all__ = ["Anomaly", "AnomalyDetector", "AnomalyPart", "AnomalyTrigger"]

log = logging.getLogger("mindspeed_prof")

#: Anomalies kept for the manifest, at most.
MAX_KEPT = 1000
#: A duration is an anomaly only this many robust standard deviations of its window over the
#: window's median (the noise it is judged against).
OUTLIER_SDS = 5.0


class AnomalyDetector:
    """Rolling median of the last ``window`` durations per key (a stage name, or None: the step).

    ``observe`` returns the median when the duration exceeds ``factor`` times it, exceeds it
    by at least ``min_excess_ns`` and by ``OUTLIER_SDS`` robust standard deviations of the
    window (once the window is full), else None; every duration then joins the window.
    """

    def __init__(self, factor: float, window: int, min_excess_ns: int = 0) -> None:
        self.factor, self.window, self.min_excess = factor, window, min_excess_ns
        self._recent: dict[str | None, deque[int]] = {}
        self._sorted: dict[str | None, list[int]] = {}

    def observe(self, key: str | None, duration_ns: int) -> float | None:
        recent = self._recent.get(key)
        if recent is None:
            recent = self._recent[key] = deque()
            self._sorted[key] = []
        ordered = self._sorted[key]
        median = None
        n = len(ordered)
        if n == self.window:
            mid = n // 2
            m = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
            if (
                duration_ns > self.factor * m
                and duration_ns - m >= self.min_excess
                and duration_ns - m >= OUTLIER_SDS * robust_sd(ordered, m)
            ):
                median = float(m)
            del ordered[bisect.bisect_left(ordered, recent.popleft())]
        recent.append(duration_ns)
        bisect.insort(ordered, duration_ns)
        return median


class AnomalyTrigger:
    """Decides, per slow step or stage, whether to capture: at most one trigger per step, at
    most ``max_captures`` captures per run, never while another capture is active or queued.
    A slowdown counts only when it is also at least ``min_ms`` over the median
    (``anomaly_min_ms``): below that, scheduler and timer jitter decide, and a sub-millisecond
    stage that doubles is not worth a capture.
    """

    def __init__(self, factor: float, window: int, max_captures: int, min_ms: float) -> None:
        self.detector = AnomalyDetector(factor, window, round(min_ms * 1_000_000))
        self.max_captures = max_captures
        self.captures = 0
        self._last_step: int | None = None
        self._fired = False

    def observe(
        self, step: int | None, stage: str | None, duration_ns: int, busy: bool
    ) -> Anomaly | None:
        median = self.detector.observe(stage, duration_ns)
        if median is None or (self._fired and step == self._last_step):
            return None
        self._fired, self._last_step = True, step
        action: Action
        if busy:
            action = "skipped: another capture is active"
        elif self.captures >= self.max_captures:
            action = "skipped: anomaly_max_captures reached"
        else:
            action = "capture"
            self.captures += 1
        return Anomaly(
            step, stage, time.time(), duration_ns / 1e6, median / 1e6, self.detector.factor, action
        )


class AnomalyPart(Part):
    """``anomaly_factor``: steps and stages measured outside captures feed the trigger."""

    def __init__(self, host: Host) -> None:
        cfg = host.cfg
        self.host = host
        self.trigger = AnomalyTrigger(
            cfg.anomaly_factor, cfg.anomaly_window, cfg.anomaly_max_captures, cfg.anomaly_min_ms
        )
        self._fired: Anomaly | None = None  # a slow stage: acted on when its step ends

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        if took_ns is not None and not failed:
            self._observe(step, None, took_ns)
        if self._fired is not None:
            self._act(self._fired)

    def on_stage_end(self, stage: str, step: int | None, took_ns: int | None, failed: bool) -> None:
        if took_ns is not None and not failed:
            self._observe(step, stage, took_ns)

    def _observe(self, step: int | None, stage: str | None, took_ns: int) -> None:
        host = self.host
        if host.capturing:  # steps measured under a capture are not representative
            return
        found = self.trigger.observe(step, stage, took_ns, host.busy)
        if found is None:
            return
        if len(host.triggers) < MAX_KEPT:
            host.triggers.append(msgspec.structs.replace(found, rank=host.rank))
        if found.action != "capture":
            return
        if stage is not None and host.step_open:
            self._fired = found  # the flight dump holds the whole step: written at its end
        else:
            self._act(found)

    def _act(self, found: Anomaly) -> None:
        """The flight recorder's steps up to the slow one written, the next steps captured."""
        host, self._fired = self.host, None
        steps = host.cfg.anomaly_capture_steps
        log.warning(
            "mindspeed-prof: rank %d step %s %s took %.1f ms, over %g x its median "
            "%.1f ms: capturing the next %d steps under %s",
            host.rank,
            found.step,
            found.stage or "(whole step)",
            found.duration_ms,
            found.factor,
            found.median_ms,
            steps,
            host.save_root / "triggered",
        )
        host.dump_flight("anomaly", found.step)
        host.request(Trigger("anomaly", steps))
