"""``Profiler``: trainer hooks that start and stop captures by step, stage and rank.

A small driver: its ``Scheduler`` (``plan.py``) turns step and stage events into starts and
stops, its ``Capturer`` runs them, its ``RangeTap`` keeps the step and stage ranges, and its
parts (``Part``: flight recorder, anomaly trigger, on-demand requests, disk budget) are told
about every event through one protocol. ``on_capture`` callbacks get each capture's record
(the Hydra callback hangs the post-capture summary there).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from time import perf_counter_ns
from types import TracebackType
from typing import Any, ContextManager

from mindspeed_prof.capture import crash
from mindspeed_prof.capture import current as _current
from mindspeed_prof.capture.anomaly import AnomalyPart
from mindspeed_prof.capture.backends import Backend
from mindspeed_prof.capture.budget import Budget
from mindspeed_prof.capture.capturer import Capturer
from mindspeed_prof.capture.flight import Flight
from mindspeed_prof.capture.hooks import TrainerHook
from mindspeed_prof.capture.naming import host_name, safe_name, unused_stem
from mindspeed_prof.capture.ondemand import OnDemand
from mindspeed_prof.capture.part import Part, Starting
from mindspeed_prof.capture.plan import Action, CapturePlan, Scheduler, Start, Stop, Trigger
from mindspeed_prof.capture.ranges import RangeTap
from mindspeed_prof.capture.rank import resolve_rank
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.capture.spans import STEP_RANGE
from mindspeed_prof.config.schema import (
    IntegratedConfig,
    canonical_role,
    canonical_stage,
    field_key,
)
from mindspeed_prof.config.validate import validate
from mindspeed_prof.formats import anchor

__all__ = ["CaptureRecord", "OnCapture", "Profiler", "ProfilerError", "TrainerHook", "current"]

log = logging.getLogger("mindspeed_prof")

#: Called with each capture's record once its files are written.
OnCapture = Callable[[CaptureRecord], None]
#: What the hooks return when they do nothing (reusable, reentrant).
_OFF = nullcontext()


class ProfilerError(RuntimeError):
    """A capture failed and ``strict: true`` asked to stop training."""


class _StepScope:
    __slots__ = ("_prof", "_step")

    def __init__(self, prof: Profiler, step: int) -> None:
        self._prof, self._step = prof, step

    def __enter__(self) -> None:
        self._prof.on_step_start(self._step)

    def __exit__(self, exc_type: type[BaseException] | None, *_: Any) -> None:
        self._prof._step_end(self._step, failed=exc_type is not None)


class _StageScope:
    __slots__ = ("_prof", "_stage", "_step")

    def __init__(self, prof: Profiler, stage: str, step: int | None) -> None:
        self._prof, self._stage, self._step = prof, stage, step

    def __enter__(self) -> None:
        self._prof.on_stage_start(self._stage, self._step)

    def __exit__(self, exc_type: type[BaseException] | None, *_: Any) -> None:
        self._prof._stage_end(self._stage, self._step, failed=exc_type is not None)


class Profiler:
    """Captures the steps, stages and ranks that its ``profiler_config`` section asks for.

    Faults inside profiling are logged once and training goes on (``strict: true`` raises
    ``ProfilerError`` instead); captures already written are never touched again.
    """

    def __init__(self, cfg: IntegratedConfig, *, rank: int | None = None,
                 role: str = "integrated", backend: Backend | None = None,
                 on_capture: Sequence[OnCapture] = ()) -> None:
        self.cfg = cfg
        self.role = safe_name(canonical_role(role), "role")  # verl's ref: reference
        self.enabled = bool(cfg.profile)
        self._rank_arg = rank
        unplanned = bool(cfg.flight_recorder_steps or cfg.anomaly_factor)
        self.rank = (resolve_rank(rank) if self.enabled else
                     _quiet_rank(rank) if unplanned else (rank or 0))
        self.plan = CapturePlan.from_config(cfg, self.rank)
        self.save_root = Path(cfg.profile_save_path).expanduser().absolute()
        self.captures: list[CaptureRecord] = []
        #: Anomalies seen (JSON-ready, for the manifest): rank, step, stage, time, median...
        self.triggers: list[dict[str, Any]] = []
        self.failed = False
        self.on_capture = list(on_capture)
        self._step: int | None = None
        self._closed = False
        self._warned: set[str] = set()
        self._sched = Scheduler(self.plan)
        self._tap = RangeTap(self._fail)
        self._capturer = Capturer(self, self._tap, backend)
        self._flight = Flight(self, self._tap, cfg.flight_recorder_steps) \
            if cfg.flight_recorder_steps else None
        self._ondemand = OnDemand(self) if cfg.on_demand else None
        parts: list[Part | None] = [self._ondemand,
                                    Budget(self) if cfg.max_disk_mb else None, self._flight,
                                    AnomalyPart(self) if cfg.anomaly_factor else None]
        self.parts: list[Part] = [p for p in parts if p is not None]
        #: Whether step and stage hooks do anything: a capture may start or a range is kept.
        self._live = self.plan.enabled or any(p.live for p in self.parts)
        _current.set_current(self)
        if self._live:
            crash.watch(self)

    @classmethod
    def from_config(cls, cfg: Any, rank: int | None = None, role: str = "integrated",
                    backend: Backend | None = None,
                    on_capture: Sequence[OnCapture] = ()) -> Profiler:
        """Validate ``cfg`` (a ``profiler_config`` node, dict or dataclass) and build one.

        ``role`` picks the section: ``integrated``'s settings with the role's own laid over
        them; captures go under ``<save>/<role>/``. An unknown role raises ``ConfigError``.

        Inside a Hydra job whose callback made a profiler, the job's own config (same role,
        same settings, the rank it resolved) gives that profiler: one profiler per job, whose
        manifest counts what the task captured.
        """
        checked = validate(cfg, role)
        checked.profile_save_path = str(anchor(checked.profile_save_path))
        job = _current.job_profiler()
        if (job is not None and not job._closed and backend is None and not on_capture
                and (job.role, job.cfg) == (safe_name(canonical_role(role), "role"), checked)
                and rank in (None, job.rank)):
            return job
        return cls(checked, rank=rank, role=role, backend=backend, on_capture=on_capture)

    # -- context managers -------------------------------------------------------------
    def step(self, step: int) -> ContextManager[Any]:
        """``with prof.step(n):`` around one training step (global step number, 1-based)."""
        if self._live:
            return _StepScope(self, step)
        self._step = step
        ondemand = self._ondemand
        if ondemand is not None and perf_counter_ns() >= ondemand.due_ns:
            ondemand.check(step)  # a clock read per step otherwise
            if self._live:
                return _StepScope(self, step)
        return _OFF

    def stage(self, name: str) -> ContextManager[Any]:
        """``with prof.stage("actor_update"):`` around one RL stage of the current step."""
        if self._live:
            return _StageScope(self, canonical_stage(name), self._step)  # verl's names: ours
        return _OFF

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- TrainerHook --------------------------------------------------------------------
    def on_step_start(self, step: int) -> None:
        ondemand = self._ondemand
        if ondemand is not None and perf_counter_ns() >= ondemand.due_ns:
            ondemand.check(step)
        if not self._live:
            self._step = step
            return
        self._tap.drain(self._step)  # what was recorded since the last step end is that step's
        self._step = step
        for part in self.parts:
            part.on_step_start(step)
        self._apply(self._sched.step_start(step))
        self._capturer.step_started(step)
        self._tap.open("step", STEP_RANGE, step)

    def on_step_end(self, step: int) -> None:
        self._step_end(step, failed=False)

    def on_stage_start(self, stage: str, step: int | None = None) -> None:
        if not self._live:
            return
        stage = canonical_stage(stage)
        step = self._step if step is None else step
        self._apply(self._sched.stage_start(stage, step))
        self._tap.open("stage", stage, step)

    def on_stage_end(self, stage: str, step: int | None = None) -> None:
        self._stage_end(canonical_stage(stage), self._step if step is None else step,
                        failed=False)

    def on_train_end(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop any active capture and flush it; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self._live:
            self._apply(self._sched.close())
        self._live = False
        self._ondemand = None  # a closed profiler takes no more requests
        for part in self.parts:
            part.on_close()
        self._tap.stop()
        _current.discard(self)
        crash.unwatch(self)

    def dump_flight(self, reason: str = "request", at: int | None = None) -> Path | None:
        """Write the flight recorder's last steps to ``<save>/flight/``; the path, or None.
        ``at``: the step that asked (an anomaly's), recorded with the dump."""
        return self._flight.dump(reason, at) if self._flight is not None else None

    def on_signal(self, signum: int) -> None:
        """SIGTERM/SIGINT (called by the crash handler before ``close``)."""
        for part in self.parts:
            part.on_signal(signum)

    # -- what parts may use (``part.Host``) ---------------------------------------------
    @property
    def step_now(self) -> int | None:
        return self._step

    @property
    def capturing(self) -> bool:
        return self._capturer.record is not None

    @property
    def step_open(self) -> bool:
        return self._tap.in_step

    @property
    def busy(self) -> bool:
        """A capture is active, or an unplanned one is running or waiting."""
        return self._sched.busy

    def request(self, trigger: Trigger) -> None:
        """Queue an unplanned capture; it starts at a step start when no capture is active."""
        self._sched.request(trigger)

    def wake(self) -> None:
        """Let the step and stage hooks run from now on (an on-demand request came)."""
        if not self._live and not self._closed:
            self._live = True
            crash.watch(self)

    def refresh_rank(self) -> int:
        """The rank again, where profiling is off: it may be known only now (torch.distributed)."""
        if not self.enabled:
            self.rank = _quiet_rank(self._rank_arg)
        return self.rank

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    def metadata(self, stage: str, step: int) -> dict[str, Any]:
        """What a capture's files record about it (the range file's header, the trace's)."""
        return {"rank": self.rank, "role": self.role, "stage": stage, "step": step,
                "host": host_name(), "pid": os.getpid(),
                "level": self.cfg.profile_level.value,
                "window": [self.plan.start, self.plan.end], "warmup_steps": self.plan.warmup}

    def new_stem(self, folder: Path, step: int, index: int) -> str:
        stem = f"rank{self.rank}_{host_name()}_{os.getpid()}_step{step}"
        return unused_stem(folder, f"{stem}_{index}" if index else stem)

    # -- internals ----------------------------------------------------------------------
    def _step_end(self, step: int, failed: bool) -> None:
        if not self._live:
            return
        took = self._tap.close("step", STEP_RANGE)
        self._tap.drain(self._step)
        for part in self.parts:
            part.on_step_end(step, took, failed)
        self._apply(self._sched.step_end(step, failed))
        try:
            self._capturer.flush_due()
        except Exception as err:
            self._fail("flush", err)

    def _stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        if not self._live:
            return
        took = self._tap.close("stage", stage)
        for part in self.parts:
            part.on_stage_end(stage, self._step, took, failed)
        self._apply(self._sched.stage_end(stage, step, failed))

    def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Stop):
                self._stop(action)
            elif isinstance(action, Start):
                self._start(action)

    def _start(self, action: Start) -> None:
        if self.failed:
            return
        capture = action.capture
        starting = Starting(capture, self._sched.trigger if capture.trigger else None, self.cfg)
        for part in self.parts:
            part.before_capture(starting)
        if starting.skip:
            self._tell(self._unstarted(starting), starting.skip)
            return
        try:
            self._capturer.start(starting)
        except Exception as err:
            self._tell(self._unstarted(starting), str(err))
            self._fail("start", err)

    def _stop(self, action: Stop) -> None:
        record, error = self._capturer.stop(action.reason)
        if record is None:
            return
        self.captures.append(record)
        self._tell(record, error)
        if error:
            self._fail("stop", RuntimeError(error))
            return
        for callback in self.on_capture:
            try:
                callback(record)
            except Exception as err:
                log.warning("mindspeed-prof: after capture %s: %s", record.files, err)

    def _unstarted(self, starting: Starting) -> CaptureRecord:
        capture = starting.capture
        return CaptureRecord(stage=capture.stage, step=capture.step, index=capture.index,
                             rank=self.rank, role=self.role, backend="none",
                             trigger=capture.trigger, request=starting.request)

    def _tell(self, record: CaptureRecord, error: str) -> None:
        for part in self.parts:
            part.on_capture(record, error)

    def _fail(self, what: str, err: Exception) -> None:
        if self.cfg.strict:
            raise ProfilerError(f"mindspeed-prof: capture {what} failed: {err}") from err
        if not self.failed:
            message = (f"mindspeed-prof: capture {what} failed ({type(err).__name__}: {err}); "
                       "profiling is off for the rest of this run, training goes on "
                       f"(set {field_key('strict', self.role)}=true to stop instead)")
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=_caller_level())
        self.failed = True
        self._capturer.abort()
        self._tap.stop()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _caller_level() -> int:
    """``stacklevel`` for a warning raised by our caller: the first frame outside this package
    (the trainer's ``with prof.step(...)`` line, however deep the fault was found)."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _quiet_rank(explicit: int | None) -> int:
    """The rank for a profiler that is otherwise off: a bad ``RANK`` means 0, not an error."""
    try:
        return resolve_rank(explicit)
    except ValueError:
        return explicit or 0


def current(role: str | None = None) -> Profiler:
    """The profiler of this process (set by the Hydra callback or ``from_config``): the one
    made last, or with ``role`` the open one of that role.

    Without one, a disabled profiler whose hooks all do nothing.
    """
    prof = _current.get_current(role)
    if prof is None:
        prof = Profiler(IntegratedConfig(), role=role or "integrated")  # now current
    assert isinstance(prof, Profiler)
    return prof
