"""What every CUDA rule reads: each rank's CUDA rows over its counted steps (``ranks``), when a
time per step is a finding (``fires``), and the finding that names the ranks it fired on
(``finding``)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from mindspeed_prof.analysis.device_scope import scope
from mindspeed_prof.analysis.findings.common import files_text, severity, source_label
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.judgement.lag import least
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import DeviceRow, LaunchStats, StreamIdle, TraceData
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "DETAIL_RANKS",
    "FIRE_SHARE",
    "HIGH_SHARE",
    "MEDIUM_SHARE",
    "Hit",
    "Rank",
    "finding",
    "fired",
    "fires",
    "ranks",
    "ranks_said",
]

#: A finding needs its time per step to be at least this share of the step (and the floor).
FIRE_SHARE = 0.05
#: Shares of the step at which a finding is medium, then high.
MEDIUM_SHARE, HIGH_SHARE = 0.10, 0.25
#: Ranks listed one line each in a finding's detail.
DETAIL_RANKS = 4


@dataclass
class Rank:
    """One rank's (and source's) CUDA facts over its counted steps; or one capture's without
    steps (``capture``: its file)."""

    rank: int | None
    source: str
    capture: str = ""
    traces: list[TraceData] = field(default_factory=list)
    steps: list[DeviceRow] = field(default_factory=list)  # whole-step rows
    stages: list[DeviceRow] = field(default_factory=list)
    idle: list[StreamIdle] = field(default_factory=list)
    launches: list[LaunchStats] = field(default_factory=list)

    @property
    def label(self) -> str:
        own = rank_label(self.rank, self.source)
        return f"{own} ({self.capture}, no steps)" if self.capture else own

    @property
    def n(self) -> int:
        return max(len(self.steps), 1)

    @property
    def span_ms(self) -> float:
        """The mean step on the device (its window)."""
        return sum(r.span_ms or 0.0 for r in self.steps) / self.n

    @property
    def per(self) -> str:
        return "per step" if any(r.step is not None for r in self.steps) else "in the capture"

    @property
    def whole(self) -> str:
        """What a share is of: ``the step``, or ``the capture`` without steps."""
        return "the step" if self.per == "per step" else "the capture"

    @property
    def each(self) -> str:
        """`` per step`` after a time, or nothing without steps."""
        return " per step" if self.per == "per step" else ""


#: A rank a rule fired on: its time at stake per step, and the rank.
Hit = tuple[float, Rank]
#: What else a rule measured of a rank.
T = TypeVar("T")
R = TypeVar("R", DeviceRow, StreamIdle, LaunchStats)


def ranks(captures: Captures, tables: Tables, settings: Settings) -> list[Rank]:
    """Per rank and source, the CUDA rows of the counted steps of the captures the verdict
    reads (``device_scope.scope``): warmup steps left out (unless ``include_warmup``); where
    no capture has steps, each capture's one whole row, a unit of its own."""
    skip = set() if settings.include_warmup else tables.warmup_steps
    within = scope(captures)
    out: dict[tuple[int | None, str, str], Rank] = {}
    for t in within.traces:
        if all(r.span_ms is None for r in t.device):
            continue  # no CUDA breakdown (torch_npu rows have no device window)
        source = source_label(t)
        steps = {r.step for r in t.device if r.step is not None and r.stage is None}
        kept = (
            {s for s in steps if (t.rank, source, s) not in skip}
            if within.per == "step"
            else {None}
        )
        capture = captures.shown(str(t.path)) if within.per == "capture" else ""
        who = out.get((t.rank, source, capture))
        if who is None:
            who = out[(t.rank, source, capture)] = Rank(t.rank, source, capture)
        who.traces.append(t)
        for row in t.device:
            if row.span_ms is not None and row.step in kept:
                (who.steps if row.stage is None else who.stages).append(row)
        who.idle += [r for r in t.stream_idle if r.step in kept]
        who.launches += [r for r in t.launch_stats if r.step in kept]
    return sorted(
        (w for w in out.values() if w.steps),
        key=lambda w: (rank_order(w.rank), w.source, w.capture),
    )


def fires(captures: Captures, tables: Tables, settings: Settings, ms: float, span: float) -> bool:
    """Over the floor and ``FIRE_SHARE`` of a step it fits in (a part longer than its step is
    a broken row, never a finding)."""
    return (
        ratio(ms, span, 0.0) >= FIRE_SHARE
        and ms <= span
        and ms >= noise_floor(settings.noise_ms, span)
    )


def _steps(who: Rank) -> list[Rank]:
    """``who`` one step at a time (its rows of that step only, grouped once: a capture of
    thousands of steps is not searched once a step)."""
    stages, idle, launches = _by_step(who.stages), _by_step(who.idle), _by_step(who.launches)
    return [
        Rank(
            who.rank,
            who.source,
            who.capture,
            who.traces,
            steps=[row],
            stages=list(stages.get(row.step, ())),
            idle=list(idle.get(row.step, ())),
            launches=list(launches.get(row.step, ())),
        )
        for row in who.steps
    ]


def _by_step(rows: Iterable[R]) -> dict[int | None, list[R]]:
    out: dict[int | None, list[R]] = {}
    for r in rows:
        out.setdefault(r.step, []).append(r)
    return out


def consistent(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    who: Rank,
    measure: Callable[[Rank], tuple[float, T] | None],
) -> bool:
    """Whether the time ``measure`` gives holds in nearly every step of ``who`` (as a lag is
    judged: ``judgement.lag.least``, one step in four let off), not only on average: a
    one-off stall of the host is not a host-bound device. Captures without steps: one whole."""
    if who.per != "per step" or len(who.steps) < 2:
        return True
    each = sorted(
        got[0] if got is not None else 0.0 for got in (measure(one) for one in _steps(who))
    )
    kept = each[least(len(each)) - 1]
    return fires(
        captures, tables, settings, kept, statistics.median(r.span_ms or 0.0 for r in who.steps)
    )


def fired(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    measure: Callable[[Rank], tuple[float, T] | None],
) -> list[tuple[float, Rank, T]]:
    """The ranks where the time per step ``measure`` gives (with what else it measured; None:
    nothing to measure) ``fires``, and holds in nearly every step (``consistent``), worst
    first."""
    hits: list[tuple[float, Rank, T]] = []
    for who in ranks(captures, tables, settings):
        got = measure(who)
        if (
            got is not None
            and fires(captures, tables, settings, got[0], who.span_ms)
            and consistent(captures, tables, settings, who, measure)
        ):
            hits.append((got[0], who, got[1]))
    hits.sort(key=lambda h: (-h[0], rank_order(h[1].rank)))
    return hits


def ranks_said(hits: list[Hit]) -> str:
    """``rank 0`` or ``rank 0 (of 3 ranks)``: the rank shown first, and how many fired."""
    worst = hits[0][1]
    return f"rank {worst.label}" + (f" (of {len(hits)} ranks)" if len(hits) > 1 else "")


def finding(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    hits: list[Hit],
    lines: list[str],
    *,
    how: str,
    rule: str,
    title: str,
    suggestion: str,
    share: float,
    what: str,
) -> Finding:
    """The finding of the ranks ``hits`` (worst first): as its detail, the first
    ``DETAIL_RANKS`` of ``lines`` (one a rank) and ``how`` they were measured; severity from
    ``share`` of the step, the worst rank's time at stake, the files of every rank's captures
    (``what`` was read of them)."""
    more = len(hits) - DETAIL_RANKS
    detail = [*lines[:DETAIL_RANKS], how, *([f"... and {more} more ranks"] if more > 0 else [])]
    return Finding(
        rule=rule,
        title=title,
        detail="\n".join(detail),
        suggestion=suggestion,
        severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
        impact_ms=hits[0][0],
        source=files_text(captures, [t for _, w in hits for t in w.traces], what),
        ranks=sorted({w.rank for _, w in hits}, key=rank_order),
    )
