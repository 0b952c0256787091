"""The one rule that says a rank is slow: a rank behind the other ranks at one row (a stage, a
custom range, the device's compute) consistently, by more than the row's own noise.

Per step, a rank's lag is its time less the median of the *other* ranks' (a median that
counts the rank itself can never be passed twice over with two ranks). Its cost is the median
of its lags over the steps compared; its consistency is a low order statistic of them, the
lag it keeps in nearly every step (``least_ms``: the smallest of its lags once one step in
four, rounded down, is let off; over four steps or fewer, the smallest). A rank slowed in
three steps of four by the machine is not behind in the fourth; a straggler that also
stalled once keeps its lag in every other step.

The noise is the row's step-to-step spread: the robust standard deviation (MAD) of the cells
once each rank's and each step's typical time is taken out (a median polish), grown to the
noise of one lag against the others' median. A rank is named (``consistent``) only when all
of these hold:

- ``least_ms`` is over the floor (``--noise-ms``, 1% of the step) and over ``margin``
  (``--margin``) of the other ranks' time: a real but negligible lag names nobody;
- it rests on at least ``MIN_STEPS`` steps;
- lags that consistent are unlikely from noise alone, by either of two tests (``p``: twice
  the smaller of their p-values), at ``ALPHA`` over every rank and row that gets this far
  (Holm's correction: more ranks and stages do not mean more false alarms):
  - against the row's noise, where ``least_ms`` is at least ``NOISE_TIMES`` it: the
    binomial chance of that many lags over ``least_ms``, each by Student's t over the
    noise's degrees of freedom (a few steps suffice for a lag far over the noise);
  - by their signs alone: the chance of the rank being behind in that many of its steps
    if each were a coin's toss (enough steps tell a lag that moves with the machine's load
    from noise, which measures it as noise).

Everything else is a one-off: the largest single step behind (``worst``) is still said, as
such.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping

import msgspec

from mindspeed_prof.analysis.judgement.cells import Cells, Who, who_order
from mindspeed_prof.analysis.judgement.noise import ALPHA, MIN_STEPS, noise_floor
from mindspeed_prof.analysis.rows import Row, Straggler, StragglerKind
from mindspeed_prof.stats.distributions import t_sf
from mindspeed_prof.stats.multiple import holm
from mindspeed_prof.stats.robust import median_polish, robust_sd

__all__ = ["NOISE_TIMES", "WAITS", "Lag", "is_wait", "lags", "least", "row_noise"]

#: Names of ranges where a rank waits for the others (collectives, barriers, waits): a rank
#: long there is the victim of the rank that arrives last, not the cause.
WAITS = re.compile(
    r"(?i)all[_ -]?reduce|all[_ -]?gather|reduce[_ -]?scatter|all[_ -]?to[_ -]?all|broadcast|"
    r"barrier|\bwait|\bsync|synchroni[sz]e|collective|nccl|hccl|\b(?:send|recv|isend|irecv)\b"
)
#: A lag must be at least this many times the noise of one lag.
NOISE_TIMES = 2.0
#: The median absolute deviation's efficiency against the standard deviation (normal noise).
MAD_EFFICIENCY = 0.37


def is_wait(name: str) -> bool:
    """Whether ``name`` is a range where ranks wait for each other (``WAITS``)."""
    return WAITS.search(name) is not None


class Lag(Row, kw_only=True):
    """One rank at one row (``kind`` ``stage``, ``range`` or ``device``; ``name``): over the
    ``compared`` steps where it and another rank ran it, ``lag_ms`` (the median of its time
    less the other ranks' median: what it costs a step), ``least_ms`` (the lag it keeps in
    nearly every step: ``judgement.lag``), ``others_ms`` (the median of the other ranks'
    time), ``behind`` (steps it was over the floor and the margin behind), ``noise_ms`` (the
    noise of one lag at this row), ``p`` (the chance of lags this consistent from noise alone;
    1 where it was not tested), and whether it is ``consistent`` (named: see
    ``judgement.lag``); ``worst``: its step furthest behind; ``short``: why it is not
    consistent ("" when it is)."""

    kind: StragglerKind
    name: str
    rank: int | None
    source: str = ""
    compared: int
    behind: int
    lag_ms: float
    least_ms: float
    others_ms: float
    noise_ms: float
    p: float = 1.0
    consistent: bool = False
    worst: Straggler
    short: str = ""

    @property
    def who(self) -> Who:
        return (self.rank, self.source)


def _table(cells: Cells) -> tuple[list[int], list[Who]]:
    steps = sorted(s for s, by in cells.items() if len(by) >= 2)
    return steps, sorted({w for s in steps for w in cells[s]}, key=who_order)


def _noise(cells: Cells, steps: list[int], whos: list[Who]) -> tuple[float, float]:
    """(The noise of one cell, its degrees of freedom): the robust standard deviation of the
    cells once each rank's and step's effect is polished out; the degrees of freedom are the
    residuals' less the effects fitted, times the MAD's efficiency (37%)."""
    table = [[cells[s].get(w) for s in steps] for w in whos]
    _, _, _, res = median_polish(table)
    left = [v for row in res for v in row if v is not None]
    df = max(len(left) - len(steps) - len(whos) + 1, 1)
    return robust_sd(left, 0.0), max(MAD_EFFICIENCY * df, 1.0)


def row_noise(cells: Cells) -> float:
    """The noise of one lag at a row (``judgement.lag``); 0 where fewer than two ranks ran it
    in a step."""
    steps, whos = _table(cells)
    if not steps or len(whos) < 2:
        return 0.0
    return _noise(cells, steps, whos)[0] * math.sqrt(1 + 1 / (len(whos) - 1))


def _row_lags(
    kind: StragglerKind, name: str, cells: Cells, floor: float, margin: float
) -> list[tuple[Lag, float, int]]:
    """Each rank's ``Lag`` at one row, not yet judged, with the noise's degrees of freedom and
    the steps it was behind at all; ``behind`` counts the steps it was over the floor and
    ``margin`` behind (the rows of the stragglers table)."""
    steps, whos = _table(cells)
    if not steps or len(whos) < 2:
        return []
    sd, df = _noise(cells, steps, whos)
    # one lag is a cell less the median of the others': its noise grows with fewer others
    sd_lag = sd * math.sqrt(1 + 1 / (len(whos) - 1))
    out = []
    for w in whos:
        rows: list[tuple[float, float, int]] = []  # its ms, the others' median, the step
        for s in steps:
            by = cells[s]
            if w in by:
                rows.append((by[w], statistics.median(v for k, v in by.items() if k != w), s))
        ms, o, s = max(rows, key=lambda r: (r[0] - r[1], -r[2]))
        worst = Straggler.of(kind, name, s, w, ms, o)
        lags_ = sorted(ms - o for ms, o, _ in rows)
        lag = Lag(
            kind=kind,
            name=name,
            rank=w[0],
            source=w[1],
            compared=len(rows),
            behind=sum(ms - o >= floor and ms > o * (1 + margin) for ms, o, _ in rows),
            lag_ms=statistics.median(lags_),
            least_ms=lags_[least(len(lags_)) - 1],
            others_ms=statistics.median(o for _, o, _ in rows),
            noise_ms=sd_lag,
            worst=worst,
        )
        out.append((lag, df, sum(x > 0 for x in lags_)))
    return out


def least(n: int) -> int:
    """Which lag, in order from the smallest, a rank must keep over ``n`` steps: one step in
    four (rounded down) is let off."""
    return 1 + (n - 1) // 4


def _short(g: Lag, floor: float, margin: float) -> str:
    """Why ``g`` cannot be named whatever the tests say ("" when it can)."""
    if g.compared < MIN_STEPS:
        return f"rests on {g.compared} step{'s' * (g.compared != 1)}"
    if g.least_ms < margin * g.others_ms:
        return "under the margin"
    if g.least_ms < floor:
        return f"under the noise floor in {least(g.compared)} of {g.compared} steps"
    return ""


def _tail(n: int, k: int, q: float) -> float:
    """P(at least ``k`` of ``n``) for a binomial of ``q``."""
    return math.fsum(math.comb(n, i) * q**i * (1 - q) ** (n - i) for i in range(k, n + 1))


def _p(g: Lag, df: float, ahead: int) -> float:
    """The chance of lags this consistent from noise alone: twice the smaller of the noise's
    test (``compared - least + 1`` lags of ``compared`` at least ``least_ms``, each a t tail;
    only where ``least_ms`` is ``NOISE_TIMES`` the noise) and the signs' (behind in ``ahead``
    of ``compared`` steps, each a coin's toss)."""
    n = g.compared
    by_noise = 1.0
    if g.least_ms >= NOISE_TIMES * g.noise_ms:
        q = t_sf(g.least_ms / g.noise_ms, df) if g.noise_ms > 0 else 0.0
        by_noise = _tail(n, n - least(n) + 1, q)
    return min(1.0, 2 * min(by_noise, _tail(n, ahead, 0.5)))


def lags(
    rows: Mapping[tuple[StragglerKind, str], Cells],
    step_ms: float | None,
    margin: float,
    noise_ms: float,
) -> list[Lag]:
    """Every rank at every row of ``rows`` with a lag over zero or a step over the floor,
    judged together (``judgement.lag``): consistent ones first, then by the lag, the worst
    step and the rank."""
    floor = noise_floor(noise_ms, step_ms)
    found = [
        (g, df, ahead)
        for (kind, name), cells in rows.items()
        for g, df, ahead in _row_lags(kind, name, cells, floor, margin)
        if g.lag_ms > 0 or g.worst.excess_ms >= floor
    ]
    shorts = [_short(g, floor, margin) for g, _, _ in found]
    tested = [i for i, short in enumerate(shorts) if not short]
    ps = {i: _p(*found[i]) for i in tested}
    cleared = dict(zip(tested, holm([ps[i] for i in tested], ALPHA), strict=True))
    out = []
    for i, (g, _, _) in enumerate(found):
        short = shorts[i] or ("" if cleared[i] else "within the noise")
        out.append(msgspec.structs.replace(g, p=ps.get(i, 1.0), consistent=not short, short=short))
    return sorted(
        out,
        key=lambda g: (
            not g.consistent,
            -g.lag_ms if g.consistent else -g.worst.excess_ms,
            g.kind,
            g.name,
            who_order(g.who),
        ),
    )
