"""The profiler's lifecycle table: every transition allowed or refused, and the profiler
following it."""

from __future__ import annotations

from itertools import product
from pathlib import Path

import pytest

from mindspeed_prof.capture.lifecycle import TRANSITIONS, Event, State, next_state
from mindspeed_prof.capture.profiler import Profiler

D, L, C, X = State.DORMANT, State.LIVE, State.CLOSED, State.DISOWNED
W, CL, DI = Event.WAKE, Event.CLOSE, Event.DISOWN

EXPECTED: dict[tuple[State, Event], State | None] = {
    (D, W): L,
    (D, CL): C,
    (D, DI): X,
    (L, W): None,
    (L, CL): C,
    (L, DI): X,
    (C, W): None,
    (C, CL): None,
    (C, DI): X,
    (X, W): None,
    (X, CL): None,
    (X, DI): None,
}


@pytest.mark.parametrize(("state", "event"), list(product(State, Event)))
def test_every_transition_is_allowed_or_refused(state: State, event: Event) -> None:
    assert next_state(state, event) is EXPECTED[(state, event)]


def test_the_table_holds_only_allowed_transitions() -> None:
    assert len(EXPECTED) == len(State) * len(Event)
    assert {k: v for k, v in EXPECTED.items() if v is not None} == TRANSITIONS


def test_open_states() -> None:
    assert [s for s in State if s.open] == [D, L]


def test_profiler_follows_the_table(tmp_path: Path) -> None:
    dormant = Profiler.from_config({"profile_save_path": str(tmp_path), "on_demand": True}, rank=0)
    assert dormant._state is D
    dormant.wake()
    assert dormant._state is L and dormant._live
    dormant.wake()
    assert dormant._state is L
    dormant.close()
    assert dormant._state is C
    dormant.wake()  # refused: a closed profiler takes no request
    assert dormant._state is C and not dormant._live
    dormant.close()
    dormant.disown()
    assert dormant._state is X
    dormant.disown()
    assert dormant._state is X

    live = Profiler.from_config(
        {"profile_save_path": str(tmp_path), "flight_recorder_steps": 2}, rank=0
    )
    assert live._state is L
    live.disown()
    assert live._state is X and live.dump_flight() is None
    live.close()
    assert live._state is X
