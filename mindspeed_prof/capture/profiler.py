"""``Profiler``: trainer hooks that start and stop captures by step, stage and rank.

One object, in one module read top to bottom (exempt from the 400-line rule:
tests/test_module_size.py says why). A small driver: its ``Scheduler`` (``plan.py``) turns
step, stage and decode-iteration events into starts and stops, its ``Capturer`` runs them, its
``RangeTap`` keeps the step and stage ranges, and its parts (``Part``: flight recorder, anomaly
trigger, on-demand requests, disk budget, a rollout engine's profiler) are told about every
event through one protocol. ``on_capture`` callbacks get each capture's record (the Hydra
callback hangs the post-capture summary there).

The class, by banner: the context managers a trainer uses; the ``TrainerHook`` events; the
lifecycle (close, fork, wake, signals); who its captures belong to (run, rank, header, stem);
what parts may use (``part.Host``); the capture actions (the scheduler's starts and stops run,
a failure turned into profiling off). Then the scopes that ``prof.step(n)``, ``prof.stage(s)``
and ``prof.iteration(i)`` return (``StepScope``'s enter and exit are the step hooks
themselves: a scope that called the hooks would cost a frame more on each, in every recorded
step), and ``current()``.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from time import perf_counter_ns
from types import TracebackType
from typing import ContextManager

from mindspeed_prof import mstx
from mindspeed_prof.capture import count as _count
from mindspeed_prof.capture import crash
from mindspeed_prof.capture import current as _current
from mindspeed_prof.capture import run as _run
from mindspeed_prof.capture.anomaly import Anomaly, AnomalyPart
from mindspeed_prof.capture.backends import Backend
from mindspeed_prof.capture.budget import Budget
from mindspeed_prof.capture.buffer import ITERATION, ITERATION_RANGE
from mindspeed_prof.capture.capturer import Capturer
from mindspeed_prof.capture.engine_part import EnginePart
from mindspeed_prof.capture.engines import Engine, EngineDriver, engine_kind
from mindspeed_prof.capture.flight import Flight
from mindspeed_prof.capture.hooklock import HookLock
from mindspeed_prof.capture.hooks import TrainerHook, as_step, stage_step
from mindspeed_prof.capture.job_parts import job_parts
from mindspeed_prof.capture.lifecycle import Event, State, next_state
from mindspeed_prof.capture.naming import claim_stem, host_name, process_token, safe_name
from mindspeed_prof.capture.ondemand import OnDemand
from mindspeed_prof.capture.part import Part, Starting, stage_hooked
from mindspeed_prof.capture.plan import Action, CapturePlan, Scheduler, Start, Stop, Trigger
from mindspeed_prof.capture.ranges import RangeTap
from mindspeed_prof.capture.rank import quiet_rank, resolve_rank
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.capture.telemetry import TelemetryPart
from mindspeed_prof.config.schema import (
    IntegratedConfig,
    canonical_role,
    canonical_stage,
    field_key,
)
from mindspeed_prof.config.validate import RUN_KEY, validate
from mindspeed_prof.formats.header import CaptureHeader, ModelFacts
from mindspeed_prof.formats.run import valid_run_id
from mindspeed_prof.formats.save_root import anchor
from mindspeed_prof.formats.stem import Stem

__all__ = ["CaptureRecord", "OnCapture", "Profiler", "ProfilerError", "TrainerHook", "current"]

log = logging.getLogger("mindspeed_prof")

#: Called with each capture's record once its files are written.
OnCapture = Callable[[CaptureRecord], None]
#: What the hooks return when they do nothing (reusable, reentrant).
_OFF = nullcontext()
#: How long a signal handler waits for another thread's hook before keeping nothing.
_SIGNAL_WAIT_S = 0.25
_LIVE = State.LIVE
#: This package's folder: a warning points at the first frame outside it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ProfilerError(RuntimeError):
    """A capture failed and ``strict: true`` asked to stop training."""


class Profiler:
    """Captures the steps, stages and ranks that its ``profiler_config`` section asks for.

    Faults inside profiling are logged once and training goes on (``strict: true`` raises
    ``ProfilerError`` instead); captures already written are never touched again. Its hooks
    may be called from several threads (stages are kept per thread). It belongs to the process
    that made it: in a forked child it is off, and writes, closes and dumps nothing.
    """

    def __init__(
        self,
        cfg: IntegratedConfig,
        *,
        rank: int | None = None,
        role: str = "integrated",
        backend: Backend | None = None,
        on_capture: Sequence[OnCapture] = (),
        run: str | None = None,
    ) -> None:
        self.cfg = cfg
        if run is not None and not valid_run_id(run):
            raise ValueError(f"run={run!r}: a run id is 1-64 letters, digits, '_', '.' or '-'")
        self._run: tuple[str, str] | None = (run, "given") if run is not None else None
        self.role = safe_name(canonical_role(role), "role")  # verl's ref: reference
        self.enabled = bool(cfg.profile)
        self._rank_arg = rank
        unplanned = bool(cfg.flight_recorder_steps or cfg.anomaly_factor or cfg.telemetry)
        self.rank = (
            resolve_rank(rank) if self.enabled else quiet_rank(rank) if unplanned else (rank or 0)
        )
        self.plan = CapturePlan.from_config(cfg, self.rank)
        self.save_root = Path(cfg.profile_save_path).expanduser().absolute()
        self.captures: list[CaptureRecord] = []
        #: Anomalies seen (JSON-ready, for the manifest): rank, step, stage, time, median...
        self.triggers: list[Anomaly] = []
        self.failed = False
        self.on_capture = list(on_capture)
        self._step: int | None = None
        self._pid = os.getpid()
        self._lock = HookLock()
        self._warned: set[str] = set()
        self._sched = Scheduler(self.plan)
        self._tap = RangeTap(self._fail, self.count)  # mstx.count reaches self.count
        self._capturer = Capturer(self, self._tap, backend)
        flight = cfg.flight_recorder_steps
        self._flight = Flight(self, self._tap, flight) if flight else None
        self._ondemand = OnDemand(self) if cfg.on_demand else None
        self._telemetry = TelemetryPart(self) if cfg.telemetry else None
        parts: list[Part | None] = [
            self._ondemand,
            Budget(self) if cfg.max_disk_mb else None,
            self._flight,
            AnomalyPart(self) if cfg.anomaly_factor else None,
            self._telemetry,
            *job_parts(self, self._tap),  # memory, the host budget, the finish hook
        ]
        self.parts: list[Part] = []
        self._step_starts: list[Callable[[int], None]] = []
        self._step_ends: list[Callable[[int, int | None, bool], None]] = []
        self._stage_starts: list[Part] = []  # parts with stage-start or before-end hooks
        self._counting: list[Part] = []
        for part in parts:
            if part is not None:
                self.add_part(part)
        if self._counting:
            self._tap.count_always()
        #: LIVE: step and stage hooks do something (a capture may start or a range is kept).
        live = self.plan.enabled or any(p.live for p in self.parts)
        self._state = _LIVE if live else State.DORMANT
        _current.set_current(self)
        crash.track(self)
        if live:
            crash.watch(self)
            mstx.add_marker(self)  # mstx.iteration(i): only profilers whose hooks run

    @classmethod
    def from_config(
        cls,
        cfg: object,
        rank: int | None = None,
        role: str = "integrated",
        backend: Backend | None = None,
        on_capture: Sequence[OnCapture] = (),
        run: str | None = None,
    ) -> Profiler:
        """Validate ``cfg`` (a ``profiler_config`` node, dict or dataclass) and build one.

        ``role`` picks the section: ``integrated``'s settings with the role's own laid over
        them; captures go under ``<save>/<role>/``. An unknown role raises ``ConfigError``.
        ``run``: the job's run id where the caller knows it (a worker's config carries its
        driver's: ``ray.worker_config``); else resolved at the first capture (``capture.run``).

        It always builds a profiler. Inside a Hydra job the callback has built the job's (whose
        manifest counts what it captured): ``current()`` reaches it, and ``from_config`` of its
        role says in one line that it builds a second one.
        """
        checked = validate(cfg, role)
        checked.profile_save_path = str(anchor(checked.profile_save_path))
        if run is None and isinstance(cfg, Mapping):  # a worker's config: its driver's run
            run = cfg.get(RUN_KEY)
        job = _current.job_profiler()
        if (
            isinstance(job, Profiler)
            and job._state.open
            and job.role == safe_name(canonical_role(role), "role")
        ):
            job.warn_once(
                "second",
                "mindspeed-prof: Profiler.from_config inside a Hydra job builds a second "
                "profiler beside the job's (captured twice, not in the job's manifest); "
                "the job's is mindspeed_prof.current()",
            )
        return cls(checked, rank=rank, role=role, backend=backend, on_capture=on_capture, run=run)

    # -- context managers -------------------------------------------------------------
    def step(self, step: int) -> ContextManager[None]:
        """``with prof.step(n):`` around one training step (global step number, 1-based)."""
        if type(step) is not int:  # a numpy or tensor step; or no integer: warned, not profiled
            return _OFF if (given := as_step(step, self.warn_once)) is None else self.step(given)
        if self._state is _LIVE:
            return StepScope(self, step)
        self._step = step
        ondemand = self._ondemand
        if ondemand is not None and perf_counter_ns() >= ondemand.due_ns and self._state.open:
            ondemand.check(step)  # a clock read per step otherwise
            if self._state is _LIVE:
                return StepScope(self, step)
        return _OFF

    def stage(self, name: str) -> ContextManager[None]:
        """``with prof.stage("actor_update"):`` around one RL stage of the current step."""
        if self._state is _LIVE:
            return StageScope(self, canonical_stage(name), self._step)  # verl's names: ours
        return _OFF

    def iteration(self, i: int) -> ContextManager[object]:
        """``with prof.iteration(i):`` around decode iteration ``i`` of the current stage (the
        rollout's); with an iteration window (``iteration_count``) a capture covers only the
        window's iterations. Kept in range files as ``iteration`` ranges."""
        if self._state is _LIVE:
            return IterationScope(self, int(i))
        return _OFF

    def metrics(self, step: int | None = None) -> dict[str, float]:
        """The last finished step's figures on this rank as a flat dict for the trainer's
        tracker (``prof/step/ms``, ``prof/stage/<s>/ms``, ``prof/range/<r>/ms``,
        ``prof/count/<c>``); ``step``: one of the last 64 steps. {} without ``telemetry``."""
        return self._telemetry.metrics(step) if self._telemetry is not None else {}

    def count(self, name: str, value: _count.Countable) -> None:
        """Add ``value`` to the counter ``name`` in this step and the thread's stage (a
        sequence: a distribution); docs/counters.md. Free unless a range recorder is on or a
        part takes counts; a bad name or value is dropped with one warning."""
        if (self._counting or self._tap.recording) and self._state.open:
            _count.record(self._tap, self._counting, self._step, name, value, self.warn_once)

    def __enter__(self) -> Profiler:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- TrainerHook --------------------------------------------------------------------
    def on_step_start(self, step: int) -> None:
        StepScope(self, step).__enter__()

    def on_step_end(self, step: int) -> None:
        StepScope(self, step).__exit__(None)

    def on_stage_start(self, stage: str, step: int | None = None) -> None:
        if self._state is not _LIVE:
            return
        stage = canonical_stage(stage)
        with self._lock:
            if self._state is not _LIVE:
                return
            step = stage_step(step, self._step, self.warn_once)
            self._apply(self._sched.stage_start(stage, step))
            self._tap.open("stage", stage, step)
            for part in self._stage_starts:
                part.on_stage_start(stage, step)

    def on_stage_end(self, stage: str, step: int | None = None) -> None:
        step = stage_step(step, self._step, self.warn_once)
        self._stage_end(canonical_stage(stage), step, failed=False)

    def on_iteration_start(self, iteration: int) -> None:
        if self._state is not _LIVE:
            return
        with self._lock:
            if self._state is not _LIVE:
                return
            self._apply(self._sched.iteration_start(iteration))
            self._tap.open(ITERATION, f"{ITERATION_RANGE}{iteration}", self._step)
            record = self._capturer.record
            if record is not None:  # [first, last]: a whole stage may run thousands
                its = record.iterations
                its[:] = [its[0] if its else iteration, iteration]

    def on_iteration_end(self, iteration: int) -> None:
        if self._state is not _LIVE:
            return
        with self._lock:
            if self._state is not _LIVE:
                return
            self._tap.close(ITERATION, f"{ITERATION_RANGE}{iteration}")
            self._apply(self._sched.iteration_end(iteration))

    def on_train_end(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop any active capture and flush it; safe to call more than once."""
        if not self._state.open:
            return
        if not self.owned:
            self.disown()
            return
        with self._lock:
            was = self._state
            if not self._go(Event.CLOSE):
                return
            if was is _LIVE:
                self._apply(self._sched.close())
            for part in self.parts:
                part.on_close()
            self._tap.stop()
            _current.discard(self)
            mstx.remove_marker(self)
            crash.unwatch(self)

    # -- lifecycle ----------------------------------------------------------------------
    def _go(self, event: Event) -> bool:
        """Take the transition ``event`` (``lifecycle``); False where it is refused."""
        state = next_state(self._state, event)
        if state is None:
            return False
        self._state = state
        return True

    @property
    def _live(self) -> bool:  # the step and stage hooks run (``State.LIVE``)
        return self._state is _LIVE

    @property
    def owned(self) -> bool:
        """Made by this process (not inherited by a forked child)."""
        return os.getpid() == self._pid

    def add_part(self, part: Part) -> None:
        """One more part, told about every event from now on (a test's, or a plugin's)."""
        self.parts.append(part)
        kind = type(part)  # a step calls the live parts' own step hooks, bound, and no others
        if part.live and kind.on_step_start is not Part.on_step_start:
            self._step_starts.append(part.on_step_start)
        if part.live and kind.on_step_end is not Part.on_step_end:
            self._step_ends.append(part.on_step_end)
        if kind.on_count is not Part.on_count:
            self._counting.append(part)
        if stage_hooked(part):
            self._stage_starts.append(part)

    def disown(self) -> None:
        """In a forked child: off for good, its captures forgotten without writing, closing or
        dumping anything (they are its parent's). Called for every profiler at a fork."""
        if not self._go(Event.DISOWN):
            return
        self.parts, self._step_starts, self._step_ends, self._counting = [], [], [], []
        self._lock = HookLock()  # another thread of the parent may have held it at the fork
        self._capturer.disown()
        self._tap.disown()
        _current.discard(self)
        mstx.remove_marker(self)

    def dump_flight(self, reason: str = "request", at: int | None = None) -> Path | None:
        """Write the flight recorder's last steps to ``<save>/flight/``; the path, or None.
        ``at``: the step that asked (an anomaly's), recorded with the dump."""
        if self._flight is None or self._state is State.DISOWNED or not self.owned:
            return None
        return self._flight.dump(reason, at)

    def on_signal(self, signum: int) -> None:
        """SIGTERM/SIGINT (called by the crash handler before the trainer's handler): keep
        what is cheap to keep, the range file written out and the flight recorder dumped. The
        capture is closed by what ends the process (the step the trainer's handler leaves,
        ``close``, exit); nothing is kept when the signal interrupted a hook of this profiler."""
        if not self.owned or self._state is not _LIVE or not self._lock.for_signal(_SIGNAL_WAIT_S):
            return
        try:
            try:
                self.flush_ranges()
            except Exception as err:
                log.warning("mindspeed-prof: on signal %d, the range file: %s", signum, err)
            for part in self.parts:
                part.on_signal(signum)
        finally:
            self._lock.release()

    # -- what parts may use (``part.Host``) ---------------------------------------------
    def flush_ranges(self) -> None:
        """The ranges so far to every listener (as this step's), the range file written."""
        self._tap.drain(self._step)
        self._capturer.flush()

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
        if self._go(Event.WAKE):
            crash.watch(self)
            mstx.add_marker(self)

    def warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(message)

    def attach_engine(
        self,
        engine: Engine,
        kind: str = "auto",
        *,
        profiler_dir: str | Path | None = None,
        activities: list[str] | None = None,
        with_stack: bool = False,
        record_shapes: bool = False,
    ) -> EnginePart:
        """Drive ``engine``'s own profiler (a vLLM ``LLM``/``AsyncLLM``, an SGLang ``Engine``;
        ``kind``: ``vllm``, ``sglang`` or ``auto``) with this profiler's captures: started and
        stopped at each capture's edges (an iteration window's, else its stage's), its traces
        kept under the save root with this rank and step (``engine_part``). ``options``:
        ``profiler_dir`` (vLLM's trace folder, when not read from the engine), ``activities``,
        ``with_stack``, ``record_shapes`` (SGLang's)."""
        driver = EngineDriver(
            engine,
            engine_kind(engine, kind),
            profiler_dir=profiler_dir,
            activities=activities,
            with_stack=with_stack,
            record_shapes=record_shapes,
        )
        part = EnginePart(self, driver)
        self.parts.append(part)
        return part

    # -- who its captures belong to: run, rank, header, stem -----------------------------
    def refresh_rank(self) -> int:
        """The rank again, where profiling is off: it may be known only now (torch.distributed)."""
        if not self.enabled:
            self.rank = quiet_rank(self._rank_arg)
        return self.rank

    @property
    def run(self) -> tuple[str, str]:
        """``(run id, how the ranks agreed on it)`` (``capture.run``), resolved on first use."""
        if self._run is None:
            self._run = _run.resolve()
        return self._run

    def metadata(self, stage: str, step: int) -> CaptureHeader:
        """What a capture's files record about it (the range file's header, the trace's):
        ``comm_kernels`` too where set, so every analysis of the trace classifies with it."""
        model = None
        if self.cfg.model_flops_per_token or self.cfg.peak_tflops:  # for MFU (0: not given)
            model = ModelFacts(
                flops_per_token=self.cfg.model_flops_per_token, peak_tflops=self.cfg.peak_tflops
            )
        return CaptureHeader(
            run=self.run[0],
            rank=self.rank,
            role=self.role,
            stage=stage,
            step=step,
            host=host_name(),
            pid=os.getpid(),
            level=self.cfg.profile_level.value,
            window=[self.plan.start, self.plan.end],
            warmup_steps=self.plan.warmup,
            comm_kernels=self.cfg.comm_kernels or None,
            model=model,
        )

    def new_stem(self, folder: Path, step: int, index: int) -> str:
        """``rank<r>_<host>_<pid>_<token>_step<s>[_<index>]``, claimed in ``folder``
        (``naming.claim_stem``): no other process or job gets it."""
        stem = Stem(self.rank, host_name(), os.getpid(), step, process_token(), index)
        return claim_stem(folder, stem.format())

    # -- capture actions: the scheduler's starts and stops, run ---------------------------
    def _apply(self, actions: list[Action]) -> None:
        if actions and not self.owned:  # a child forked where no fork hook ran (see crash)
            self.disown()
            return
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
            if starting.steps:  # the rest of the window in a capture of its own
                self._sched.cut = capture.step + starting.steps - 1
        except Exception as err:
            self._tell(self._unstarted(starting), f"{type(err).__name__}: {err}")  # never ""
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
        return CaptureRecord(
            stage=capture.stage,
            step=capture.step,
            index=capture.index,
            rank=self.rank,
            role=self.role,
            backend="none",
            trigger=capture.trigger,
            request=starting.request,
        )

    def _tell(self, record: CaptureRecord, error: str) -> None:
        for part in self.parts:
            part.on_capture(record, error)

    def _fail(self, what: str, err: Exception) -> None:
        """Profiling off for the rest of the run, one warning (``strict``: raise instead)."""
        if self.cfg.strict:
            raise ProfilerError(f"mindspeed-prof: capture {what} failed: {err}") from err
        if not self.failed:
            message = (
                f"mindspeed-prof: capture {what} failed ({type(err).__name__}: {err}); "
                "profiling is off for the rest of this run, training goes on "
                f"(set {field_key('strict', self.role)}=true to stop instead)"
            )
            log.warning(message)
            warnings.warn(message, RuntimeWarning, stacklevel=trainer_stacklevel())
        self.failed = True
        self._capturer.abort()
        self._tap.stop()

    # -- internals ----------------------------------------------------------------------
    def _stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        if self._state is not _LIVE:
            return
        with self._lock:
            if self._state is not _LIVE:
                return
            for part in self._stage_starts:
                part.before_stage_end(stage, step, failed)
            took = self._tap.close("stage", stage)
            for part in self.parts:
                part.on_stage_end(stage, self._step, took, failed)
            self._apply(self._sched.stage_end(stage, step, failed))
            if self._sched.unmarked:  # an iteration window that can never start
                self._sched.unmarked = False
                self.warn_once(
                    "unmarked",
                    f"mindspeed-prof: {stage} ran without prof.iteration "
                    "marks, so its iteration window captured nothing; mark its decode "
                    "iterations (docs/rollout.md), or set "
                    f"{field_key('iteration_count', self.role)}=0",
                )


# -- what the context managers return while a profiler is live ---------------------------------
class StepScope:
    """``with prof.step(n):`` on a live profiler; ``on_step_start`` and ``on_step_end`` run its
    ``__enter__`` and ``__exit__``, which are the step hooks (they run the profiler's state)."""

    __slots__ = ("_prof", "_step")

    def __init__(self, prof: Profiler, step: int) -> None:
        self._prof = prof  # a step that is no integer: a scope that does nothing (``as_step``)
        self._step = step if type(step) is int else as_step(step, prof.warn_once)

    def __enter__(self) -> None:
        prof, step = self._prof, self._step
        if step is None:
            return
        ondemand = prof._ondemand
        if ondemand is not None and perf_counter_ns() >= ondemand.due_ns and prof._state.open:
            ondemand.check(step)
        if prof._state is not _LIVE:
            prof._step = step
            return
        with prof._lock:
            if prof._state is not _LIVE:
                return
            tap = prof._tap
            if tap.buffer is not None and tap.buffer.events:
                tap.drain(prof._step)  # what was recorded since the last step end: that step's
            prof._step = step
            for start in prof._step_starts:  # the live parts' own hooks (``add_part``)
                start(step)
            sched = prof._sched
            if not sched.idle:
                actions = sched.step_start(step)
                if actions:
                    prof._apply(actions)
            record = prof._capturer.record
            if record is not None:
                record.steps.append(step)
            tap.open_step(step)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        prof, step = self._prof, self._step
        if prof._state is not _LIVE or step is None:
            return
        with prof._lock:
            if prof._state is not _LIVE:
                return
            failed = exc_type is not None
            tap = prof._tap
            took = tap.close_step()
            tap.drain(prof._step)
            for end in prof._step_ends:
                end(step, took, failed)
            sched = prof._sched
            if not sched.idle:
                actions = sched.step_end(step, failed)
                if actions:
                    prof._apply(actions)
            capturer = prof._capturer
            if capturer.record is not None:  # a range file is written only then
                try:
                    capturer.flush_due()
                except Exception as err:
                    prof._fail("flush", err)


class StageScope:
    """``with prof.stage(name):`` one RL stage; its end is told whether an exception left it."""

    __slots__ = ("_prof", "_stage", "_step")

    def __init__(self, prof: Profiler, stage: str, step: int | None) -> None:
        self._prof, self._stage, self._step = prof, stage, step

    def __enter__(self) -> None:
        self._prof.on_stage_start(self._stage, self._step)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._prof._stage_end(self._stage, self._step, failed=exc_type is not None)


class IterationScope:
    """``with prof.iteration(i):`` one decode iteration of the current stage."""

    __slots__ = ("_prof", "_iteration")

    def __init__(self, prof: Profiler, iteration: int) -> None:
        self._prof, self._iteration = prof, iteration

    def __enter__(self) -> None:
        self._prof.on_iteration_start(self._iteration)

    def __exit__(self, *_: object) -> None:
        self._prof.on_iteration_end(self._iteration)


def trainer_stacklevel() -> int:
    """``stacklevel`` for a warning raised by our caller: the first frame outside this package
    (the trainer's ``with prof.step(...)`` line, however deep the fault was found)."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def current(role: str | None = None) -> Profiler:
    """The profiler of this process (set by the Hydra callback or ``from_config``): the one
    made last, or with ``role`` the open one of that role; else a disabled one (hooks do nothing).
    """
    prof = _current.get_current(role)
    if prof is None:
        prof = Profiler(IntegratedConfig(), role=role or "integrated")  # now current
    assert isinstance(prof, Profiler)
    return prof
