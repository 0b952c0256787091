"""Findings rules: npu (see ``analysis.findings``)."""

from __future__ import annotations

from mindspeed_prof.analysis.findings.finding import Rule

__all__ = ["RULES"]

#: This family's rules, in the order they run.
RULES: list[Rule] = []
