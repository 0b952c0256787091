"""Testing many rows at once (every stage on every rank): the Holm-Bonferroni correction, so
that the chance of naming any healthy row stays at the family's level however many are
tested."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["holm"]


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
