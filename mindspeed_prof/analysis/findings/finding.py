"""A finding and a rule (see ``analysis.findings``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from mindspeed_prof.analysis.rows import Row

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["SEVERITIES", "Finding", "Rule", "Severity"]

#: How pressing a finding is.
Severity = Literal["high", "medium", "low"]
#: Most pressing first.
SEVERITIES: tuple[Severity, ...] = ("high", "medium", "low")


class Finding(Row, kw_only=True):
    """``rule`` (its module and name, ``npu.byte_alignment``), ``title`` (one line with the
    numbers), ``detail`` (the evidence, a few lines), ``suggestion`` (what to do), ``severity``
    (one of ``SEVERITIES``; from the share of the step ``impact_ms`` is, where both are
    known), ``impact_ms`` (what it costs per step, where it can be said: findings are ranked
    by it), ``source`` (the files or tables the numbers came from), ``ranks`` it was seen on,
    and where it is: the ``stage`` and ``step`` (None where it is not one)."""

    rule: str
    title: str
    detail: str = ""
    suggestion: str = ""
    severity: Severity = "medium"
    impact_ms: float | None = None
    source: str = ""
    ranks: list[int | None] = []
    stage: str | None = None
    step: int | None = None


Rule = Callable[["Captures", "Tables", "Settings"], list[Finding]]
