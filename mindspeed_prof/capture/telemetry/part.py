"""``TelemetryPart``: the profiler's part that keeps every step's figures on each rank and sends
them to the sinks ``telemetry`` names, every ``telemetry_every`` steps.

Stage and step times are the ``took_ns`` the profiler's hooks already measure; custom ranges are
timed only with ``telemetry_ranges`` (an ``mstx`` sink); counters come through ``on_count``. A
sink that fails is warned about once and dropped; training never stops for telemetry.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from mindspeed_prof import mstx
from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.naming import inside
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.capture.telemetry.ranges import RangeTimer
from mindspeed_prof.capture.telemetry.sinks import TB_FOLDER, NotReady, Sink, TensorBoardSink
from mindspeed_prof.capture.telemetry.totals import StepRecord, StepTotals, mean_record

__all__ = ["KEEP_STEPS", "TelemetryPart"]

#: Finished steps whose figures ``metrics(step)`` still answers for.
KEEP_STEPS = 64


class TelemetryPart(Part):
    """``telemetry``: each step's figures for ``metrics()`` and the configured sinks."""

    def __init__(self, host: Host) -> None:
        cfg = host.cfg
        self.host = host
        self.every = max(1, int(cfg.telemetry_every))
        self.wanted = tuple(cfg.telemetry)
        self._totals = StepTotals()
        self._lock = threading.Lock()  # counts may come from other threads than the hooks
        self._kept: dict[int, StepRecord] = {}  # flattened only when asked for
        self._last: StepRecord | None = None
        self._sends = any(name != "metrics" for name in self.wanted)
        self._pending: list[StepRecord] = []
        self._sinks: list[Sink] | None = None  # made at the first export (the rank known)
        self._closed = False
        self.timer = RangeTimer() if cfg.telemetry_ranges else None
        if self.timer is not None:
            mstx.add_sink(self.timer)

    # -- what the profiler tells it -------------------------------------------------------
    def on_stage_end(self, stage: str, step: int | None, took_ns: int | None, failed: bool) -> None:
        if took_ns is not None and not failed:
            with self._lock:
                self._totals.stage(stage, took_ns)

    def on_count(
        self, name: str, value: float | Sequence[float], step: int | None, stage: str | None
    ) -> None:
        try:
            with self._lock:
                self._totals.count(name, value)
        except (TypeError, ValueError) as err:
            self.host.warn_once(
                f"telemetry-count-{name}",
                f"mindspeed-prof: telemetry: counter {name!r} not kept "
                f"({type(err).__name__}: {err}); a number or a list of numbers",
            )

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        ranges = self.timer.take() if self.timer is not None else {}
        with self._lock:
            if failed:  # a step an exception left: its figures are not the step's
                self._totals.clear()
                return
            record = self._totals.finish(step, took_ns, ranges)
        self._last = record
        kept = self._kept
        kept[step] = record
        if len(kept) > KEEP_STEPS:
            del kept[next(iter(kept))]
        if self._sends:
            self._pending.append(record)
            if len(self._pending) >= self.every:
                self._export()

    def on_close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.timer is not None:
            mstx.remove_sink(self.timer)
        if self._pending:
            self._export()
        for sink in self._sinks or ():
            try:
                sink.close()
            except Exception as err:
                self._drop_warning(sink.name, err)
        self._sinks = []

    # -- what the trainer asks ------------------------------------------------------------
    def metrics(self, step: int | None = None) -> dict[str, float]:
        """The flat figures of the last finished step, or of ``step`` while it is among the
        last ``KEEP_STEPS`` ({} otherwise)."""
        found = self._last if step is None else self._kept.get(step)
        return found.flat() if found is not None else {}

    # -- sending --------------------------------------------------------------------------
    def _export(self) -> None:
        record, self._pending = mean_record(self._pending), []
        host = self.host
        rank = host.refresh_rank()
        if self._sinks is None:
            self._sinks = self._make_sinks(rank)
        for sink in list(self._sinks):
            try:
                sink.send(record, rank, host.role)
            except NotReady as err:
                host.warn_once(
                    f"telemetry-{sink.name}-not-ready",
                    f"mindspeed-prof: telemetry to {sink.name}: {err}",
                )
            except Exception as err:
                self._sinks.remove(sink)
                self._drop_warning(sink.name, err)
                try:
                    sink.close()
                except Exception:  # already failed; nothing more to say
                    pass

    def _make_sinks(self, rank: int) -> list[Sink]:
        host = self.host
        sinks: list[Sink] = []
        for name in self.wanted:
            if name == "tensorboard":
                try:
                    folder = inside(host.save_root, TB_FOLDER, host.role, f"rank{rank}")
                except ValueError as err:
                    self._drop_warning(name, err)
                    continue
                sinks.append(TensorBoardSink(folder))
            elif name != "metrics":  # a layer above's (``ray``: mindspeed_prof.ray.telemetry)
                try:
                    found = plugins.sink(name)
                except Exception as err:
                    self._drop_warning(name, err)
                    continue
                if found is None:
                    self._drop_warning(name, LookupError("no layer serves this sink"))
                    continue
                sinks.append(found)
        return sinks

    def _drop_warning(self, name: str, err: BaseException) -> None:
        self.host.warn_once(
            f"telemetry-{name}",
            f"mindspeed-prof: telemetry to {name} is off for the rest of this "
            f"run ({type(err).__name__}: {err}); training goes on",
        )
