"""``TrainerHook``: the events a trainer emits; ``Profiler`` implements them all.

``as_step``: what the hooks make of the step a trainer passes. Any integral value (``int``, a
numpy integer, a one-element integer tensor, a float with no fraction) is ``int(step)``; anything
else (a ``str``, ``None``, ``2.5``, ``True``) is no step: that hook does nothing, with one
warning per profiler, and never raises into the trainer.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["TrainerHook", "as_step", "stage_step"]


@runtime_checkable
class TrainerHook(Protocol):
    """Step and stage events with the trainer's global step numbers."""

    def on_step_start(self, step: int) -> None: ...

    def on_step_end(self, step: int) -> None: ...

    def on_stage_start(self, stage: str, step: int) -> None: ...

    def on_stage_end(self, stage: str, step: int) -> None: ...

    def on_train_end(self) -> None: ...


def as_step(step: object, warn_once: Callable[[str, str], None]) -> int | None:
    """``int(step)`` for an integral ``step``; None (and one warning) for anything else.

    Callers test ``type(step) is int`` first: this is the slow path, for the other types."""
    if type(step) is int:
        return step
    if not isinstance(step, bool):
        try:
            return operator.index(step)  # type: ignore[arg-type]  # int, numpy, torch ints
        except Exception:
            pass
        if isinstance(step, float) and step.is_integer():  # numpy floats are floats too
            return int(step)
    try:
        shown = repr(step)[:60]
    except Exception:
        shown = "?"
    warn_once(
        "step-type",
        f"mindspeed-prof: step={shown} ({type(step).__name__}) is not an integer: steps are "
        "int, a numpy integer or a 0-d integer tensor; hooks given such a step do nothing "
        "(said once)",
    )
    return None


def stage_step(
    step: object, current: int | None, warn_once: Callable[[str, str], None]
) -> int | None:
    """A stage hook's step: ``current`` (the step under way) for None or no integer."""
    given = None if step is None else as_step(step, warn_once)
    return current if given is None else given
