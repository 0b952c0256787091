"""Testing many rows at once (every stage on every rank), so that asking about more rows does
not name more healthy ones by chance:

- ``holm``: Holm-Bonferroni, the chance of naming any healthy row at most the family's level
  whatever the others do (the straggler and growth rules: each name is a claim about a rank);
- ``benjamini_hochberg``: the expected share of healthy rows among those named at most the
  level; when every row is healthy that is again the chance of naming any, and a change that
  moves many rows at once (a stage slower on every rank) needs a smaller p of none of them
  (``compare``'s gate: it fails a run, then lists what moved).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["benjamini_hochberg", "holm"]


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which of ``p_values`` are rejected at family-wise level ``alpha`` (Holm's step-down:
    the k-th smallest against ``alpha / (m - k)``, stopping at the first that is not)."""
    m = len(p_values)
    out = [False] * m
    for k, i in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        if p_values[i] > alpha / (m - k):
            break
        out[i] = True
    return out


def benjamini_hochberg(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Which of ``p_values`` are rejected at false discovery rate ``alpha`` (the step-up: the
    ``k`` smallest, for the largest ``k`` whose k-th smallest is at most ``alpha * k / m``)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    # the last threshold is alpha itself (alpha * m / m can round below it, and below Holm's)
    cut = max(
        (
            k + 1
            for k, i in enumerate(order)
            if p_values[i] <= (alpha * (k + 1) / m if k + 1 < m else alpha)
        ),
        default=0,
    )
    out = [False] * m
    for i in order[:cut]:
        out[i] = True
    return out
