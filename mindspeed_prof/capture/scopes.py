"""What ``prof.stage(name)`` and ``prof.iteration(i)`` return while a profiler is live: context
managers that call its hooks, telling the end whether an exception left the block; and where a
warning raised from inside them points (the trainer's line)."""

from __future__ import annotations

import os
import sys
from typing import Protocol

__all__ = ["IterationScope", "StageScope", "trainer_stacklevel"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def trainer_stacklevel() -> int:
    """``stacklevel`` for a warning raised by our caller: the first frame outside this package
    (the trainer's ``with prof.step(...)`` line, however deep the fault was found)."""
    frame, level = sys._getframe(2), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class _Hooks(Protocol):
    def on_stage_start(self, stage: str, step: int | None = None) -> None: ...

    def _stage_end(self, stage: str, step: int | None, failed: bool) -> None: ...


class StageScope:
    __slots__ = ("_prof", "_stage", "_step")

    def __init__(self, prof: _Hooks, stage: str, step: int | None) -> None:
        self._prof, self._stage, self._step = prof, stage, step

    def __enter__(self) -> None:
        self._prof.on_stage_start(self._stage, self._step)

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._prof._stage_end(self._stage, self._step, failed=exc_type is not None)


class _IterationHooks(Protocol):
    def on_iteration_start(self, iteration: int) -> None: ...

    def on_iteration_end(self, iteration: int) -> None: ...


class IterationScope:
    """``with prof.iteration(i):`` one decode iteration of the current stage."""

    __slots__ = ("_prof", "_iteration")

    def __init__(self, prof: _IterationHooks, iteration: int) -> None:
        self._prof, self._iteration = prof, iteration

    def __enter__(self) -> None:
        self._prof.on_iteration_start(self._iteration)

    def __exit__(self, *_: object) -> None:
        self._prof.on_iteration_end(self._iteration)
