"""One ranked list of causes: every finding that costs time, by the milliseconds per step it
costs. The verdict's ``cause`` line, Next and the findings list all read this order, so they
never name different things first.

A cause is a finding with a cost (``impact_ms``) that is at least ``medium``
(``judgement.severity``): a finding that costs less is still listed among the findings, but
the verdict does not act on it."""

from __future__ import annotations

from collections.abc import Sequence

from mindspeed_prof.analysis.findings.finding import Finding, Severity
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.rows import Row

__all__ = ["Cause", "causes"]


class Cause(Row, kw_only=True):
    """A finding that costs time: its ``rule`` and ``title``, ``cost_ms`` per step and its
    ``share`` of the step (None: no step ranges), its ``severity``, and where it is:
    ``stage``, ``rank``, ``step`` (each None where it is not one)."""

    rule: str
    title: str
    cost_ms: float
    share: float | None
    severity: Severity
    stage: str | None = None
    rank: int | None = None
    step: int | None = None


def causes(findings: Sequence[Finding], step_ms: float | None) -> list[Cause]:
    """The findings that cost time and are at least medium, in the findings' order (by cost:
    ``findings.find``)."""
    return [
        Cause(
            rule=f.rule,
            title=f.title,
            cost_ms=f.impact_ms,
            # a cost that is a mean over steps can pass the median step: a share is at most 1
            share=min(ratio(f.impact_ms, step_ms, 0.0), 1.0) if step_ms else None,
            severity=f.severity,
            stage=f.stage,
            rank=f.ranks[0] if len(f.ranks) == 1 else None,
            step=f.step,
        )
        for f in findings
        if f.impact_ms is not None and f.impact_ms > 0 and f.severity != "low"
    ]
