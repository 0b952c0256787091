"""The profiler's step hooks, as the context manager ``prof.step(n)`` returns: its enter and exit
are the hooks themselves (a scope that called the profiler's hooks cost a frame more on each, in
every recorded step). It reads and runs the profiler's state (``Stepping``)."""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.capture.hooks import as_step
from mindspeed_prof.capture.lifecycle import State

if TYPE_CHECKING:
    from mindspeed_prof.capture.capturer import Capturer
    from mindspeed_prof.capture.hooklock import HookLock
    from mindspeed_prof.capture.ondemand import OnDemand
    from mindspeed_prof.capture.plan import Action, Scheduler
    from mindspeed_prof.capture.ranges import RangeTap

__all__ = ["StepScope", "Stepping"]

_LIVE = State.LIVE


class Stepping(Protocol):
    """What the step hooks use of their profiler."""

    _ondemand: OnDemand | None
    _state: State
    _step: int | None
    _lock: HookLock
    _tap: RangeTap
    _sched: Scheduler
    _capturer: Capturer
    _step_starts: list[Callable[[int], None]]
    _step_ends: list[Callable[[int, int | None, bool], None]]

    def _apply(self, actions: list[Action]) -> None: ...

    def _fail(self, what: str, err: Exception) -> None: ...

    def warn_once(self, key: str, message: str) -> None: ...


class StepScope:
    """``with prof.step(n):`` on a live profiler; ``on_step_start`` and ``on_step_end`` run its
    ``__enter__`` and ``__exit__``."""

    __slots__ = ("_prof", "_step")

    def __init__(self, prof: Stepping, step: int) -> None:
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
            if prof._capturer.record is not None:
                prof._capturer.step_started(step)
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
            if prof._capturer.record is not None:  # a range file is written only then
                try:
                    prof._capturer.flush_due()
                except Exception as err:
                    prof._fail("flush", err)
