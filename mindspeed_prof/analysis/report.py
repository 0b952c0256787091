"""The whole answer for one analysis, in the order people read it: the verdict (with what to
run next), the findings, then every table. ``--json`` is ``document``; the text and HTML views
read the same parts."""

from __future__ import annotations

from typing import Any

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.findings import Finding, find
from mindspeed_prof.analysis.rows import to_json
from mindspeed_prof.analysis.verdict import Verdict, verdict

__all__ = ["Answers", "document"]


class Answers:
    """The verdict and findings of ``result``, each computed once; ``notes``: rules that
    failed (one line each)."""

    def __init__(self, result: Analysis) -> None:
        self.result = result
        self.verdict: Verdict = verdict(result)
        self.findings: list[Finding]
        self.findings, self.notes = find(result)


def document(result: Analysis, given: Answers | None = None) -> dict[str, Any]:
    """``analyse --json``: ``verdict`` and ``findings`` first, then the tables."""
    a = given or Answers(result)
    return {"verdict": a.verdict.json(), "findings": to_json(a.findings), **result.to_json(),
            "notes": [*result.notes(), *a.notes]}
