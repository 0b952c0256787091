"""Robust spread and the median polish: one far cell moves no effect."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.stats.robust import median_polish, normal_sf, robust_sd


def test_robust_sd_is_the_standard_deviation_of_normal_noise_and_ignores_an_outlier() -> None:
    # the quartiles of N(0, 1) are +-0.6745: their MAD times 1.4826 is 1
    assert math.isclose(robust_sd([-0.6745, 0.0, 0.6745]), 1.0, rel_tol=1e-3)
    assert robust_sd([1.0, 1.0, 1.0, 1000.0]) == 0.0
    assert robust_sd([3.0]) == 0.0


def test_normal_sf() -> None:
    assert math.isclose(normal_sf(0.0), 0.5)
    assert math.isclose(normal_sf(1.959964), 0.025, rel_tol=1e-5)


@given(
    st.lists(st.floats(-100, 100), min_size=3, max_size=6),
    st.lists(st.floats(-100, 100), min_size=3, max_size=8),
    st.floats(-1000, 1000),
)
def test_an_additive_table_is_its_effects_with_no_residual(
    rows: list[float], cols: list[float], overall: float
) -> None:
    table = [[overall + r + c for c in cols] for r in rows]
    m, re, ce, res = median_polish(table)
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            cell = res[i][j]
            assert cell is not None
            assert math.isclose(m + re[i] + ce[j] + cell, overall + r + c, abs_tol=1e-6)
            assert abs(cell) < 1e-6


def test_a_stall_stays_in_its_residual() -> None:
    table = [[10.0, 10.0, 10.0, 10.0, 10.0], [10.0, 10.0, 90.0, 10.0, 10.0], [10.0] * 5]
    _, rows, cols, res = median_polish(table)
    assert rows == [0.0, 0.0, 0.0] and cols == [0.0] * 5
    assert res[1][2] == 80.0


def test_missing_cells_are_left_out() -> None:
    m, rows, cols, res = median_polish([[1.0, None, 3.0], [2.0, 2.0]])
    assert res[0][1] is None and res[1][2] is None
    assert len(cols) == 3
