"""A rank-based trend in a quantity's own values: the Mann-Kendall test (is there a monotonic
trend, and how sure) and the Theil-Sen slope (how steep, robust to outliers). Pure; for the
judgement layer to share (stage time growth reads the same)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Trend", "mann_kendall", "theil_sen", "trend"]


class Trend(NamedTuple):
    """``slope`` (Theil-Sen, y per x), ``p_value`` (Mann-Kendall, two-sided), ``n`` points,
    ``s`` the Mann-Kendall statistic (> 0: rising)."""

    slope: float
    p_value: float
    n: int
    s: int


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The median of the slopes between every two points of distinct x (0.0 for none)."""
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i])
        for i in range(len(xs))
        for j in range(i + 1, len(xs))
        if xs[j] != xs[i]
    ]
    return statistics.median(slopes) if slopes else 0.0


def mann_kendall(ys: Sequence[float]) -> tuple[int, float]:
    """The statistic S (pairs rising less pairs falling, in order) and its two-sided p-value
    under no trend: the normal approximation with ties corrected and a continuity
    correction (p 1.0 for fewer than 3 values)."""
    n = len(ys)
    s = sum((ys[j] > ys[i]) - (ys[j] < ys[i]) for i in range(n) for j in range(i + 1, n))
    if n < 3:
        return s, 1.0
    ties = [c for c in _counts(ys) if c > 1]
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 18
    if var <= 0:
        return s, 1.0
    z = (s - math.copysign(1, s)) / math.sqrt(var) if s else 0.0
    return s, math.erfc(abs(z) / math.sqrt(2))


def trend(xs: Sequence[float], ys: Sequence[float]) -> Trend:
    """Mann-Kendall on ``ys`` in the order of ``xs``, and the Theil-Sen slope."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    x, y = [xs[i] for i in order], [ys[i] for i in order]
    s, p = mann_kendall(y)
    return Trend(theil_sen(x, y), p, len(y), s)


def _counts(ys: Sequence[float]) -> list[int]:
    seen: dict[float, int] = {}
    for y in ys:
        seen[y] = seen.get(y, 0) + 1
    return list(seen.values())
