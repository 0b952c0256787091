"""The profiler's rollout hooks: decode iterations (``prof.iteration(i)``, iteration windows:
``iterations.py``) and rollout engines with a profiler of their own (``attach_engine``:
``engine_part.py``). Mixed into ``Profiler``, whose state they use."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager

from mindspeed_prof.capture.buffer import ITERATION, ITERATION_RANGE
from mindspeed_prof.capture.engine_part import EnginePart
from mindspeed_prof.capture.engines import Engine, EngineDriver, engine_kind
from mindspeed_prof.capture.scopes import IterationScope
from mindspeed_prof.config.schema import field_key

if TYPE_CHECKING:
    from mindspeed_prof.capture.capturer import Capturer
    from mindspeed_prof.capture.hooklock import HookLock
    from mindspeed_prof.capture.part import Part
    from mindspeed_prof.capture.plan import Action, Scheduler
    from mindspeed_prof.capture.ranges import RangeTap

__all__ = ["RolloutHooks"]

_OFF = nullcontext()


class RolloutHooks:
    """``iteration``, its hooks, and ``attach_engine``, for ``Profiler``."""

    if TYPE_CHECKING:  # the profiler's, which these hooks use

        @property
        def _live(self) -> bool: ...

        _lock: HookLock
        _sched: Scheduler
        _tap: RangeTap
        _capturer: Capturer
        _step: int | None
        parts: list[Part]
        role: str

        def _apply(self, actions: list[Action]) -> None: ...

        def warn_once(self, key: str, message: str) -> None: ...

    def iteration(self, i: int) -> ContextManager[object]:
        """``with prof.iteration(i):`` around decode iteration ``i`` of the current stage (the
        rollout's); with an iteration window (``iteration_count``) a capture covers only the
        window's iterations. Kept in range files as ``iteration`` ranges."""
        if self._live:
            return IterationScope(self, int(i))
        return _OFF

    def on_iteration_start(self, iteration: int) -> None:
        if not self._live:
            return
        with self._lock:
            if not self._live:
                return
            self._apply(self._sched.iteration_start(iteration))
            self._tap.open(ITERATION, f"{ITERATION_RANGE}{iteration}", self._step)
            record = self._capturer.record
            if record is not None:  # [first, last]: a whole stage may run thousands
                its = record.iterations
                its[:] = [its[0] if its else iteration, iteration]

    def on_iteration_end(self, iteration: int) -> None:
        if not self._live:
            return
        with self._lock:
            if not self._live:
                return
            self._tap.close(ITERATION, f"{ITERATION_RANGE}{iteration}")
            self._apply(self._sched.iteration_end(iteration))

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
        part = EnginePart(self, driver)  # type: ignore[arg-type]
        self.parts.append(part)
        return part

    def _check_marks(self, stage: str) -> None:
        """At a stage's end: one warning when an iteration window's stage ran unmarked."""
        if self._sched.unmarked:  # an iteration window that can never start
            self._sched.unmarked = False
            self.warn_once(
                "unmarked",
                f"mindspeed-prof: {stage} ran without prof.iteration "
                "marks, so its iteration window captured nothing; mark its decode "
                "iterations (docs/rollout.md), or set "
                f"{field_key('iteration_count', self.role)}=0",
            )
