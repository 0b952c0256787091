"""Pure decisions for a window over decode iterations inside one stage (no torch, no clock).

A rollout stage runs many decode iterations; ``prof.iteration(i)`` marks each. An
``IterationWindow`` captures iterations ``[first, first + count)`` of each execution of
``stage`` inside the plan's steps: the capture starts when the first of them begins and stops
when the last of them ends, not at the stage's edges. ``decide`` is its transition table, in
the spirit of ``torch.profiler.schedule``: a phase and an event in, the next phase and what to
do out. The ``Scheduler`` (``plan.py``) turns the verbs into ``Start``/``Stop``.

=========== =============================== ============ =======
phase       event                           next phase   verb
=========== =============================== ============ =======
any         stage_start (a target stage)    ARMED        -
ARMED       iteration_start, i in window    CAPTURING    start
ARMED       iteration_start, i past window  DONE         -
CAPTURING   iteration_end, i >= last        DONE         stop
CAPTURING   iteration_start, i past window  DONE         stop
CAPTURING   stage_end                       IDLE         stop
other       stage_end                       IDLE         -
=========== =============================== ============ =======

Iterations are numbered by the trainer (any integers, in order, with gaps allowed): a window
captures exactly the marked iterations inside it. An iteration whose end mark is missing is
closed by the next iteration's start past the window, or by the stage's end.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Literal

__all__ = ["Event", "IterationWindow", "Phase", "Verb", "decide"]

#: What the trainer did.
Event = Literal["stage_start", "stage_end", "iteration_start", "iteration_end"]
#: What the capture does about it.
Verb = Literal["start", "stop"]


class Phase(Enum):
    IDLE = "idle"  # outside a target stage execution
    ARMED = "armed"  # inside one, before the window
    CAPTURING = "capturing"  # inside the window
    DONE = "done"  # past the window, until the stage ends


@dataclass(frozen=True)
class IterationWindow:
    """Iterations ``[first, first + count)`` of each execution of ``stage``."""

    first: int
    count: int
    stage: str = "actor_generate"

    @property
    def end(self) -> int:
        """The first iteration past the window."""
        return self.first + self.count

    @property
    def last(self) -> int:
        return self.end - 1

    def __contains__(self, iteration: object) -> bool:
        return isinstance(iteration, int) and self.first <= iteration < self.end


def decide(
    window: IterationWindow, phase: Phase, event: Event, iteration: int | None = None
) -> tuple[Phase, Verb | None]:
    """The next phase and the verb (``"start"``, ``"stop"`` or None) for ``event``:
    ``stage_start``, ``stage_end``, ``iteration_start`` or ``iteration_end`` (with its
    ``iteration``)."""
    if event == "stage_start":
        return Phase.ARMED, ("stop" if phase is Phase.CAPTURING else None)
    if event == "stage_end":
        return Phase.IDLE, ("stop" if phase is Phase.CAPTURING else None)
    if iteration is None:
        return phase, None
    if event == "iteration_start":
        if phase is Phase.ARMED and iteration in window:
            return Phase.CAPTURING, "start"
        if phase in (Phase.ARMED, Phase.CAPTURING) and iteration >= window.end:
            return Phase.DONE, ("stop" if phase is Phase.CAPTURING else None)
        return phase, None
    if event == "iteration_end" and phase is Phase.CAPTURING and iteration >= window.last:
        return Phase.DONE, "stop"
    return phase, None
