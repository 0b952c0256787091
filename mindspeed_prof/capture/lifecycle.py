"""A profiler's lifecycle: one ``State`` and the transitions allowed between them, as a table.

``DORMANT``: its step and stage hooks do nothing (a shared ``nullcontext``); an on-demand request
may wake it. ``LIVE``: its hooks run. ``CLOSED``: closed by its process; no more events.
``DISOWNED``: inherited by a forked child, off for good; it writes, closes and dumps nothing.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["Event", "State", "next_state"]


class State(Enum):
    DORMANT = "dormant"
    LIVE = "live"
    CLOSED = "closed"
    DISOWNED = "disowned"

    @property
    def open(self) -> bool:
        """Takes events and requests (not closed or disowned)."""
        return self is State.DORMANT or self is State.LIVE


class Event(Enum):
    WAKE = "wake"  # an on-demand request came: the hooks run from now on
    CLOSE = "close"  # ``close()`` in the process that made it
    DISOWN = "disown"  # a fork: the child's copy


_D, _L, _C, _X = State.DORMANT, State.LIVE, State.CLOSED, State.DISOWNED
#: Every allowed transition; any other is refused (the profiler does nothing).
TRANSITIONS: dict[tuple[State, Event], State] = {
    (_D, Event.WAKE): _L,
    (_D, Event.CLOSE): _C,
    (_L, Event.CLOSE): _C,
    (_D, Event.DISOWN): _X,
    (_L, Event.DISOWN): _X,
    (_C, Event.DISOWN): _X,
}


def next_state(state: State, event: Event) -> State | None:
    """The state ``event`` leads to from ``state``, or None where it is refused."""
    return TRANSITIONS.get((state, event))
