"""On-demand capture: the profiler's part that takes ``mindspeed-prof capture`` requests.

At most once per ``interval_s`` (a clock read per step otherwise) it asks its request sources
(the control folder under the save root; those of the layers above, ``capture.plugins``: in a
Ray worker its job's board) for requests,
queues each as an unplanned capture, applies the request's level, preset and options to that
capture alone, and answers each request with an ``Ack`` on the source it came from. A source's
fault is one warning and never reaches training.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from pathlib import Path
from time import perf_counter_ns

from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.control.channel import RequestSource, Worker
from mindspeed_prof.capture.control.folder import Folder
from mindspeed_prof.capture.control.request import CAPTURE_FIELDS, Ack, AckStatus, Request
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.capture.part import Host, Part, Starting
from mindspeed_prof.capture.plan import ALL, Trigger
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import AicMetrics, IntegratedConfig, Level

__all__ = ["OnDemand", "asks_for_ops", "variant"]

log = logging.getLogger("mindspeed_prof")
_BACKOFF = 60  # intervals to wait after a source failed


def variant(cfg: IntegratedConfig, request: Request) -> IntegratedConfig:
    """``cfg`` with what ``request`` changes: its preset's capture options, its level, its
    overrides (in that order)."""
    from mindspeed_prof.config.presets import PRESETS

    values: dict[str, object] = {}
    if request.preset:  # all of the preset's capture options, its defaults included
        defaults = IntegratedConfig()
        values.update({k: getattr(defaults, k) for k in CAPTURE_FIELDS})
        values.update(
            {k: v for k, v in PRESETS[request.preset].fields.items() if k in CAPTURE_FIELDS}
        )
    if request.level:
        values["profile_level"] = request.level
    values.update(request.overrides)
    for key, kind in (("profile_level", Level), ("aic_metrics", AicMetrics)):
        if key in values:  # a member's name is its value
            values[key] = kind[str(getattr(values[key], "value", values[key]))]
    # each value is one CAPTURE_FIELDS allows for its field (Request.checked), or the preset's
    return dataclasses.replace(cfg, **values)  # type: ignore[arg-type]


class OnDemand(Part):
    """``on_demand: true``: requests through the save root's control folder (and Ray)."""

    live = False  # the profiler calls ``check`` when ``due_ns`` has passed; hooks only after

    def __init__(
        self, host: Host, interval_s: float = 1.0, sources: list[RequestSource] | None = None
    ) -> None:
        self.host = host
        self.interval_ns = int(interval_s * 1e9)
        self.due_ns = 0  # perf_counter_ns() at which the next look is due
        self.sources: list[RequestSource] = (
            sources if sources is not None else _sources(host.save_root)
        )
        self._taken: dict[str, tuple[Request, RequestSource]] = {}
        self._last: tuple[int, float] | None = None  # (step, time) at the previous look

    def check(self, step: int) -> None:
        """Look for new requests (the profiler calls this once ``due_ns`` has passed)."""
        self.due_ns = perf_counter_ns() + self.interval_ns
        host = self.host
        rank = host.refresh_rank()
        now = time.time()
        rate = 0.0
        if self._last is not None and now > self._last[1]:
            rate = max(0.0, (step - self._last[0]) / (now - self._last[1]))
        self._last = (step, now)
        worker = Worker(rank, host.role, step, now, rate)
        for source in self.sources:
            try:
                requests = source.poll(worker)
            except Exception as err:  # a broken source never stops training
                host.warn_once(
                    f"control-{id(source)}",
                    f"mindspeed-prof: could not read capture requests: {type(err).__name__}: {err}",
                )
                self.due_ns += _BACKOFF * self.interval_ns
                continue
            for request in requests:
                try:
                    self._take(request, source, rank, step)
                except Exception as err:
                    host.warn_once(
                        f"take-{request.id}",
                        "mindspeed-prof: capture request "
                        f"{request.id} failed: {type(err).__name__}: {err}",
                    )

    def _take(self, request: Request, source: RequestSource, rank: int, step: int) -> None:
        host = self.host
        world = _world_size()
        if rank == 0 and world and request.ranks and min(request.ranks) >= world:
            log.warning(
                "mindspeed-prof: ignoring capture request %s: ranks %s do not exist "
                "(WORLD_SIZE=%d)",
                request.id,
                request.ranks,
                world,
            )
        if host.failed:
            self._ack(request, source, "failed", message="profiling failed earlier in this run")
            return
        files: list[str] = []
        if request.flight:
            path = host.dump_flight("on_demand")
            if path is not None:
                files.append(str(path))
            elif not request.steps:
                self._ack(
                    request,
                    source,
                    "failed",
                    message="the flight recorder is off (flight_recorder_steps: 0)",
                )
                return
        if not request.steps:
            self._ack(request, source, "written", files)
            return
        self._taken[request.id] = (request, source)
        start = request.start_step
        host.request(
            Trigger(
                "on_demand",
                request.steps,
                stage=request.stage or ALL,
                level=request.level,
                preset=request.preset,
                ident=request.id,
                start=start,
            )
        )
        self._ack(request, source, "queued", files)
        log.warning(
            "mindspeed-prof: rank %d: capture request %s queued (%d steps%s)",
            rank,
            request.id,
            request.steps,
            "" if start is None else f" from step {start}",
        )
        host.wake()

    def before_capture(self, starting: Starting) -> None:
        taken = self._taken.get(starting.request)
        if taken is not None:
            request = taken[0]
            if request.level or request.preset or request.overrides:
                starting.cfg = variant(starting.cfg, request)

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        taken = self._taken.get(record.request)
        if taken is None:
            return
        request, source = taken
        mine = [c for c in self.host.captures if c.request == request.id]
        files = [f for c in mine for f in c.files]
        recorded = sorted({what for c in mine for what in c.recorded})
        if not error and not files:
            error = "the capture wrote no files"
        message = error or _short_of(request, recorded, record)
        first = min((c.step for c in mine if c.files), default=None)
        self._ack(
            request, source, "failed" if error else "written", files, message, recorded, first
        )

    def _ack(
        self,
        request: Request,
        source: RequestSource,
        status: AckStatus,
        files: list[str] | None = None,
        message: str = "",
        recorded: list[str] | None = None,
        start: int | None = None,
    ) -> None:
        host = self.host
        ack = Ack(
            id=request.id,
            rank=host.rank,
            role=host.role,
            status=status,
            files=list(files or []),
            message=message,
            time=time.time(),
            root=str(host.save_root),
            host=host_name(),
            recorded=list(recorded or []),
            start_step=start if start is not None else request.start_step,
        )
        try:
            source.ack(request, ack)
        except Exception as err:
            host.warn_once(
                f"ack-{id(source)}",
                f"mindspeed-prof: could not acknowledge request {request.id}: {err}",
            )


def asks_for_ops(request: Request) -> bool:
    """Whether ``request`` asks for operators (a level above ``level_none``, or a preset
    that records them)."""
    from mindspeed_prof.config.presets import PRESETS

    level = request.overrides.get("profile_level", request.level)
    if level is None and request.preset:
        preset = PRESETS[request.preset].fields.get("profile_level", Level.level0)
        level = preset.value if isinstance(preset, Level) else str(preset)
    return level not in (None, "level_none")


def _short_of(request: Request, recorded: list[str], record: CaptureRecord) -> str:
    """Why the capture holds less than the request asked for ("" when it holds it)."""
    if not asks_for_ops(request) or {"host ops", "device ops"} & set(recorded):
        return ""
    return (
        f"recorded {', '.join(recorded) or 'nothing'} only: the {record.backend} backend "
        "records no operators here (the job's backend: none, or no activity to record)"
    )


def _sources(root: Path) -> list[RequestSource]:
    """The save root's control folder, and the sources of the layers above (in a Ray worker,
    Ray already imported: its board)."""
    return [Folder(root), *plugins.sources()]


def _world_size() -> int:
    try:
        return int(os.environ.get("WORLD_SIZE", "0"))
    except ValueError:
        return 0
