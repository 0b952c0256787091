"""The one rule that says a rank is slow: a rank behind the other ranks at one row (a stage, a
custom range, the device's compute) consistently, by more than the row's own noise.

Per step, a rank's lag is its time less the median of the *other* ranks' (a median that
counts the rank itself can never be passed twice over with two ranks). The rank is behind by
the median of its lags over the steps compared: one-off stalls (a thread that waited for a
core, a page fault) move it little. That is judged against the row's noise: the step-to-step
spread of the same cells once each rank's and each step's typical time is taken out (a median
polish), the larger of its robust standard deviation and its plain one (few steps make the
robust one too small to trust, a stall makes the plain one large: either way the judgement
errs towards naming nobody). A rank is named (``consistent``) only when all of these hold:

- the lag is at least ``NOISE_TIMES`` the noise of one lag, and clears it as a test would:
  one-sided, Student's t over the noise's degrees of freedom, at ``ALPHA`` over every rank
  and row that gets this far (Holm's correction);
- the lag is over the floor (``--noise-ms``, 1% of the step) and ``margin`` (``--margin``) of
  the other ranks' time: a real but negligible lag names nobody;
- it rests on at least ``MIN_STEPS`` steps, and the rank is behind in most of them.

Everything else is a one-off: the largest single step behind (``worst``) is still said, as
such.
"""

from __future__ import annotations

import math
import re
import statistics

import msgspec

from mindspeed_prof.analysis.judgement.cells import Cells, Who, who_order
from mindspeed_prof.analysis.judgement.noise import ALPHA, MIN_STEPS, noise_floor
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Row, Straggler, StragglerKind
from mindspeed_prof.stats.distributions import t_sf
from mindspeed_prof.stats.multiple import holm
from mindspeed_prof.stats.robust import median_polish, robust_sd

__all__ = ["MEDIAN_SE", "NOISE_TIMES", "WAITS", "Lag", "is_wait", "lags", "row_noise"]

#: Names of ranges where a rank waits for the others (collectives, barriers, waits): a rank
#: long there is the victim of the rank that arrives last, not the cause.
WAITS = re.compile(
    r"(?i)all[_ -]?reduce|all[_ -]?gather|reduce[_ -]?scatter|all[_ -]?to[_ -]?all|broadcast|"
    r"barrier|\bwait|\bsync|synchroni[sz]e|collective|nccl|hccl|\b(?:send|recv|isend|irecv)\b"
)
#: The standard error of a median of n normal values is this times sd / sqrt(n).
MEDIAN_SE = math.sqrt(math.pi / 2)
#: A lag must be at least this many times the noise of one lag.
NOISE_TIMES = 2.0


def is_wait(name: str) -> bool:
    """Whether ``name`` is a range where ranks wait for each other (``WAITS``)."""
    return WAITS.search(name) is not None


class Lag(Row, kw_only=True):
    """One rank at one row (``kind`` ``stage``, ``range`` or ``device``; ``name``): over the
    ``compared`` steps where it and another rank ran it, ``lag_ms`` (the median of its time
    less the other ranks' median), ``others_ms`` (the median of the other ranks' time),
    ``behind`` (steps it was over the floor and the margin behind), ``noise_ms`` (the noise of one lag at
    this row), ``p`` (the one-sided chance of such a lag from noise alone; 1 where it was not
    tested), and whether it is ``consistent`` (named: see ``judgement.lag``); ``worst``: its
    step furthest behind; ``short``: why it is not consistent ("" when it is)."""

    kind: StragglerKind
    name: str
    rank: int | None
    source: str = ""
    compared: int
    behind: int
    lag_ms: float
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
    """(The noise of one cell, its degrees of freedom): the larger of the robust and the plain
    standard deviation of the cells once each rank's and step's effect is polished out."""
    table = [[cells[s].get(w) for s in steps] for w in whos]
    _, _, _, res = median_polish(table)
    left = [v for row in res for v in row if v is not None]
    df = max(len(left) - len(steps) - len(whos) + 1, 1)
    plain = math.sqrt(math.fsum(v * v for v in left) / df)
    return max(robust_sd(left, 0.0), plain), float(df)


def row_noise(cells: Cells) -> float:
    """The noise of one lag at a row (``judgement.lag``); 0 where fewer than two ranks ran it
    in a step."""
    steps, whos = _table(cells)
    if not steps or len(whos) < 2:
        return 0.0
    return _noise(cells, steps, whos)[0] * math.sqrt(1 + 1 / (len(whos) - 1))


def _row_lags(
    kind: StragglerKind, name: str, cells: Cells, floor: float, margin: float
) -> list[tuple[Lag, float]]:
    """Each rank's ``Lag`` at one row, not yet judged, with the noise's degrees of freedom;
    ``behind`` counts the steps it was over the floor and ``margin`` behind (the rows of the
    stragglers table)."""
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
        worst = Straggler(
            kind=kind,
            name=name,
            step=s,
            rank=w[0],
            source=w[1],
            ms=ms,
            median_ms=o,
            ratio=ratio(ms, o, math.inf),
            excess_ms=ms - o,
        )
        lag = Lag(
            kind=kind,
            name=name,
            rank=w[0],
            source=w[1],
            compared=len(rows),
            behind=sum(ms - o >= floor and ms > o * (1 + margin) for ms, o, _ in rows),
            lag_ms=statistics.median(ms - o for ms, o, _ in rows),
            others_ms=statistics.median(o for _, o, _ in rows),
            noise_ms=sd_lag,
            worst=worst,
        )
        out.append((lag, df))
    return out


def _short(g: Lag, floor: float, margin: float) -> str:
    """Why ``g`` cannot be named whatever the test says ("" when it can)."""
    if g.compared < MIN_STEPS:
        return f"rests on {g.compared} step{'s' * (g.compared != 1)}"
    if g.lag_ms < floor:
        return "under the noise floor"
    if g.lag_ms < margin * g.others_ms:
        return "under the margin"
    if 2 * g.behind <= g.compared:
        return f"behind in {g.behind} of {g.compared} steps"
    if g.lag_ms < NOISE_TIMES * g.noise_ms:
        return "within the noise"
    return ""


def _p(g: Lag, df: float) -> float:
    """The one-sided chance of a median lag this large from noise alone."""
    se = MEDIAN_SE * g.noise_ms / math.sqrt(g.compared)
    return t_sf(g.lag_ms / se, df) if se > 0 else 0.0


def lags(
    rows: dict[tuple[StragglerKind, str], Cells],
    step_ms: float | None,
    margin: float,
    noise_ms: float,
) -> list[Lag]:
    """Every rank at every row of ``rows`` with a lag over zero or a step over the floor,
    judged together (``judgement.lag``): consistent ones first, then by the lag, the worst
    step and the rank."""
    floor = noise_floor(noise_ms, step_ms)
    found = [
        (g, df)
        for (kind, name), cells in rows.items()
        for g, df in _row_lags(kind, name, cells, floor, margin)
        if g.lag_ms > 0 or g.worst.excess_ms >= floor
    ]
    shorts = [_short(g, floor, margin) for g, _ in found]
    tested = [i for i, short in enumerate(shorts) if not short]
    ps = {i: _p(found[i][0], found[i][1]) for i in tested}
    cleared = dict(zip(tested, holm([ps[i] for i in tested], ALPHA), strict=True))
    out = []
    for i, (g, _) in enumerate(found):
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
