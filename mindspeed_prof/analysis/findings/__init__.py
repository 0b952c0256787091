"""Findings: one line each with its numbers, the detail and where they came from, and what
to do about it. One module per family of rules (``ranks``: a rank the others wait for, the one
rule that says so; ``npu``: what Ascend's msprof-analyze advisor checks; ``cuda``: HTA-style
device questions; ``rl``: RL post-training loops; ``rl_ledger``: the RL ledger's waste and long
tail, from counters; ``host``: the host's side of a stage); each rule is a function of the
captures, their tables and the settings that returns its findings (none where it has nothing
to say).

``find`` runs every rule: a rule that fails is left out with one note, never the analysis. A
finding's severity is the share of the step it costs (``judgement.causes``), where it says
what it costs per step; the findings come most costly first, those without a cost by their
severity among them: the order the verdict's causes and Next read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from mindspeed_prof.analysis.findings.finding import SEVERITIES, Finding, Rule
from mindspeed_prof.analysis.judgement.severity import severity_of
from mindspeed_prof.analysis.readers.labels import one_line

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["SEVERITIES", "Finding", "Rule", "find", "rules"]


def rules(captures: Captures | None = None) -> list[Rule]:
    """Every rule, in the order they run; for ``captures``, the ``npu`` family only where one
    of them is a torch_npu capture (its rules read nothing else: their modules, a fifth of an
    analysis's code, are not imported for the rest)."""
    from mindspeed_prof.analysis.findings import cuda, host, ranks, rl, rl_ledger

    family: list[Rule] = []
    if captures is None or any(t.kind == "npu" and t.npu is not None for t in captures.traces):
        from mindspeed_prof.analysis.findings import npu

        family = npu.RULES
    return [*ranks.RULES, *family, *cuda.RULES, *rl.RULES, *rl_ledger.RULES, *host.RULES]


def find(captures: Captures, tables: Tables, settings: Settings) -> tuple[list[Finding], list[str]]:
    """Every rule's findings, most pressing first (severity, then time at stake), and one
    note per rule that failed."""
    found: list[Finding] = []
    notes: list[str] = []
    for rule in rules(captures):
        try:
            found.extend(rule(captures, tables, settings))
        except Exception as err:  # a rule's bug must not cost the rest of the report
            family = rule.__module__.split("findings.", 1)[-1].split(".", 1)[0]  # npu.ops: npu
            notes.append(f"finding rule {family}.{rule.__name__} failed: {one_line(err)}")
    step = tables.step_time
    found = [
        msgspec.structs.replace(
            f, severity=severity_of(f.impact_ms, step.median_ms if step else None, f.severity)
        )
        if f.impact_ms
        else f
        for f in found
    ]
    found.sort(
        key=lambda f: (
            SEVERITIES.index(f.severity) if f.severity in SEVERITIES else len(SEVERITIES),
            -(f.impact_ms or 0.0),
            f.rule,
        )
    )
    return found, notes
