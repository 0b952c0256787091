"""How pressing a cost is: its share of the step the job lived (its slowest rank's)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mindspeed_prof.analysis.findings.finding import Severity

__all__ = ["HIGH_SHARE", "MEDIUM_SHARE", "severity_of"]

#: Shares of the step at which a cost is medium, high.
MEDIUM_SHARE, HIGH_SHARE = 0.05, 0.25


def severity_of(cost_ms: float, step_ms: float | None, otherwise: Severity) -> Severity:
    """A cost's severity from its share of the step (``otherwise`` where the step is not
    known)."""
    if not step_ms:
        return otherwise
    share = cost_ms / step_ms
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"
