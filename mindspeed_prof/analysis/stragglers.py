"""Stragglers: a rank slower than the other ranks at the same stage (or custom range) of a step.

Each rank is measured against the median of the *other* ranks (a median that counts the rank
itself can never be passed twice over with two ranks), and a difference is noise unless it is
at least ``noise_ms`` and ``NOISE_SHARE`` of the step: a 1 ms wobble of a 0.4 ms range, or of a
one-minute step, names nobody.

A rank behind in one step is a one-off (a thread that waited for a core, a page fault); the
verdict names a straggler only when it is ``consistent`` (``behind``): behind in most of the
steps compared, or behind on average by far more than its own step-to-step spread
(``SPREAD_FACTOR`` standard deviations of its lag).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TypeVar

from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Row, Straggler, StragglerKind

__all__ = [
    "DEFAULT_NOISE_MS",
    "NOISE_SHARE",
    "SPREAD_FACTOR",
    "Behind",
    "behind",
    "find_stragglers",
    "medians_of_others",
    "noise_floor",
]

#: A difference under this many milliseconds is noise.
DEFAULT_NOISE_MS = 1.0
#: A difference under this share of the step is noise.
NOISE_SHARE = 0.01
#: Behind in few steps, a rank is still a straggler when its mean lag is over this many
#: standard deviations of its lag from step to step (and over the noise floor).
SPREAD_FACTOR = 3.0


K = TypeVar("K")


def medians_of_others(values: dict[K, float]) -> dict[K, float]:
    """For each key, the median of the *other* keys' values (two keys at least): one sort,
    then each median read off the sorted list with that key's value left out (not a median
    per key of a fresh list, which is quadratic in the ranks)."""
    order = sorted(values.items(), key=lambda kv: kv[1])
    v = [x for _, x in order]
    m = len(v) - 1  # the others
    out = {}
    for i, (key, _) in enumerate(order):
        lo = v[m // 2 - 1 if m // 2 - 1 < i else m // 2] if m % 2 == 0 else 0.0
        hi = v[m // 2 if m // 2 < i else m // 2 + 1]
        out[key] = hi if m % 2 else (lo + hi) / 2
    return out


def noise_floor(noise_ms: float, step_ms: float | None) -> float:
    """The smallest difference that is not noise, for a step of ``step_ms`` (None: unknown)."""
    return max(noise_ms, NOISE_SHARE * step_ms if step_ms else 0.0)


def step_times(ranges: list[Range]) -> dict[int, float]:
    """Per step: the median over ranks of the step's own length (ms)."""
    per: dict[int, list[float]] = defaultdict(list)
    for r in ranges:
        if r.kind == "step" and r.step is not None:
            per[r.step].append(r.dur / 1000.0)
    return {step: statistics.median(ms) for step, ms in per.items()}


def _per_step(
    ranges: list[Range], kind: StragglerKind
) -> dict[tuple[str, int], dict[tuple[int | None, str], float]]:
    """``kind`` time per (name, step) and (rank, source): several runs in a step add up."""
    per: dict[tuple[str, int], dict[tuple[int | None, str], float]] = defaultdict(
        lambda: defaultdict(float)
    )
    for r in ranges:
        if r.kind == kind and r.step is not None:
            per[(r.name, r.step)][(r.rank, r.source)] += r.dur / 1000.0
    return per


def find_stragglers(
    ranges: list[Range], kind: StragglerKind, margin: float, noise_ms: float = DEFAULT_NOISE_MS
) -> list[Straggler]:
    """Ranks whose ``kind`` (``stage`` or ``range``) time in a step exceeds the median of the
    other ranks by ``margin`` and by more than the noise floor; most behind first (by the time
    lost, then the ratio). One row per rank and step: one-offs included."""
    steps = step_times(ranges)
    out = []
    for (name, step), by_rank in _per_step(ranges, kind).items():
        if len(by_rank) < 2:
            continue
        floor = noise_floor(noise_ms, steps.get(step))
        medians = medians_of_others(by_rank)
        for who, ms in by_rank.items():
            others = medians[who]
            times = ratio(ms, others, None)
            if times is not None and ms > others * (1 + margin) and ms - others >= floor:
                out.append(
                    Straggler(
                        kind=kind,
                        name=name,
                        step=step,
                        rank=who[0],
                        source=who[1],
                        ms=ms,
                        median_ms=others,
                        ratio=times,
                        excess_ms=ms - others,
                    )
                )
    return sorted(out, key=lambda s: (-s.excess_ms, -s.ratio))


class Behind(Row, kw_only=True):
    """A rank behind the others at one stage (or range) in ``behind`` of the ``compared``
    steps (those where it and another rank ran it): its lag per compared step on average
    (``mean_excess_ms``, against the other ranks' median) and from step to step
    (``spread_ms``, the standard deviation; 0 for one step), its ``worst`` step, and whether
    that makes it ``consistent``: a straggler, not a one-off."""

    kind: StragglerKind
    name: str
    rank: int | None
    source: str = ""
    behind: int
    compared: int
    mean_excess_ms: float
    spread_ms: float
    worst: Straggler
    consistent: bool


def behind(
    ranges: list[Range], kind: StragglerKind, margin: float, noise_ms: float = DEFAULT_NOISE_MS
) -> list[Behind]:
    """Every rank behind in at least one step (``find_stragglers``), with how consistently:
    consistent ones first, then by the mean lag, then by the worst step's."""
    per = _per_step(ranges, kind)
    worst: dict[tuple[str, int | None, str], list[Straggler]] = defaultdict(list)
    for g in find_stragglers(ranges, kind, margin, noise_ms):
        worst[(g.name, g.rank, g.source)].append(g)
    lags: dict[tuple[str, int | None, str], list[float]] = defaultdict(list)
    for (name, _), by_rank in per.items():
        if len(by_rank) < 2 or not any((name, *who) in worst for who in by_rank):
            continue
        medians = medians_of_others(by_rank)
        for who, ms in by_rank.items():
            key = (name, who[0], who[1])
            if key in worst:
                lags[key].append(ms - medians[who])
    steps = step_times(ranges)
    floor = noise_floor(noise_ms, statistics.median(steps.values()) if steps else None)
    out = []
    for (name, rank, source), rows in worst.items():
        lag = lags[(name, rank, source)]
        mean = statistics.fmean(lag)
        spread = statistics.stdev(lag) if len(lag) > 1 else 0.0
        consistent = 2 * len(rows) > len(lag) or (
            len(lag) > 1 and mean >= floor and mean > SPREAD_FACTOR * spread
        )
        out.append(
            Behind(
                kind=kind,
                name=name,
                rank=rank,
                source=source,
                behind=len(rows),
                compared=len(lag),
                mean_excess_ms=mean,
                spread_ms=spread,
                worst=rows[0],
                consistent=consistent,
            )
        )
    return sorted(
        out,
        key=lambda b: (
            not b.consistent,
            -b.mean_excess_ms,
            -b.worst.excess_ms,
            b.name,
            rank_order(b.rank),
        ),
    )
