"""``StepTotals``: what one step measured (stage, custom-range and counter figures) as it runs;
``StepRecord``: a finished step's figures, with their flat names (``prof/stage/<s>/ms``...).

Pure bookkeeping: the part feeds it, the sinks read records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["PREFIX", "StepRecord", "StepTotals", "mean_record"]

#: Every flat name starts here (a tracker shows them as one section).
PREFIX = "prof"
#: Distinct stage, range or counter names kept per step, at the most (a trainer that names
#: ranges after its samples must not grow memory without bound).
MAX_NAMES = 512


@dataclass
class StepRecord:
    """One step's figures: milliseconds per stage and custom range (summed over executions in
    the step), the step's own milliseconds, counters (summed) and distributions (n, mean,
    min, max)."""

    step: int
    step_ms: float | None = None
    stages: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, float] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)

    def flat(self) -> dict[str, float]:
        """``prof/step/ms``, ``prof/stage/<s>/ms``, ``prof/range/<r>/ms``, ``prof/count/<c>``."""
        out: dict[str, float] = {}
        if self.step_ms is not None:
            out[f"{PREFIX}/step/ms"] = self.step_ms
        for name, ms in self.stages.items():
            out[f"{PREFIX}/stage/{name}/ms"] = ms
        for name, ms in self.ranges.items():
            out[f"{PREFIX}/range/{name}/ms"] = ms
        for name, value in self.counts.items():
            out[f"{PREFIX}/count/{name}"] = value
        return out


class StepTotals:
    """The figures of the step under way; ``finish`` hands them over and starts afresh.

    Stage ends and counts outside a step count with the next step that ends."""

    def __init__(self) -> None:
        self._stages: dict[str, int] = {}
        self._counts: dict[str, float] = {}
        self._dists: dict[str, list[float]] = {}  # name -> [n, sum, min, max]

    def stage(self, name: str, took_ns: int) -> None:
        stages = self._stages
        if name in stages or len(stages) < MAX_NAMES:
            stages[name] = stages.get(name, 0) + took_ns

    def count(self, name: str, value: float | Sequence[float]) -> None:
        """A counter: a number adds up; a sequence joins the name's distribution."""
        if isinstance(value, (int, float)):
            counts = self._counts
            if name in counts or len(counts) < MAX_NAMES:
                counts[name] = counts.get(name, 0.0) + float(value)
            return
        values = [float(v) for v in value]
        if not values:
            return
        dist = self._dists.get(name)
        if dist is None:
            if len(self._dists) >= MAX_NAMES:
                return
            dist = self._dists[name] = [0.0, 0.0, values[0], values[0]]
        dist[0] += len(values)
        dist[1] += sum(values)
        dist[2] = min(dist[2], *values)
        dist[3] = max(dist[3], *values)

    def finish(self, step: int, step_ns: int | None, ranges_ns: dict[str, int]) -> StepRecord:
        """The step's record (``ranges_ns``: custom ranges' totals, taken by the caller)."""
        counts = dict(self._counts)
        for name, (n, total, low, high) in self._dists.items():
            counts.update(
                {f"{name}/n": n, f"{name}/mean": total / n, f"{name}/min": low, f"{name}/max": high}
            )
        record = StepRecord(
            step,
            None if step_ns is None else step_ns / 1e6,
            {k: v / 1e6 for k, v in self._stages.items()},
            {k: v / 1e6 for k, v in ranges_ns.items()},
            counts,
        )
        self.clear()
        return record

    def clear(self) -> None:
        self._stages, self._counts, self._dists = {}, {}, {}


def mean_record(records: Sequence[StepRecord]) -> StepRecord:
    """One record holding each figure's mean over ``records`` (over those that have it), at
    the last one's step: what an export every N steps sends."""
    last = records[-1]
    if len(records) == 1:
        return last

    def mean(parts: list[dict[str, float]]) -> dict[str, float]:
        sums: dict[str, list[float]] = {}
        for part in parts:
            for k, v in part.items():
                acc = sums.setdefault(k, [0.0, 0.0])
                acc[0] += v
                acc[1] += 1
        return {k: total / n for k, (total, n) in sums.items()}

    steps = [r.step_ms for r in records if r.step_ms is not None]
    return StepRecord(
        last.step,
        sum(steps) / len(steps) if steps else None,
        mean([r.stages for r in records]),
        mean([r.ranges for r in records]),
        mean([r.counts for r in records]),
    )
