"""The stragglers table: a rank slower than the others at the same stage (or custom range) in
one step.

Each rank is measured against the median of the *other* ranks (a median that counts the rank
itself can never be passed twice over with two ranks), and a difference is listed when it is
over ``--margin`` of that median and the noise floor (``judgement.noise``): a 1 ms wobble of a
0.4 ms range, or of a one-minute step, is not listed. A row is one step: one-offs included.
Which rank is *named* slow is ``judgement.lag``'s to say.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from mindspeed_prof.analysis.judgement.cells import by_name, ranked
from mindspeed_prof.analysis.judgement.judge import step_gates
from mindspeed_prof.analysis.judgement.noise import DEFAULT_NOISE_MS, noise_floor
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.rows import Straggler, StragglerKind

__all__ = ["find_stragglers", "medians_of_others"]

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


def find_stragglers(
    ranges: Sequence[Range], kind: StragglerKind, margin: float, noise_ms: float = DEFAULT_NOISE_MS
) -> list[Straggler]:
    """Ranks whose ``kind`` (``stage`` or ``range``) time in a step exceeds the median of the
    other ranks by ``margin`` and by more than the noise floor; most behind first (by the time
    lost, then the ratio). One row per rank and step: one-offs included."""
    if not ranked(ranges, kind):  # one rank: no step to compare ranks in
        return []
    steps = step_gates(ranges)
    out = []
    rows = by_name(ranges, kind)
    for name in rows:
        # the steps two ranks or more ran it: a dict per step only there
        for step, by_rank in rows.multi(name).items():
            floor = noise_floor(noise_ms, steps.get(step))
            medians = medians_of_others(by_rank)
            for who, ms in by_rank.items():
                others = medians[who]
                if others > 0 and ms > others * (1 + margin) and ms - others >= floor:
                    out.append(Straggler.of(kind, name, step, who, ms, others))
    return sorted(out, key=lambda s: (-s.excess_ms, -s.ratio))
