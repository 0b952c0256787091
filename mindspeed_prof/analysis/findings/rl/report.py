"""How an RL finding reads: the ranks and steps it names, its detail, its severity and the
files it cites."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import files_text, severity
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.steps import Who, traces_of, who_text
from mindspeed_prof.analysis.readers.labels import rank_order, ranks_text

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "DETAIL_LINES",
    "HIGH_SHARE",
    "MEDIUM_SHARE",
    "detail",
    "finding",
    "of_ranks",
    "steps_text",
]

#: Shares of the step at which an RL finding is medium, then high.
MEDIUM_SHARE, HIGH_SHARE = 0.05, 0.20
#: Ranks (or steps) listed one line each in a finding's detail.
DETAIL_LINES = 4


def of_ranks(hits: list[Who]) -> str:
    """``rank 0`` or ``rank 0 (of 3 ranks)``: the rank shown first, and how many."""
    return f"{who_text(hits[0])}" + (f" (of {len(hits)} ranks)" if len(hits) > 1 else "")


def steps_text(steps: list[int]) -> str:
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {ranks_text(steps)}"


def detail(lines: list[str], how: str, of: str = "ranks") -> str:
    """The first ``DETAIL_LINES`` of ``lines`` (one a rank, or a step: ``of``), how many more,
    and ``how`` they were measured."""
    more = len(lines) - DETAIL_LINES
    return "\n".join(
        [*lines[:DETAIL_LINES], *([f"... and {more} more {of}"] if more > 0 else []), how]
    )


def finding(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    held: list[Who],
    *,
    rule: str,
    title: str,
    detail: str,
    suggestion: str,
    share: float,
    impact_ms: float,
    what: str = "step and stage ranges",
    ranks: list[Who] | None = None,
    stage: str | None = None,
    step: int | None = None,
) -> Finding:
    """An RL finding: severity from ``share`` of the step, the files of the captures of
    ``held`` (``what`` was read of them), the ranks of ``ranks`` (``held`` unless given)."""
    traces = traces_of(captures, tables, settings)
    return Finding(
        rule=rule,
        title=title,
        detail=detail,
        suggestion=suggestion,
        severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
        impact_ms=impact_ms,
        source=files_text(captures, [t for w in held for t in traces.get(w, [])], what),
        ranks=sorted({w[0] for w in (held if ranks is None else ranks)}, key=rank_order),
        stage=stage,
        step=step,
    )
