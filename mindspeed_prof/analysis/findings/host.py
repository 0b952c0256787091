"""Findings rules: the host's side of a stage, read from captures that record host operators.

- ``no_op``: a stage that spends a share of its time running no operator on any thread (host
  Python, waits on a queue or a remote call, sleeps): its top operators cannot explain it, the
  custom ranges that hold that time can (``ranges.no_op_rows``).

A time is noise under ``judgement.noise.noise_floor`` (``--noise-ms``, or 1% of the step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import severity
from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.rows import NoOpRow

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["HIGH_SHARE", "MEDIUM_SHARE", "MIN_SHARE", "RULES", "no_op"]

#: A stage is named when at least this share of it ran no operator; medium and high severity
#: from these shares on.
MIN_SHARE = 0.2
MEDIUM_SHARE = 0.35
HIGH_SHARE = 0.6
DETAIL_LINES = 4


def _where(row: NoOpRow) -> str:
    if not row.ranges:
        return "in no custom range (wrap the host code in mstx.range to name it)"
    return "in " + ", ".join(
        f"range {name!r} {ms / row.count:,.1f} ms" for name, ms in row.ranges.items()
    )


def no_op(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Stages whose time (per execution) is ``MIN_SHARE`` or more and over the noise floor
    with no host operator running: one finding, the largest first in its detail."""
    step = tables.step_time
    floor = noise_floor(settings.noise_ms, step.median_ms if step else None)
    hits = [
        r
        for r in tables.no_op
        if r.count and r.share >= MIN_SHARE and r.no_op_ms / r.count >= floor
    ]
    if not hits:
        return []
    hits.sort(key=lambda r: (-r.no_op_ms / r.count, r.stage, rank_order(r.rank)))
    top = hits[0]
    per, total = top.no_op_ms / top.count, top.total_ms / top.count
    lines = [
        f"{r.stage} on rank {rank_label(r.rank, r.source)}: {r.no_op_ms / r.count:,.1f} of "
        f"{r.total_ms / r.count:,.1f} ms per execution ({r.share:.0%}) "
        f"{_where(r)}"
        for r in hits[:DETAIL_LINES]
    ]
    if len(hits) > DETAIL_LINES:
        lines.append(f"... and {len(hits) - DETAIL_LINES} more stages and ranks")
    lines.append(
        "the stage's range less the union of the host operators on every thread; a "
        "custom range holds what is not nested in another"
    )
    return [
        Finding(
            rule="host.no_op",
            title=f"{top.stage} ran no operator for {per:,.1f} of {total:,.1f} ms per execution "
            f"({top.share:.0%}) on rank {rank_label(top.rank, top.source)}: host-side "
            f"Python, waits or sleeps, {_where(top)}",
            detail="\n".join(lines),
            suggestion="Its operators do not explain this time: look at the host code the ranges "
            "name (a queue or remote call waited on, a sleep, Python work between "
            "ops); with_stack=true shows the Python frames in the timeline.",
            severity=severity(top.share, MEDIUM_SHARE, HIGH_SHARE),
            impact_ms=per,
            source="stage and custom ranges, host operators (cpu_op)",
            ranks=sorted({r.rank for r in hits}, key=rank_order),
        )
    ]


RULES: list[Rule] = [no_op]
