"""``compare``'s gate: is run B slower than run A at a stage on a rank, beyond the step-to-step
noise of both runs?

Each run gives the stage's time in each of its steps. B is slower when both hold:

- the shift is large: its Hodges-Lehmann estimate (the median of B - A over every pair of
  steps) is over ``fraction`` of A's median and at least the noise floor;
- the shift is real: B's steps tend to be longer than A's, by a one-sided Mann-Whitney U test
  (exact over every split of the pooled steps, ties at mid-ranks, when there are at most
  ``EXACT_SPLITS`` splits; else its normal approximation with the tie correction), at
  ``ALPHA`` over every stage and range on every rank with enough steps for the test, whatever
  its shift (the Benjamini-Hochberg correction: a run with more stages and ranks does not fail
  more often by chance, and a stage slower on every rank is told from fewer steps than one
  row alone). Asking only about the rows whose shift looks large would pick the rows that
  chance moved most and then test them as if they were the only ones: two runs of one config
  failed 1 time in 4 that way.
  A one-off stall in either run moves one rank, not the test. Runs with too few steps for any
  split to be that rare (two and two steps: 1 in 6) cannot show a change: nothing is called
  slower, and ``compare`` says how many steps it needs.

A rank test needs no model of the noise: the same config run twice passes on a machine whose
steps stall now and then, a stage 30 ms slower in every one of six steps fails.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from mindspeed_prof.stats.multiple import benjamini_hochberg

__all__ = [
    "ALPHA",
    "EXACT_SPLITS",
    "Shift",
    "asked",
    "hodges_lehmann",
    "mann_whitney_greater",
    "shift",
    "slower",
    "steps_needed",
]

#: The chance, over every row the gate asks about, of calling a run slower that is not.
ALPHA = 0.05
#: Up to this many ways to split the pooled steps, the p-value is exact.
EXACT_SPLITS = 20_000


def _midranks(values: Sequence[float]) -> list[float]:
    """Each value's rank among ``values`` (1-based), ties at the mean of their ranks."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def mann_whitney_greater(a: Sequence[float], b: Sequence[float]) -> float:
    """The one-sided p-value that ``b`` is not stochastically greater than ``a``: the chance,
    with no difference between them, of a rank sum for ``b`` at least this high."""
    na, nb = len(a), len(b)
    if not na or not nb:
        return 1.0
    ranks = _midranks([*a, *b])
    observed = sum(ranks[na:])
    n = na + nb
    if math.comb(n, nb) <= EXACT_SPLITS:
        hits = total = 0
        for chosen in itertools.combinations(ranks, nb):
            total += 1
            hits += sum(chosen) >= observed - 1e-9
        return hits / total
    mean = nb * (n + 1) / 2
    ties = sum(c**3 - c for c in _counts(ranks))
    var = na * nb / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (observed - mean - 0.5) / math.sqrt(var)  # continuity-corrected
    return 0.5 * math.erfc(z / math.sqrt(2))


def _counts(ranks: list[float]) -> list[int]:
    out: dict[float, int] = {}
    for r in ranks:
        out[r] = out.get(r, 0) + 1
    return list(out.values())


def hodges_lehmann(a: Sequence[float], b: Sequence[float]) -> float:
    """The shift from ``a`` to ``b``: the median of ``y - x`` over every pair."""
    return statistics.median(y - x for x in a for y in b)


def _smallest_p(na: int, nb: int) -> float:
    """The smallest p-value the exact test can give ``na`` and ``nb`` steps."""
    return 1 / math.comb(na + nb, nb) if na and nb else 1.0


class Shift:
    """The gate's reading of one stage on one rank: ``shift_ms`` (Hodges-Lehmann), ``p``
    (one-sided, B slower) and whether the test could tell (``enough``: the runs hold enough
    steps for p to reach ``ALPHA``)."""

    __slots__ = ("enough", "p", "shift_ms")

    def __init__(self, a: Sequence[float], b: Sequence[float]) -> None:
        self.shift_ms = hodges_lehmann(a, b) if a and b else 0.0
        self.p = mann_whitney_greater(a, b)
        self.enough = _smallest_p(len(a), len(b)) <= ALPHA

    def large(self, base_ms: float, fraction: float, floor_ms: float) -> bool:
        """Over ``fraction`` of A's ``base_ms`` and at least ``floor_ms``."""
        return base_ms > 0 and self.shift_ms > fraction * base_ms and self.shift_ms >= floor_ms


def steps_needed(rows: int) -> int:
    """The steps each run needs for the test to find one changed row among ``rows`` asked
    (its smallest p-value at most ``ALPHA / rows``): 3 for one row, 6 for 32."""
    n = 1
    while _smallest_p(n, n) > ALPHA / max(rows, 1):
        n += 1
    return n


def shift(a: Sequence[float], b: Sequence[float]) -> Shift:
    """``Shift`` of per-step times ``a`` (the baseline) and ``b``."""
    return Shift(a, b)


def slower(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
    fraction: float,
    floor_ms: float,
    bases: Sequence[float] | None = None,
) -> list[bool]:
    """Which of the (A's steps, B's steps) pairs B runs slower: a large shift (``Shift.large``
    against ``bases``, by default A's median) that the rank test finds real at ``ALPHA`` over
    every pair it asks about (``asked``; Benjamini-Hochberg)."""
    shifts = [shift(a, b) for a, b in pairs]
    base = (
        list(bases) if bases is not None else [statistics.median(a) if a else 0.0 for a, _ in pairs]
    )
    ids = asked(pairs, fraction, floor_ms)
    real = benjamini_hochberg([shifts[i].p for i in ids], ALPHA)
    out = [False] * len(pairs)
    for i, ok in zip(ids, real, strict=True):
        out[i] = ok and shifts[i].large(base[i], fraction, floor_ms)
    return out


def asked(
    pairs: Sequence[tuple[Sequence[float], Sequence[float]]], fraction: float, floor_ms: float
) -> list[int]:
    """The pairs the gate tests together: both runs hold enough steps, and the steps of both
    together spread wide enough for some split of them to shift by over ``floor_ms`` and
    ``fraction`` of the smallest (else no split is large). That is read from the pooled steps
    alone, which, when nothing changed, say nothing of which run holds which step, so of the
    rank test's p: leaving such pairs out is no pick of the rows chance moved most
    (independent filtering), and it spares the others a larger family."""
    out = []
    for i, (a, b) in enumerate(pairs):
        if not a or not b or _smallest_p(len(a), len(b)) > ALPHA:
            continue
        lo, hi = min(*a, *b), max(*a, *b)
        if hi - lo >= floor_ms and hi - lo > fraction * lo:
            out.append(i)
    return out
