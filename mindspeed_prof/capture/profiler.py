"""``Profiler``: trainer hooks that start and stop captures by step, stage and rank."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import warnings
from pathlib import Path
from time import perf_counter_ns
from types import TracebackType
from typing import Any, ContextManager

from mindspeed_prof import mstx
from mindspeed_prof.capture import crash
from mindspeed_prof.capture import current as _current
from mindspeed_prof.capture.anomaly import AnomalyTrigger
from mindspeed_prof.capture.backends import Backend, CaptureTarget, select_backend
from mindspeed_prof.capture.budget import DiskBudget, bytes_under
from mindspeed_prof.capture.control import ControlChannel, Request
from mindspeed_prof.capture.flight import FlightRecorder
from mindspeed_prof.capture.hooks import TrainerHook
from mindspeed_prof.capture.naming import host_name, inside, safe_name
from mindspeed_prof.capture.plan import ALL, Action, CapturePlan, Scheduler, Start, Stop, Trigger
from mindspeed_prof.capture.rank import resolve_rank
from mindspeed_prof.capture.spans import STEP_RANGE, RangeBuffer, SpanRecorder
from mindspeed_prof.config.schema import IntegratedConfig, Level
from mindspeed_prof.config.validate import validate
from mindspeed_prof.formats import SPANS, anchor
from mindspeed_prof.mstx import RangeSink

__all__ = ["CaptureRecord", "Profiler", "ProfilerError", "TrainerHook", "current"]

log = logging.getLogger("mindspeed_prof")


class ProfilerError(RuntimeError):
    """A capture failed and ``strict: true`` asked to stop training."""


#: What one capture wrote (JSON-ready): stage, step, index, rank, role, backend, steps,
#: warmup_steps, reason it stopped, files, seconds.
CaptureRecord = dict[str, Any]


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
                 role: str = "integrated", backend: Backend | None = None) -> None:
        self.cfg = cfg
        self.role = safe_name(role, "role")
        self.enabled = bool(cfg.profile)
        self.rank = resolve_rank(rank) if self.enabled else (rank or 0)
        self.plan = CapturePlan.from_config(cfg, self.rank)
        self.save_root = Path(cfg.profile_save_path).expanduser().absolute()
        self.captures: list[CaptureRecord] = []
        self.failed = False
        self._sched = Scheduler(self.plan)
        self._backend = backend
        self._active: Backend | None = None  # the running capture's backend
        self._rank_arg = rank
        self._step: int | None = None
        self._record: CaptureRecord | None = None
        self._closed = False
        # Ranges: open step/stage ranges [kind, name, start_ns, entered capture-sink ranges];
        # one buffer per profiler (flight recorder and range file share it); the capture's
        # other sinks; what this profiler added to mstx (and removes, leaving others' alone).
        self._open: list[list[Any]] = []
        self._buffer: RangeBuffer | None = None
        self._buffering = False
        self._keys: dict[tuple[str, str], int] = {}
        self._spans: SpanRecorder | None = None
        self._capture_sinks: list[RangeSink] = []
        self._added: list[RangeSink] = []
        self._flight: FlightRecorder | None = None
        self._flight_due = False  # a stage failed: dump when its step ends
        if cfg.flight_recorder_steps:
            self._flight = FlightRecorder(cfg.flight_recorder_steps, self._use_buffer())
        self._anomaly: AnomalyTrigger | None = None
        if cfg.anomaly_factor:
            self._anomaly = AnomalyTrigger(cfg.anomaly_factor, cfg.anomaly_window,
                                           cfg.anomaly_max_captures)
        #: Anomalies seen (JSON-ready, for the manifest): rank, step, stage, time, median...
        self.triggers: list[dict[str, Any]] = []
        if not self.enabled and (self._flight or self._anomaly):
            self.rank = _quiet_rank(rank)
        #: Whether step and stage hooks do anything: a capture may start or a range is kept.
        self._live = self.plan.enabled or self._flight is not None or self._anomaly is not None
        self._control = ControlChannel(self.save_root) if cfg.on_demand else None
        self._requests: dict[str, Request] = {}
        self._budget = DiskBudget(cfg.max_disk_mb, self.save_root) if cfg.max_disk_mb else None
        self._warned: set[str] = set()
        if self._budget is not None:
            full = self._budget.full_at_start()
            if full:
                self._warn_once("skipped", f"mindspeed-prof: profiler_config.{self.role}."
                                f"max_disk_mb={cfg.max_disk_mb}: {full}; no capture will be "
                                "written (raise max_disk_mb, or clear the folder)")
        self._skipped: CaptureRecord | None = None  # the record counting budget skips
        _current.set_current(self)
        if self._live:
            crash.watch(self)

    @classmethod
    def from_config(cls, cfg: Any, rank: int | None = None, role: str = "integrated",
                    backend: Backend | None = None) -> Profiler:
        """Validate ``cfg`` (a ``profiler_config`` node, dict or dataclass) and build one.

        ``role`` picks the section: ``integrated``'s settings with the role's own laid over
        them; captures go under ``<save>/<role>/``. An unknown role raises ``ConfigError``.
        """
        checked = validate(cfg, role)
        checked.profile_save_path = str(anchor(checked.profile_save_path))
        return cls(checked, rank=rank, role=role, backend=backend)

    # -- context managers -------------------------------------------------------------
    def step(self, step: int) -> ContextManager[Any]:
        """``with prof.step(n):`` around one training step (global step number, 1-based)."""
        if self._live:
            return _StepScope(self, step)
        self._step = step
        control = self._control
        if control is not None and perf_counter_ns() >= control.due_ns:
            self._check_control(step)  # a clock read per step otherwise
            if self._live:
                return _StepScope(self, step)
        return mstx._NOOP

    def stage(self, name: str) -> ContextManager[Any]:
        """``with prof.stage("actor_update"):`` around one RL stage of the current step."""
        if self._live:
            return _StageScope(self, name, self._step)
        return mstx._NOOP

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- TrainerHook --------------------------------------------------------------------
    def on_step_start(self, step: int) -> None:
        control = self._control
        if control is not None and perf_counter_ns() >= control.due_ns:
            self._check_control(step)
        if not self._live:
            self._step = step
            return
        self._drain()  # what was recorded since the last step end belongs to that step
        self._step = step
        self._apply(self._sched.step_start(step))
        if self._record is not None:
            self._record["steps"].append(step)
        self._open_range("step", STEP_RANGE)

    def on_step_end(self, step: int) -> None:
        self._step_end(step, failed=False)

    def on_stage_start(self, stage: str, step: int | None = None) -> None:
        if not self._live:
            return
        step = self._step if step is None else step
        self._apply(self._sched.stage_start(stage, step))
        self._open_range("stage", stage)

    def on_stage_end(self, stage: str, step: int | None = None) -> None:
        self._stage_end(stage, self._step if step is None else step, failed=False)

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
        self._control = None  # a closed profiler takes no more requests
        self._unhook(list(self._added))
        _current.discard(self)
        crash.unwatch(self)

    def dump_flight(self, reason: str = "request") -> Path | None:
        """Write the flight recorder's last steps to ``<save>/flight/``; the path, or None."""
        flight = self._flight
        if flight is None:
            return None
        self._drain()
        steps = [s for s in flight.held_steps() if s is not None]
        first = steps[0] if steps else self._step or 0
        metadata = self._metadata("flight", first)
        metadata.update(reason=reason, steps=steps)
        record: CaptureRecord = dict(stage=ALL, step=first, index=0, rank=self.rank,
                                     role=self.role, backend="flight", steps=steps,
                                     warmup_steps=[], reason=reason, trigger="flight",
                                     files=[], started=time.time())
        try:
            folder = inside(self.save_root, "flight")
            stem = _unused_stem(folder, self._stem(first, 0))
            path = flight.dump(folder / f"{stem}{SPANS}", metadata)
        except Exception as err:
            log.warning("mindspeed-prof: flight recorder dump (%s) failed: %s", reason, err)
            return None
        record["files"] = [str(path)]
        record["seconds"] = round(time.time() - record.pop("started"), 6)
        self.captures.append(record)
        return path

    def on_signal(self, signum: int) -> None:
        """SIGTERM/SIGINT (called by the crash handler before ``close``): dump the flight."""
        self.dump_flight("signal")

    # -- internals ----------------------------------------------------------------------
    def _step_end(self, step: int, failed: bool) -> None:
        if not self._live:
            return
        took = self._close_range("step", STEP_RANGE)
        self._drain()
        if (failed or self._flight_due) and self._flight is not None:
            self._flight_due = False
            self.dump_flight("error")
        if self._anomaly is not None and took is not None and not failed:
            self._observe(step, None, took)
        self._apply(self._sched.step_end(step, failed))
        spans = self._spans
        if spans is not None:
            try:
                spans.flush_due()
            except Exception as err:
                self._fail("flush", err)

    def _stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        if not self._live:
            return
        took = self._close_range("stage", stage)
        if self._anomaly is not None and took is not None and not failed:
            self._observe(self._step, stage, took)
        if failed and self._flight is not None:
            if any(entry[0] == "step" for entry in self._open):
                self._flight_due = True  # dumped at the step's end, with the whole step
            else:
                self.dump_flight("error")
        self._apply(self._sched.stage_end(stage, step, failed))

    def _observe(self, step: int | None, stage: str | None, took_ns: int) -> None:
        """Feed the anomaly trigger (steps measured under a capture are not representative)."""
        if self._record is not None or self._anomaly is None:
            return
        found = self._anomaly.observe(step, stage, took_ns, self._sched.busy)
        if found is None:
            return
        if len(self.triggers) < 1000:
            self.triggers.append({**found.to_json(), "rank": self.rank})
        if found.action != "capture":
            return
        log.warning("mindspeed-prof: rank %d step %s %s took %.1f ms, over %g x its median "
                    "%.1f ms: capturing the next %d steps under %s", self.rank, step,
                    stage or "(whole step)", found.duration_ms, found.factor, found.median_ms,
                    self.cfg.anomaly_capture_steps, self.save_root / "triggered")
        self.dump_flight("anomaly")
        self._sched.request(Trigger("anomaly", self.cfg.anomaly_capture_steps))

    def _apply(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Stop):
                self._stop(action)
            elif isinstance(action, Start):
                self._start(action)

    def _metadata(self, stage: str, step: int) -> dict[str, Any]:
        return {"rank": self.rank, "role": self.role, "stage": stage, "step": step,
                "host": host_name(), "pid": os.getpid(),
                "level": self.cfg.profile_level.value,
                "window": [self.plan.start, self.plan.end], "warmup_steps": self.plan.warmup}

    def _stem(self, step: int, index: int) -> str:
        stem = f"rank{self.rank}_{host_name()}_{os.getpid()}_step{step}"
        return f"{stem}_{index}" if index else stem

    def _start(self, action: Start) -> None:
        if self.failed:
            return
        capture = action.capture
        trigger = self._sched.trigger if capture.trigger else None
        request = self._requests.get(trigger.ident) if trigger is not None else None
        # README's layout: <role>/ for whole steps; <stage>/, or <role>/<stage>/ for a role;
        # unplanned captures the same under triggered/
        directory = [self.role] if capture.stage == ALL or self.role != "integrated" else []
        if capture.stage != ALL:
            directory.append(safe_name(capture.stage, "stage"))
        metadata = self._metadata(capture.stage, capture.step)
        if capture.trigger:
            directory.insert(0, "triggered")
            metadata["trigger"] = capture.trigger
        cfg = self.cfg
        if request is not None and (request.level or request.preset or request.overrides):
            cfg = self._variant(request)
        if self._budget is not None:
            steps = (1 if capture.stage != ALL else trigger.steps if trigger is not None
                     else self.plan.stop - capture.step)
            level, why = self._budget.choose(cfg.profile_level.value, steps)
            if level is None:
                if request is not None and self._control is not None:
                    self._control.ack(request, self.rank, self.role, "failed",
                                      message=f"disk budget: {why}")
                self._over_budget(capture, why)
                return
            if level != cfg.profile_level.value:
                self._warn_once("lowered", f"mindspeed-prof: disk budget: capturing step "
                                f"{capture.step} at {level} instead of {cfg.profile_level.value} "
                                f"({why})")
                cfg = dataclasses.replace(cfg, profile_level=Level[level])
        metadata["level"] = cfg.profile_level.value
        backend: Backend | None = None
        try:
            folder = inside(self.save_root, *directory)
            stem = _unused_stem(folder, self._stem(capture.step, capture.index))
            target = CaptureTarget(folder, stem, self.rank, self.role, capture, metadata)
            if cfg is not self.cfg:
                backend = select_backend(cfg)  # this capture only
            else:
                if self._backend is None:
                    self._backend = select_backend(self.cfg)
                backend = self._backend
            backend.start(target)
            self._active = backend
            sinks = backend.sinks()
        except Exception as err:
            self._active = backend  # stopped by _fail, whatever it started
            if request is not None and self._control is not None:
                self._control.ack(request, self.rank, self.role, "failed", message=str(err))
            self._fail("start", err)
            return
        self._record = dict(stage=capture.stage, step=capture.step, index=capture.index,
                            rank=self.rank, role=self.role, backend=backend.name,
                            level=cfg.profile_level.value, steps=[], files=[],
                            started=time.time())
        if capture.trigger:
            self._record["trigger"] = capture.trigger
        if request is not None:
            self._record["request"] = request.id
        spans = backend.spans
        if spans is not None:  # the range file is fed from this profiler's buffer
            self._drain()
            spans.buffer = self._use_buffer()
            spans.step = self._step
            self._spans = spans
            self._buffering = True
            self._hook([spans.buffer])
        self._capture_sinks = [s for s in sinks if s is not spans]
        self._hook(self._capture_sinks)

    def _over_budget(self, capture: Any, why: str) -> None:
        """Skip a capture the disk budget has no room for: one warning, one record (counted)."""
        self._warn_once("skipped", f"mindspeed-prof: disk budget: skipping captures from step "
                        f"{capture.step} on while there is no room ({why})")
        if self._skipped is not None:
            self._skipped["skipped_captures"] += 1
            return
        self._skipped = dict(stage=capture.stage, step=capture.step, index=capture.index,
                             rank=self.rank, role=self.role, backend="none", steps=[],
                             warmup_steps=[], files=[], reason="disk_budget", skipped=why,
                             skipped_captures=1)
        self.captures.append(self._skipped)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    def _variant(self, request: Request) -> IntegratedConfig:
        """The config with what an on-demand request changes: level, preset, options."""
        from mindspeed_prof.config.presets import PRESETS

        values: dict[str, Any] = {}
        if request.preset:
            values.update({k: v for k, v in PRESETS[request.preset][1].items()
                           if k in _CAPTURE_FIELDS})
        if request.level:
            values["profile_level"] = Level[request.level]
        values.update({k: v for k, v in request.overrides.items() if k in _CAPTURE_FIELDS})
        return dataclasses.replace(self.cfg, **values)

    def _stop(self, action: Stop) -> None:
        record, self._record = self._record, None
        backend, self._active = self._active, None
        self._end_capture_ranges()
        if record is None or backend is None:
            return
        record["reason"] = action.reason
        record["warmup_steps"] = [s for s in record["steps"] if self.plan.is_warmup(s)]
        try:
            files = backend.stop()
        except Exception as err:
            record["files"] = []
            self.captures.append(record)
            self._acknowledge(record, "failed", str(err))
            self._fail("stop", err)
            return
        record["files"] = [str(f) for f in files]
        record["seconds"] = round(time.time() - record.pop("started"), 6)
        self.captures.append(record)
        self._acknowledge(record, "written")
        if self._budget is not None:
            written = sum(bytes_under(Path(f)) for f in files if Path(f).exists())
            self._budget.learn(record["level"], written, max(1, len(record["steps"])))
        if self.cfg.profile_analysis and backend.name != "torch_npu":
            self._summarize(files)

    # -- on-demand requests -------------------------------------------------------------
    def _check_control(self, step: int) -> None:
        control = self._control
        assert control is not None
        control.due_ns = perf_counter_ns() + control.interval_ns
        try:
            if not self.enabled:  # the rank may be known only now (torch.distributed)
                self.rank = _quiet_rank(self._rank_arg)
            requests = control.poll(self.rank, self.role, step)
        except Exception as err:  # a broken control folder never stops training
            self._warn_once("control", f"mindspeed-prof: could not read capture requests: {err}")
            control.due_ns += 60 * control.interval_ns
            return
        for request in requests:
            self._take_request(request, control)

    def _take_request(self, request: Request, control: ControlChannel) -> None:
        files: list[str] = []
        if self.failed:
            control.ack(request, self.rank, self.role, "failed",
                        message="profiling failed earlier in this run")
            return
        if request.flight:
            path = self.dump_flight("on_demand")
            if path is not None:
                files.append(str(path))
            elif not request.steps:
                control.ack(request, self.rank, self.role, "failed",
                            message="the flight recorder is off (flight_recorder_steps: 0)")
                return
        if not request.steps:
            control.ack(request, self.rank, self.role, "written", files)
            return
        self._requests[request.id] = request
        self._sched.request(Trigger("on_demand", request.steps, stage=request.stage or ALL,
                                    level=request.level, preset=request.preset,
                                    ident=request.id))
        control.ack(request, self.rank, self.role, "queued", files)
        log.warning("mindspeed-prof: rank %d: capture request %s queued (%d steps)", self.rank,
                    request.id, request.steps)
        if not self._live:
            self._live = True
            crash.watch(self)

    def _acknowledge(self, record: CaptureRecord, status: str, message: str = "") -> None:
        request = self._requests.get(record.get("request", ""))
        if request is None or self._control is None:
            return
        files = [f for c in self.captures if c.get("request") == request.id for f in c["files"]]
        self._control.ack(request, self.rank, self.role, status, files, message)

    def _end_capture_ranges(self) -> None:
        """Close the capture's own ranges and sinks; the buffer goes on if the flight needs it."""
        for entry in reversed(self._open):
            entered, entry[3] = entry[3], []
            for cm in reversed(entered):
                try:
                    cm.__exit__(None, None, None)
                except Exception:  # the capture is ending anyway
                    pass
        self._drain()
        self._unhook(self._capture_sinks)
        self._capture_sinks = []
        self._spans = None
        if self._flight is None and self._buffer is not None:
            self._buffering = False
            self._unhook([self._buffer])

    def _summarize(self, files: list[Path]) -> None:
        try:
            from mindspeed_prof.analysis.summary import write_capture_summary

            write_capture_summary(files)
        except Exception as err:
            log.warning("mindspeed-prof: could not summarise %s: %s", files, err)

    # -- ranges -------------------------------------------------------------------------
    def _use_buffer(self) -> RangeBuffer:
        if self._buffer is None:
            self._buffer = RangeBuffer()
            if self._flight is not None or self.cfg.flight_recorder_steps:
                self._buffering = True
                self._hook([self._buffer])
        return self._buffer

    def _hook(self, sinks: list[RangeSink]) -> None:
        for sink in sinks:
            if not any(s is sink for s in self._added):
                self._added.append(sink)
                mstx.add_sink(sink)

    def _unhook(self, sinks: list[RangeSink]) -> None:
        for sink in sinks:
            mstx.remove_sink(sink)
            self._added = [s for s in self._added if s is not sink]

    def _drain(self) -> None:
        """Hand what the buffer recorded to the flight recorder and the range file."""
        buffer = self._buffer
        if buffer is None or not buffer.events:
            return
        events = buffer.take()
        if self._flight is not None:
            self._flight.add(self._step, events)
        spans = self._spans
        if spans is not None:
            try:
                spans.add(self._step, events)
            except Exception as err:
                self._spans = None  # _fail drains again: not into this one
                self._fail("flush", err)

    def _open_range(self, kind: str, name: str) -> None:
        entered = []
        if self._capture_sinks:
            label = f"{STEP_RANGE}#{self._step}" if kind == "step" else name
            try:
                for sink in self._capture_sinks:
                    cm = sink.range(label, kind)
                    cm.__enter__()
                    entered.append(cm)
            except Exception as err:
                self._fail("range", err)
        self._open.append([kind, name, perf_counter_ns(), entered])

    def _close_range(self, kind: str, name: str) -> int | None:
        """End the innermost open range if it is ``name``; its duration in ns, else None."""
        top = self._open[-1] if self._open else None
        if top is None or top[0] != kind or top[1] != name:
            return None
        self._open.pop()
        for cm in reversed(top[3]):
            try:
                cm.__exit__(None, None, None)
            except Exception as err:
                self._fail("range", err)
        t1 = perf_counter_ns()
        if self._buffering and self._buffer is not None:
            key = self._keys.get((name, kind))
            if key is None:
                key = self._keys[(name, kind)] = self._buffer.key(name, kind)
            self._buffer.events.append((key, top[2], t1))
        return t1 - int(top[2])

    def _fail(self, what: str, err: Exception) -> None:
        if self.cfg.strict:
            raise ProfilerError(f"mindspeed-prof: capture {what} failed: {err}") from err
        if not self.failed:
            message = (f"mindspeed-prof: capture {what} failed ({type(err).__name__}: {err}); "
                       "profiling is off for the rest of this run, training goes on "
                       f"(set profiler_config.{self.role}.strict=true to stop instead)")
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=3)
        self.failed = True
        self._record = None
        self._flight = None
        self._end_capture_ranges()
        self._buffering = False
        self._unhook(list(self._added))
        backend, self._active = self._active, None
        if backend is not None and what != "stop":
            try:
                backend.stop()
            except Exception:
                pass


def _unused_stem(folder: Path, stem: str) -> str:
    """``stem``, or ``stem_r2``, ``stem_r3``... if an earlier capture of this process took it.

    Other processes cannot collide (the pid is in the stem); the same process can, when a
    launcher reuses it for several jobs writing to one save root.
    """
    if not folder.is_dir():
        return stem
    names = [p.name for p in folder.iterdir()]
    n, candidate = 1, stem
    while any(name == candidate or name.startswith(candidate + ".") for name in names):
        n += 1
        candidate = f"{stem}_r{n}"
    return candidate


#: Fields an on-demand request's level, preset or torch_npu options may change.
_CAPTURE_FIELDS = ("mstx", "profile_level", "profile_with_memory", "profile_record_shapes",
                   "profile_with_cpu", "profile_with_npu", "profile_with_module", "with_stack",
                   "aic_metrics")


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
