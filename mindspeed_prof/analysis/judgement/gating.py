"""A step's time is the time of the rank that gates it: in synchronous RL every rank waits for
the slowest before the next step, so the step the job lived is the longest of its ranks'. The
spread over ranks stands beside it (the fastest rank's step), with the rank that gated most
steps."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.analysis.judgement.cells import CellCols, Cells, who_order
from mindspeed_prof.analysis.readers.range_cols import distinct
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Row

if TYPE_CHECKING:  # numpy is imported where a pass runs
    import numpy as np

__all__ = ["TIE_MS", "Gates", "StepTime", "gates", "step_time"]

#: Steps this close (a microsecond) took as long: their ranks gate it together.
TIE_MS = 1e-3


class StepTime(Row, kw_only=True):
    """The step as the job lived it: each step takes its slowest rank's time (every rank waits
    for it). ``median_ms`` of those steps, the fastest and slowest of them, ``spread`` ((max -
    min) / median), ``steps`` and ``ranks`` counted; beside it, over ranks: ``fastest_ms``
    (the median over steps of the fastest rank's step), ``rank_spread`` (the median over steps
    of (slowest - fastest) / slowest), and ``gated_by`` (with ``gated_source``), the rank that
    was slowest in ``gated`` of the steps, the most (None, 0: one rank; ``tied``: how many
    ranks were slowest in that many steps, ``gated_by`` None where they are several)."""

    median_ms: float
    min_ms: float
    max_ms: float
    spread: float
    steps: int
    ranks: int
    fastest_ms: float | None = None
    rank_spread: float | None = None
    gated_by: int | None = None
    gated_source: str = ""
    gated: int = 0
    tied: int = 1


class Gates(NamedTuple):
    """The gated steps of some cells as columns: ``step`` codes (in the cells' order), the
    gating ``ms`` and the ``fastest`` rank's of each, ``gated`` (per rank code, the steps it
    gated: alone or tied) of ``cols``."""

    step: np.ndarray
    ms: np.ndarray
    fastest: np.ndarray
    gated: np.ndarray
    cols: CellCols

    def as_dict(self) -> dict[int, float]:
        """Per step, the gating rank's milliseconds."""
        steps = self.cols.steps
        return {steps[s]: ms for s, ms in zip(self.step.tolist(), self.ms.tolist())}


def gates(c: CellCols) -> Gates:
    """Per step the longest rank's milliseconds (of the finite), the fastest's, and per rank the
    steps it took within ``TIE_MS`` of the longest (a tie: a clock's rounding)."""
    import numpy as np

    n = max(len(c.steps), 1)
    fin = np.isfinite(c.ms)
    most, fastest = np.full(n, -np.inf), np.full(n, np.inf)
    np.maximum.at(most, c.step[fin], c.ms[fin])
    np.minimum.at(fastest, c.step[fin], c.ms[fin])
    has = np.zeros(n, dtype=bool)
    has[c.step[fin]] = True
    codes, first = np.unique(c.step, return_index=True)
    order = codes[np.argsort(first, kind="stable")]
    order = order[has[order]]
    tied = fin & (c.ms >= most[c.step] - TIE_MS)
    count = np.bincount(c.who[tied], minlength=len(c.whos))
    return Gates(order, most[order], fastest[order], count, c)


def step_time(cells: Cells | CellCols) -> StepTime | None:
    """The step's time over the steps of ``cells`` (a step's milliseconds per rank): the
    median gated step, the fastest and slowest gated step, their spread, the fastest rank's
    step beside it and the rank that gated most steps; None without steps."""

    g = gates(cells if isinstance(cells, CellCols) else CellCols.of(cells))
    if not len(g.step):
        return None
    ms, fastest = g.ms.tolist(), g.fastest.tolist()
    median = statistics.median(ms)
    whos = distinct(g.cols.who).tolist()
    count = {g.cols.whos[w]: k for w, k in enumerate(g.gated.tolist()) if k}
    most = max(count.values())
    tied = sorted((w for w in count if count[w] == most), key=who_order)
    # a tie names the rank where the tied agree on it, and no capture's label
    top = (
        tied[0] if len(tied) == 1 else (tied[0][0] if len({w[0] for w in tied}) == 1 else None, "")
    )
    many = len(whos) > 1
    return StepTime(
        median_ms=median,
        min_ms=min(ms),
        max_ms=max(ms),
        spread=ratio(max(ms) - min(ms), median, 0.0),
        steps=len(ms),
        ranks=len(whos),
        fastest_ms=statistics.median(fastest) if many else None,
        rank_spread=(
            statistics.median(ratio(g - f, g, 0.0) for g, f in zip(ms, fastest)) if many else None
        ),
        gated_by=top[0] if many else None,
        gated_source=top[1] if many else "",
        gated=most if many else 0,
        tied=len(tied) if many else 1,
    )
