"""``Profiler``: trainer hooks that start and stop captures by step, stage and rank."""

from __future__ import annotations

import logging
import os
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any, ContextManager

from mindspeed_prof import mstx
from mindspeed_prof.capture import crash
from mindspeed_prof.capture import current as _current
from mindspeed_prof.capture.backends import Backend, CaptureTarget, Fanout, select_backend
from mindspeed_prof.capture.hooks import TrainerHook
from mindspeed_prof.capture.naming import host_name, inside, safe_name
from mindspeed_prof.capture.plan import ALL, Action, CapturePlan, Scheduler, Start, Stop
from mindspeed_prof.capture.rank import resolve_rank
from mindspeed_prof.config.schema import IntegratedConfig
from mindspeed_prof.config.validate import validate
from mindspeed_prof.formats import anchor

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
        self._step: int | None = None
        self._ranges: list[tuple[str, ContextManager[Any]]] = []
        self._record: CaptureRecord | None = None
        self._closed = False
        _current.set_current(self)
        if self.plan.enabled:
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
        if not self.plan.enabled:
            self._step = step
            return mstx._NOOP
        return _StepScope(self, step)

    def stage(self, name: str) -> ContextManager[Any]:
        """``with prof.stage("actor_update"):`` around one RL stage of the current step."""
        if not self.plan.enabled:
            return mstx._NOOP
        return _StageScope(self, name, self._step)

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- TrainerHook --------------------------------------------------------------------
    def on_step_start(self, step: int) -> None:
        self._step = step
        if not self.plan.enabled:
            return
        self._apply(self._sched.step_start(step))
        if self._record is not None:
            spans = self._backend.spans if self._backend is not None else None
            if spans is not None:
                spans.step = step
            self._record["steps"].append(step)
            self._open_range(f"ProfilerStep#{step}", "step")

    def on_step_end(self, step: int) -> None:
        self._step_end(step, failed=False)

    def on_stage_start(self, stage: str, step: int | None = None) -> None:
        if not self.plan.enabled:
            return
        step = self._step if step is None else step
        self._apply(self._sched.stage_start(stage, step))
        if self._record is not None:
            self._open_range(stage, "stage")

    def on_stage_end(self, stage: str, step: int | None = None) -> None:
        self._stage_end(stage, self._step if step is None else step, failed=False)

    def on_train_end(self) -> None:
        self.close()

    def close(self) -> None:
        """Stop any active capture and flush it; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        if self.plan.enabled:
            self._apply(self._sched.close())
        _current.discard(self)
        crash.unwatch(self)

    # -- internals ----------------------------------------------------------------------
    def _step_end(self, step: int, failed: bool) -> None:
        if not self.plan.enabled:
            return
        self._close_range("step")
        self._apply(self._sched.step_end(step, failed))
        self._flush_spans()

    def _stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        if not self.plan.enabled:
            return
        if self._record is not None and self._ranges and self._ranges[-1][0] == stage:
            self._close_range(stage)
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
        # README's layout: <role>/ for whole steps; <stage>/, or <role>/<stage>/ for a role
        directory = [self.role] if capture.stage == ALL or self.role != "integrated" else []
        if capture.stage != ALL:
            directory.append(safe_name(capture.stage, "stage"))
        stem = f"rank{self.rank}_{host_name()}_{os.getpid()}_step{capture.step}"
        if capture.index:
            stem += f"_{capture.index}"
        metadata = {"rank": self.rank, "role": self.role, "stage": capture.stage,
                    "step": capture.step, "host": host_name(), "pid": os.getpid(),
                    "level": self.cfg.profile_level.value,
                    "window": [self.plan.start, self.plan.end],
                    "warmup_steps": self.plan.warmup}
        try:
            folder = inside(self.save_root, *directory)
            stem = _unused_stem(folder, stem)
            target = CaptureTarget(folder, stem, self.rank, self.role, capture, metadata)
            if self._backend is None:
                self._backend = select_backend(self.cfg)
            self._backend.start(target)
            sinks = self._backend.sinks()
        except Exception as err:
            self._fail("start", err)
            return
        self._record = dict(stage=capture.stage, step=capture.step, index=capture.index,
                            rank=self.rank, role=self.role, backend=self._backend.name,
                            steps=[], files=[], started=time.time())
        spans = self._backend.spans
        if spans is not None:
            spans.step = self._step
        if sinks:
            mstx.set_sink(sinks[0] if len(sinks) == 1 else Fanout(sinks))

    def _stop(self, action: Stop) -> None:
        record, self._record = self._record, None
        while self._ranges:
            self._close_range(self._ranges[-1][0])
        mstx.set_sink(None)
        if record is None or self._backend is None:
            return
        record["reason"] = action.reason
        record["warmup_steps"] = [s for s in record["steps"] if self.plan.is_warmup(s)]
        try:
            files = self._backend.stop()
        except Exception as err:
            record["files"] = []
            self.captures.append(record)
            self._fail("stop", err)
            return
        record["files"] = [str(f) for f in files]
        record["seconds"] = round(time.time() - record.pop("started"), 6)
        self.captures.append(record)
        if self.cfg.profile_analysis and self._backend.name != "torch_npu":
            self._summarize(files)

    def _summarize(self, files: list[Path]) -> None:
        try:
            from mindspeed_prof.analysis.summary import write_capture_summary

            write_capture_summary(files)
        except Exception as err:
            log.warning("mindspeed-prof: could not summarise %s: %s", files, err)

    def _open_range(self, name: str, kind: str) -> None:
        sink = mstx.active_sink()
        if sink is None:
            return
        try:
            cm = sink.range(name, kind)
            cm.__enter__()
        except Exception as err:
            self._fail("range", err)
            return
        self._ranges.append((name if kind == "stage" else kind, cm))

    def _close_range(self, key: str) -> None:
        if not self._ranges or self._ranges[-1][0] != key:
            return
        _, cm = self._ranges.pop()
        try:
            cm.__exit__(None, None, None)
        except Exception as err:
            self._fail("range", err)

    def _flush_spans(self) -> None:
        spans = self._backend.spans if self._backend is not None else None
        if spans is None:
            return
        try:
            spans.flush()
        except Exception as err:
            self._fail("flush", err)

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
        mstx.set_sink(None)
        backend = self._backend
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
