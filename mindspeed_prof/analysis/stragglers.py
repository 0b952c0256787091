"""Stragglers: a rank slower than the others at the same stage (or custom range) of a step."""

from __future__ import annotations

import statistics
from collections import defaultdict

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.rows import Straggler

__all__ = ["find_stragglers"]


def find_stragglers(ranges: list[Range], kind: str, margin: float) -> list[Straggler]:
    """Ranks whose ``kind`` (``stage`` or ``range``) time in a step exceeds the median over
    ranks by ``margin``, most behind first."""
    per: dict[tuple[str, int], dict[tuple[int | None, str], float]] = defaultdict(
        lambda: defaultdict(float))
    for r in ranges:
        if r.kind == kind and r.step is not None:
            per[(r.name, r.step)][(r.rank, r.source)] += r.dur / 1000.0
    out = []
    for (name, step), by_rank in per.items():
        if len(by_rank) < 2:
            continue
        median = statistics.median(by_rank.values())
        for (rank, source), ms in by_rank.items():
            if median > 0 and ms > median * (1 + margin):
                out.append(Straggler(kind=kind, name=name, step=step, rank=rank, source=source,
                                     ms=ms, median_ms=median, ratio=ms / median))
    return sorted(out, key=lambda s: -s.ratio)
