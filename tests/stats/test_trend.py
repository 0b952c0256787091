"""The trend test and slope: exact p-values against enumeration, the slope of a line, and what
noise and one-off stalls do not do."""

from __future__ import annotations

import itertools
import math
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.stats.trend import blocks, mann_kendall, theil_sen, trend


def _enumerated(ys: list[float]) -> tuple[float, float]:
    """P(S >= s) and P(S <= s) over every ordering of ``ys`` (no ties)."""
    n = len(ys)

    def s_of(seq: tuple[float, ...]) -> int:
        return sum((seq[j] > seq[i]) - (seq[j] < seq[i]) for i in range(n) for j in range(i + 1, n))

    s = s_of(tuple(ys))
    all_s = [s_of(p) for p in itertools.permutations(ys)]
    return (
        sum(x >= s for x in all_s) / len(all_s),
        sum(x <= s for x in all_s) / len(all_s),
    )


@given(st.lists(st.integers(-1000, 1000), min_size=3, max_size=7, unique=True))
@settings(max_examples=60, deadline=None)
def test_exact_p_values_equal_enumeration(ys: list[int]) -> None:
    values = [float(y) for y in ys]
    _, up, down = mann_kendall(values)
    want_up, want_down = _enumerated(values)
    assert math.isclose(up, want_up, rel_tol=1e-12)
    assert math.isclose(down, want_down, rel_tol=1e-12)


@given(
    st.floats(-50, 50),
    st.floats(-1000, 1000),
    st.integers(2, 40),
)
def test_the_slope_of_a_line_is_its_slope(slope: float, at0: float, n: int) -> None:
    xs = [float(x) for x in range(1, n + 1)]
    got, intercept = theil_sen(xs, [at0 + slope * x for x in xs])
    assert math.isclose(got, slope, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(intercept, at0, rel_tol=1e-9, abs_tol=1e-6)


@given(
    st.lists(st.floats(-1, 1), min_size=8, max_size=30),
    st.integers(0, 29),
    st.floats(10, 1000),
)
def test_one_stall_moves_neither_the_slope_much_nor_makes_a_constant_grow(
    noise: list[float], where: int, stall: float
) -> None:
    """A constant stage with bounded noise and one stall anywhere: the slope stays within the
    noise's range per step, and no rise is significant at 1%."""
    ys = [10.0 + e for e in noise]
    ys[where % len(ys)] += stall
    t = trend(range(len(ys)), ys)
    assert abs(t.slope) <= 2.0 / (len(ys) / 4)  # at most the noise's range over a quarter
    assert t.p_up > 0.01 or abs(t.slope) < 0.5


def test_a_monotone_rise_over_nine_steps_is_significant_and_four_steps_never_are() -> None:
    assert trend(range(1, 10), [10 + 6 * i for i in range(9)]).p_up < 1e-5
    assert trend(range(1, 5), [10, 11, 12, 13]).p_up > 0.04  # 1/24: no test at 1% can pass
    assert trend(range(1, 10), [10 + 6 * i for i in range(9)]).p_down == 1.0


def test_ties_take_the_normal_approximation_and_a_flat_series_has_no_trend() -> None:
    s, up, down = mann_kendall([5.0] * 10)
    assert (s, up, down) == (0, 1.0, 1.0)
    s, up, _ = mann_kendall([1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    assert s == 27 and up < 0.001


@given(st.integers(201, 2000))
@settings(max_examples=20, deadline=None)
def test_long_series_are_cut_into_blocks_and_keep_their_slope(n: int) -> None:
    xs = [float(x) for x in range(n)]
    bx, by = blocks(xs, [3.0 * x for x in xs])
    assert len(bx) == 200
    assert all(math.isclose(y, 3.0 * x) for x, y in zip(bx, by))
    t = trend(xs, [3.0 * x + 1 for x in xs])
    assert math.isclose(t.slope, 3.0) and t.n == 200 and t.p_up < 1e-9


_FINITE = st.floats(-1e6, 1e6, allow_nan=False)


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.one_of(_FINITE, st.integers(-5, 5))),
        min_size=1,
        max_size=60,
    )
)
@settings(max_examples=80, deadline=None)
def test_s_and_the_slope_are_exactly_their_definitions_over_every_pair(
    points: list[tuple[int, float]],
) -> None:
    """Kendall's S and the Theil-Sen slope, taken in numpy over every pair, are the very
    numbers the pair-by-pair definitions give (ties in x and in y, repeated points)."""
    xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
    n = len(ys)
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if n >= 3:
        s, *_ = mann_kendall(ys)
        assert s == sum((ys[j] > ys[i]) - (ys[j] < ys[i]) for i, j in pairs)
    slopes = [(ys[j] - ys[i]) / (xs[j] - xs[i]) for i, j in pairs if xs[j] != xs[i]]
    slope = statistics.median(slopes) if slopes else 0.0
    assert theil_sen(xs, ys) == (slope, statistics.median(y - slope * x for x, y in zip(xs, ys)))
