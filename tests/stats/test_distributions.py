"""Tail probabilities against tabled values and closed forms."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.stats.distributions import normal_sf, t_sf


def test_normal_sf() -> None:
    assert math.isclose(normal_sf(0.0), 0.5)
    assert math.isclose(normal_sf(1.959964), 0.025, rel_tol=1e-5)


@pytest.mark.parametrize(
    ("t", "df", "p"),
    [
        # one-sided critical values from the t table
        (6.314, 1, 0.05),
        (2.920, 2, 0.05),
        (4.541, 3, 0.01),
        (3.747, 4, 0.01),
        (2.764, 10, 0.01),
        (3.551, 40, 0.0005),
        (1.645, 1e6, 0.05),
    ],
)
def test_t_sf_at_tabled_critical_values(t: float, df: float, p: float) -> None:
    assert math.isclose(t_sf(t, df), p, rel_tol=2e-3)


@given(st.floats(-50, 50), st.floats(0.5, 200))
def test_t_sf_is_a_tail_symmetric_about_zero(t: float, df: float) -> None:
    up = t_sf(t, df)
    assert 0.0 <= up <= 1.0
    assert math.isclose(up + t_sf(-t, df), 1.0, abs_tol=1e-12)


@given(st.floats(0, 1e6))
def test_with_one_degree_of_freedom_it_is_cauchy(t: float) -> None:
    assert math.isclose(t_sf(t, 1.0), 0.5 - math.atan(t) / math.pi, rel_tol=1e-9, abs_tol=1e-15)


def test_infinite_t() -> None:
    assert t_sf(math.inf, 3) == 0.0 and t_sf(-math.inf, 3) == 1.0
