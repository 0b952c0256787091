"""A timeline's window: ``--steps`` and ``--detail`` parsed."""

from __future__ import annotations

import pytest

from mindspeed_prof.analysis.timeline.window import StepWindow, parse_ranks, parse_steps


def test_parse_steps_and_ranks() -> None:
    assert 2 in parse_steps("2:4") and 3 in parse_steps("2:4") and 4 not in parse_steps("2:4")
    assert 1 not in parse_steps("2:") and 10**6 in parse_steps("2:")
    assert 5 in parse_steps("5") and 6 not in parse_steps("5")
    assert parse_ranks("0,3,8-10") == {0, 3, 8, 9, 10} and parse_ranks("all") is None
    for bad in ("x", "4:2", "1:2:3"):
        with pytest.raises(ValueError, match="--steps"):
            parse_steps(bad)
    with pytest.raises(ValueError, match="--detail"):
        parse_ranks("a-b")


def test_parse_steps_edges() -> None:
    """One step is ``A:A+1``; either side may be left open; ``A:A`` is empty and refused; what
    is not a step number is in no window."""
    assert parse_steps("5") == StepWindow(5, 6) and 4 not in parse_steps("5")
    assert parse_steps(":3") == StepWindow(None, 3) and parse_steps("2:") == StepWindow(2, None)
    with pytest.raises(ValueError, match="B must be greater than A"):
        parse_steps("2:2")
    assert None not in parse_steps("2:4") and "2" not in parse_steps("2:4")
    assert None not in StepWindow()
