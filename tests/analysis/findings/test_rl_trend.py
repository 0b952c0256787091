"""The rank-based trend: Theil-Sen's slope is a line's own and shrugs off an outlier;
Mann-Kendall's p-value is small for a steady rise, 1 for none, the same for a fall."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.findings.rl.trend import mann_kendall, theil_sen, trend

finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite, st.floats(-1e3, 1e3, allow_nan=False), st.integers(3, 20), st.integers(0, 19))
def test_theil_sen_is_the_lines_slope_whatever_one_outlier(a, b, n, at) -> None:
    xs = [float(i) for i in range(n)]
    ys = [a + b * x for x in xs]
    assert math.isclose(theil_sen(xs, ys), b, rel_tol=1e-6, abs_tol=1e-6 * (1 + abs(a)))
    if n >= 5:
        ys[at % n] += 1e9  # one wild point moves the median slope little
        assert abs(theil_sen(xs, ys) - b) <= abs(b) + 1e-6 * (1 + abs(a)) + 1e9 / (n - 1) / 2


@settings(max_examples=200, deadline=None)
@given(st.lists(finite, min_size=3, max_size=25))
def test_a_fall_mirrors_a_rise_and_p_is_a_probability(ys) -> None:
    s, p = mann_kendall(ys)
    s2, p2 = mann_kendall([-y for y in ys])
    assert s2 == -s and math.isclose(p, p2) and 0.0 <= p <= 1.0


def test_steady_rise_flat_and_the_known_values() -> None:
    s, p = mann_kendall([1, 2, 3, 4, 5])  # S = 10, var = 5*4*15/18, z = 9/sqrt(var)
    assert s == 10 and math.isclose(p, math.erfc(9 / math.sqrt(50 / 3) / math.sqrt(2)))
    assert p < 0.05
    assert mann_kendall([3.0] * 8) == (0, 1.0)
    assert mann_kendall([1, 2]) == (1, 1.0)
    t = trend([4.0, 1.0, 3.0, 2.0], [40.0, 10.0, 30.0, 20.0])  # sorted by x first
    assert (t.slope, t.n, t.s) == (10.0, 4, 6)
