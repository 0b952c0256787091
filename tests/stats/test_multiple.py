"""Holm's correction: its definition, and that it never rejects more than Bonferroni at the
smallest p-value nor less than Bonferroni overall."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.stats.multiple import holm


def test_holm_steps_down_and_stops() -> None:
    assert holm([0.01, 0.04, 0.03, 0.5], 0.05) == [True, False, False, False]
    assert holm([0.001, 0.012, 0.02], 0.05) == [True, True, True]
    assert holm([], 0.05) == []


@given(st.lists(st.floats(0, 1), max_size=30), st.floats(0.001, 0.2))
def test_holm_rejects_what_bonferroni_rejects_and_is_closed_downward(
    ps: list[float], alpha: float
) -> None:
    out = holm(ps, alpha)
    m = len(ps)
    for p, rejected in zip(ps, out):
        if p <= alpha / m:
            assert rejected
    # whatever is rejected, every smaller p-value is too
    for p, rejected in zip(ps, out):
        if rejected:
            assert all(r for q, r in zip(ps, out) if q < p)
