"""Holm's and Benjamini-Hochberg's corrections: their definitions; Holm never rejects less than
Bonferroni, Benjamini-Hochberg never less than Holm."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from mindspeed_prof.stats.multiple import benjamini_hochberg, holm


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


def test_benjamini_hochberg_steps_up() -> None:
    # the largest k with the k-th smallest p <= 0.05 k / m: one here, all four next
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.5], 0.05) == [True, False, False, False]
    assert benjamini_hochberg([0.01, 0.02, 0.03, 0.04], 0.05) == [True] * 4
    assert benjamini_hochberg([0.04] * 12, 0.05) == [True] * 12
    assert benjamini_hochberg([0.04] + [0.9] * 11, 0.05) == [False] * 12
    assert benjamini_hochberg([], 0.05) == []
    # the last threshold is alpha itself: 0.1716... * 6 / 6 rounds below it
    alpha = 0.17163394919924818
    assert alpha * 6 / 6 < alpha
    assert benjamini_hochberg([0.0] * 5 + [alpha], alpha) == [True] * 6


@given(st.lists(st.floats(0, 1), max_size=30), st.floats(0.001, 0.2))
@example([0.0] * 5 + [0.17163394919924818], 0.17163394919924818)  # CI found it
def test_benjamini_hochberg_takes_all_holm_takes_and_is_closed_downward(
    ps: list[float], alpha: float
) -> None:
    out = benjamini_hochberg(ps, alpha)
    for rejected, by_holm in zip(out, holm(ps, alpha)):
        assert rejected or not by_holm
    for p, rejected in zip(ps, out):
        if rejected:
            assert all(r for q, r in zip(ps, out) if q < p)
    # the definition: the count rejected is the largest k with the k-th smallest <= alpha k / m
    # (alpha itself at k = m)
    k, m = sum(out), len(ps)
    ranked = sorted(ps)

    def bound(j: int) -> float:
        return alpha if j == m else alpha * j / m

    assert all(ranked[j - 1] > bound(j) for j in range(k + 1, m + 1))
    assert k == 0 or ranked[k - 1] <= bound(k)
