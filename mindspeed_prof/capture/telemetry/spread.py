"""``across_ranks``: every rank's ``prof.metrics()`` into one flat dict, per figure its max,
median and (for times) the slowest rank, so a straggler shows in the driver's own tracker.

Pure; the per-rank dicts come from wherever the trainer gathers them (a collective it already
runs on rank 0, ``mindspeed_prof.ray.gather_metrics`` on a Ray driver).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

__all__ = ["across_ranks"]


def across_ranks(
    per_rank: Mapping[int, Mapping[str, float]] | Sequence[Mapping[str, float]],
) -> dict[str, float]:
    """``{<name>/max, <name>/median}`` for every name any rank reports, and for times (names
    ending ``/ms``) ``<name>/slowest_rank`` (the lowest rank among equals); ``prof/ranks``: how
    many ranks reported. A sequence is indexed by rank (``all_gather_object``'s list)."""
    ranks = dict(per_rank) if isinstance(per_rank, Mapping) else dict(enumerate(per_rank))
    by_name: dict[str, list[tuple[float, int]]] = {}
    for rank in sorted(ranks):
        for name, value in ranks[rank].items():
            by_name.setdefault(name, []).append((float(value), rank))
    out: dict[str, float] = {"prof/ranks": float(sum(1 for m in ranks.values() if m))}
    for name in sorted(by_name):
        seen = by_name[name]
        top, slowest = max(seen, key=lambda vr: (vr[0], -vr[1]))
        out[f"{name}/max"] = top
        out[f"{name}/median"] = float(statistics.median(v for v, _ in seen))
        if name.endswith("/ms"):
            out[f"{name}/slowest_rank"] = float(slowest)
    return out
