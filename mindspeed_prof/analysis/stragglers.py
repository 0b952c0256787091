"""Stragglers: a rank slower than the other ranks at the same stage (or custom range) of a step.

Each rank is measured against the median of the *other* ranks (a median that counts the rank
itself can never be passed twice over with two ranks), and a difference is noise unless it is
at least ``noise_ms`` and ``NOISE_SHARE`` of the step: a 1 ms wobble of a 0.4 ms range, or of a
one-minute step, names nobody.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Straggler

__all__ = ["DEFAULT_NOISE_MS", "NOISE_SHARE", "find_stragglers", "noise_floor"]

#: A difference under this many milliseconds is noise.
DEFAULT_NOISE_MS = 1.0
#: A difference under this share of the step is noise.
NOISE_SHARE = 0.01


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


def find_stragglers(ranges: list[Range], kind: str, margin: float,
                    noise_ms: float = DEFAULT_NOISE_MS) -> list[Straggler]:
    """Ranks whose ``kind`` (``stage`` or ``range``) time in a step exceeds the median of the
    other ranks by ``margin`` and by more than the noise floor; most behind first (by the time
    lost, then the ratio)."""
    per: dict[tuple[str, int], dict[tuple[int | None, str], float]] = defaultdict(
        lambda: defaultdict(float))
    for r in ranges:
        if r.kind == kind and r.step is not None:
            per[(r.name, r.step)][(r.rank, r.source)] += r.dur / 1000.0
    steps = step_times(ranges)
    out = []
    for (name, step), by_rank in per.items():
        if len(by_rank) < 2:
            continue
        floor = noise_floor(noise_ms, steps.get(step))
        for who, ms in by_rank.items():
            others = statistics.median(v for k, v in by_rank.items() if k != who)
            times = ratio(ms, others, None)
            if times is not None and ms > others * (1 + margin) and ms - others >= floor:
                out.append(Straggler(kind=kind, name=name, step=step, rank=who[0],
                                     source=who[1], ms=ms, median_ms=others, ratio=times,
                                     excess_ms=ms - others))
    return sorted(out, key=lambda s: (-s.excess_ms, -s.ratio))
