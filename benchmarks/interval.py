"""A median and its distribution-free 95% interval, for figures measured on a noisy machine.

The interval is the order-statistic one: with ``n`` values sorted, ``[x(k), x(n-k+1)]`` holds
the true median with probability ``1 - 2 P(Binomial(n, 1/2) < k)``, the largest ``k`` that keeps
that at or above 95%. It assumes nothing of the values' distribution (another process's load
makes it skewed and heavy-tailed), only that the blocks are independent draws.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["median_ci"]


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(median, low, high)`` of ``values``; low and high are the smallest and largest value
    when there are too few values for an interval of that confidence (fewer than 6 at 95%)."""
    if not values:
        raise ValueError("median_ci of no values")
    xs = sorted(values)
    n = len(xs)
    alpha = 1.0 - confidence
    k, below = 0, 0.0  # below: P(Binomial(n, 1/2) < k + 1) as k grows
    while k < n // 2:
        below += math.comb(n, k) / 2.0**n
        if 2 * below > alpha:
            break
        k += 1
    if k == 0:
        return statistics.median(xs), xs[0], xs[-1]
    return statistics.median(xs), xs[k - 1], xs[n - k]
