"""``Report``: the whole answer for one analysis, computed once: every table (``tables``),
then the verdict (with what to run next) and the findings, which read the same tables. The
text view, the HTML view and ``--json`` (``Report.json``) only read it."""

from __future__ import annotations

import msgspec

from mindspeed_prof.analysis.findings import Finding, find
from mindspeed_prof.analysis.report.captures import Captures
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import Tables, tables, tables_json
from mindspeed_prof.analysis.rows import to_json
from mindspeed_prof.analysis.verdict import Verdict, verdict
from mindspeed_prof.jsonio import JsonableObject

__all__ = ["Report", "analysis_json", "document", "report"]


class Report(msgspec.Struct, kw_only=True):
    """The whole answer for one analysis. ``captures``: what was read (root, traces, skipped
    files, clashes, runs); ``tables`` every table; ``rule_notes``: finding rules that failed."""

    captures: Captures
    settings: Settings
    tables: Tables
    verdict: Verdict
    findings: list[Finding]
    rule_notes: list[str]

    def json(self, lazy: bool = False) -> JsonableObject:
        """``analyse --json``: ``verdict`` and ``findings`` first, then the tables
        (``tables_json``), the rules' notes added to the captures'; ``lazy``: the tables' rows
        made as ``cli.output.write_json`` writes them."""
        return {
            "verdict": self.verdict.json(),
            "findings": to_json(self.findings),
            **tables_json(self.tables, lazy),
            "notes": [*self.tables.notes, *self.rule_notes],
        }


def report(captures: Captures, settings: Settings | None = None) -> Report:
    """The ``Report`` of ``captures`` under ``settings`` (default: the CLI's): every table
    computed once, then the verdict and the findings from the same tables."""
    s = settings or Settings()
    t = tables(captures, s)
    findings, rule_notes = find(captures, t, s)
    return Report(
        captures=captures,
        settings=s,
        tables=t,
        verdict=verdict(captures, t, s, findings),
        findings=findings,
        rule_notes=rule_notes,
    )


def analysis_json(captures: Captures) -> JsonableObject:
    """A job's ``analysis.json``: every table of ``captures`` as ``--json`` writes it, without
    the verdict and findings (not computed)."""
    return tables_json(tables(captures))


def document(captures: Captures | Report) -> JsonableObject:
    """``analyse --json`` of ``captures`` (a ``Report``, or ``Captures`` to make one of)."""
    return (captures if isinstance(captures, Report) else report(captures)).json()
