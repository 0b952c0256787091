"""A stage that grows with the step: a trend in the stage's own time on one rank, never a
change in its share of the step (a share moves whenever another stage does).

Per stage and rank, the stage's time per step is tested for a monotone rise (Mann-Kendall, a
rank statistic: one-off stalls and a slow first step do not make a trend) and its rise is
measured by the Theil-Sen slope (the median of the slopes between every pair of steps): the
ms per step said is that slope. A stage grows (``consistent``) only when all of these hold:

- the rise clears the noise at ``ALPHA`` over every stage and rank tested (Holm);
- it rests on at least ``MIN_TREND_STEPS`` steps (fewer cannot reach that level);
- the fitted rise from the first step to the last is over the floor and ``GROWTH_REL`` of
  where it started.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from mindspeed_prof.analysis.judgement.cells import CellCols, Cells, Rows, Who, who_order
from mindspeed_prof.analysis.judgement.noise import ALPHA, noise_floor
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.stats.multiple import holm
from mindspeed_prof.stats.trend import trend

__all__ = ["GROWTH_REL", "MIN_TREND_STEPS", "Growth", "growths"]

#: The fewest steps a trend is tested on (a rise over 7 steps in order is 1 in 5,040).
MIN_TREND_STEPS = 7
#: The rise from the first step to the last must be at least this share of where it started.
GROWTH_REL = 0.2


class Growth(Row, kw_only=True):
    """One stage's time on one rank over ``steps`` (first to last, ``n`` of them): the
    Theil-Sen ``slope_ms`` per step, the fitted time at the first and last step
    (``first_ms``, ``last_ms``) and its ``rise_ms``, ``p`` (Mann-Kendall, one-sided: a rise
    this ordered from noise alone), ``noise_ms`` (the robust spread about the fitted line),
    whether it is ``consistent`` (see ``judgement.growth``) and, when not, why (``short``)."""

    stage: str
    rank: int | None
    source: str = ""
    first_step: int
    last_step: int
    n: int
    slope_ms: float
    first_ms: float
    last_ms: float
    rise_ms: float
    p: float
    noise_ms: float
    consistent: bool = False
    short: str = ""

    @property
    def who(self) -> Who:
        return (self.rank, self.source)


def _growth(stage: str, who: Who, steps: list[int], ms: list[float]) -> Growth:
    t = trend([float(s) for s in steps], ms)
    first, last = t.intercept + t.slope * steps[0], t.intercept + t.slope * steps[-1]
    return Growth(
        stage=stage,
        rank=who[0],
        source=who[1],
        first_step=steps[0],
        last_step=steps[-1],
        n=len(steps),
        slope_ms=t.slope,
        first_ms=first,
        last_ms=last,
        rise_ms=last - first,
        p=t.p_up,
        noise_ms=t.noise,
    )


def _short(g: Growth, cleared: bool, floor: float) -> str:
    if g.n < MIN_TREND_STEPS:
        return f"rests on {g.n} steps"
    if g.rise_ms < floor:
        return "under the noise floor"
    if g.rise_ms < GROWTH_REL * max(g.first_ms, 0.0):
        return "under the margin"
    if not cleared:
        return "within the noise"
    return ""


def growths(stages: Mapping[str, Cells], step_ms: float | None, noise_ms: float) -> list[Growth]:
    """Every stage on every rank with three steps or more and a rise, judged together (those
    that grow first, by their rise); ``Rows`` are read as columns."""
    import numpy as np

    tested = []
    for stage in stages:
        c = stages.cols(stage) if isinstance(stages, Rows) else CellCols.of(stages[stage])
        codes, first = np.unique(c.who, return_index=True)
        for w in codes[np.argsort(first, kind="stable")].tolist():  # ranks as they first come
            mine = c.who == w
            if np.count_nonzero(mine) < 3:
                continue
            steps = [c.steps[s] for s in c.step[mine].tolist()]
            order = sorted(range(len(steps)), key=steps.__getitem__)
            ms = c.ms[mine].tolist()
            tested.append(
                _growth(stage, c.whos[w], [steps[i] for i in order], [ms[i] for i in order])
            )
    cleared = holm([g.p for g in tested], ALPHA)
    floor = noise_floor(noise_ms, step_ms)
    out = [
        msgspec.structs.replace(g, consistent=not short, short=short)
        for g, ok in zip(tested, cleared, strict=True)
        if g.slope_ms > 0
        for short in [_short(g, ok, floor)]
    ]
    return sorted(out, key=lambda g: (not g.consistent, -g.rise_ms, g.stage, who_order(g.who)))
