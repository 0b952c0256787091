"""Robust location and spread: the median, the median absolute deviation (MAD) as a standard
deviation, and a two-way table's median polish (Tukey): what one-off stalls, a slow step on
every rank and a page fault do not move."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["MAD_SD", "median_polish", "normal_sf", "robust_sd"]

#: The MAD times this estimates the standard deviation of normal noise.
MAD_SD = 1.4826


def robust_sd(values: Sequence[float], center: float | None = None) -> float:
    """``MAD_SD`` times the median absolute deviation of ``values`` from ``center`` (default:
    their median); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mid = statistics.median(values) if center is None else center
    return MAD_SD * statistics.median(abs(v - mid) for v in values)


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def median_polish(
    table: Sequence[Sequence[float | None]], sweeps: int = 8
) -> tuple[float, list[float], list[float], list[list[float | None]]]:
    """Tukey's median polish of ``table`` (rows by columns, None where a cell is missing):
    ``(overall, row effects, column effects, residuals)`` with every cell equal to overall +
    its row's effect + its column's effect + its residual. Row and column effects are medians,
    so one cell far off (a stall) stays in its residual and moves no effect."""
    width = max((len(r) for r in table), default=0)
    res: list[list[float | None]] = [[*row, *([None] * (width - len(row)))] for row in table]
    rows, cols, overall = [0.0] * len(res), [0.0] * width, 0.0
    for _ in range(sweeps):
        for i, row in enumerate(res):
            m = _median_of(row)
            rows[i] += m
            res[i] = [None if v is None else v - m for v in row]
        m = statistics.median(cols) if cols else 0.0
        overall, cols = overall + m, [c - m for c in cols]
        for j in range(width):
            m = _median_of([row[j] for row in res])
            cols[j] += m
            for row in res:
                v = row[j]
                row[j] = None if v is None else v - m
        m = statistics.median(rows) if rows else 0.0
        overall, rows = overall + m, [r - m for r in rows]
    return overall, rows, cols, res


def _median_of(cells: Sequence[float | None]) -> float:
    """The median of the cells that are there (0 where none is)."""
    there = [v for v in cells if v is not None]
    return statistics.median(there) if there else 0.0
