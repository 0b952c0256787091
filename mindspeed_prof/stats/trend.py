"""A trend over steps, judged as a rank statistic: the Mann-Kendall test (is the series
monotone beyond what noise gives?) and the Theil-Sen slope (the median of the slopes between
every pair of points: its ms per step). Neither is moved by a one-off stall, and a constant
series with noise has no trend whatever its first and last steps are.

Long series are cut to ``MOST_POINTS`` blocks (each its median) first: both statistics look at
every pair of points."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.stats.distributions import normal_sf
from mindspeed_prof.stats.robust import robust_sd

if TYPE_CHECKING:  # numpy is imported where a trend is taken
    import numpy as np

__all__ = ["EXACT_MOST", "MOST_POINTS", "Trend", "blocks", "mann_kendall", "theil_sen", "trend"]

#: At most this many points enter the test (a longer series is cut into as many blocks).
MOST_POINTS = 200
#: Up to this many points (and no ties) the p-value is exact; past it, the normal
#: approximation with the variance corrected for ties.
EXACT_MOST = 60


class Trend(NamedTuple):
    """``slope`` (Theil-Sen, per unit of x), ``intercept`` (the line's value at x = 0),
    ``p_up``/``p_down`` (one-sided Mann-Kendall p-values for a rise, a fall), ``n`` (the
    points tested), ``noise`` (the robust standard deviation of the points about the line)."""

    slope: float
    intercept: float
    p_up: float
    p_down: float
    n: int
    noise: float


@cache
def _inversions_cdf(n: int) -> tuple[float, ...]:
    """P(a random permutation of ``n`` has at most k inversions), k = 0 .. n(n-1)/2 (Mahonian
    numbers, by adding one element at a time)."""
    counts = [1]
    for m in range(2, n + 1):  # the m-th element adds 0 .. m-1 inversions
        prefix = [0]
        for c in counts:
            prefix.append(prefix[-1] + c)
        size = len(counts) + m - 1
        counts = [prefix[min(k + 1, len(counts))] - prefix[max(k - m + 1, 0)] for k in range(size)]
    total = math.factorial(n)
    out, run = [], 0
    for c in counts:
        run += c
        out.append(run / total)
    return tuple(out)


def mann_kendall(ys: Sequence[float]) -> tuple[int, float, float]:
    """``(S, p_up, p_down)``: Kendall's S (pairs that rise less pairs that fall) and the
    one-sided p-values of a rise and a fall under no trend; (0, 1, 1) under three points."""
    n = len(ys)
    if n < 3:
        return 0, 1.0, 1.0
    s, ties = 0, False
    for d in _rows_of_pairs(ys):  # pairs that rise less pairs that fall (NaN: neither)
        s += int((d > 0).sum()) - int((d < 0).sum())
        ties = ties or bool((d == 0).any())
    if n <= EXACT_MOST and not ties:
        cdf = _inversions_cdf(n)
        pairs = n * (n - 1) // 2
        k = (pairs - s) // 2  # inversions: pairs that fall
        return s, cdf[k], cdf[pairs - k]
    groups: dict[float, int] = {}
    for y in ys:
        groups[y] = groups.get(y, 0) + 1
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in groups.values())) / 18
    if var <= 0:
        return s, 1.0, 1.0
    sd = math.sqrt(var)
    return s, normal_sf((s - 1) / sd) if s > 0 else 1.0, normal_sf((-s - 1) / sd) if s < 0 else 1.0


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """``(slope, intercept)``: the median slope over pairs of points with different x, and the
    median of ``y - slope * x``; (0, median) where no two x differ."""
    import numpy as np

    slopes = [dy[dx != 0] / dx[dx != 0] for dx, dy in zip(_rows_of_pairs(xs), _rows_of_pairs(ys))]
    every = np.concatenate(slopes) if slopes else np.zeros(0)
    slope = float(np.median(every)) if len(every) else 0.0
    return slope, statistics.median(y - slope * x for x, y in zip(xs, ys))


def _rows_of_pairs(values: Sequence[float]) -> Iterator[np.ndarray]:
    """For each ``i``, ``values[j] - values[i]`` over ``j > i``: every pair, a row at a time in
    numpy (at ``MOST_POINTS``, 19,900 pairs: a Python loop over them was most of a trend's
    time; a row at a time holds no more than the pairs' slopes)."""
    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    for i in range(len(v) - 1):
        yield v[i + 1 :] - v[i]


def blocks(
    xs: Sequence[float], ys: Sequence[float], most: int = MOST_POINTS
) -> tuple[list[float], list[float]]:
    """``xs`` and ``ys`` cut into at most ``most`` consecutive blocks of equal size, each the
    median of its points (the series itself when it is short enough)."""
    n = len(xs)
    if n <= most:
        return list(xs), list(ys)
    edges = [round(i * n / most) for i in range(most + 1)]
    bx = [statistics.median(xs[a:b]) for a, b in zip(edges, edges[1:])]
    by = [statistics.median(ys[a:b]) for a, b in zip(edges, edges[1:])]
    return bx, by


def trend(xs: Sequence[float], ys: Sequence[float]) -> Trend:
    """The trend of ``ys`` over ``xs`` (sorted by x first)."""
    pairs = sorted(zip(xs, ys))
    px, py = blocks([p[0] for p in pairs], [p[1] for p in pairs])
    slope, intercept = theil_sen(px, py) if px else (0.0, 0.0)
    _, up, down = mann_kendall(py)
    noise = robust_sd([y - (intercept + slope * x) for x, y in zip(px, py)], 0.0)
    return Trend(slope, intercept, up, down, len(px), noise)
