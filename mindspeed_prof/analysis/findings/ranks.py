"""Findings rules: a rank the others wait for, from the one rule that says a rank is slow
(``judgement.lag``: a lag behind the other ranks, consistent over the steps, that clears the
row's own noise after the correction for every row and rank tested).

- ``straggler``: each rank named behind the others at a stage, a custom range or in device
  compute; where, with two ranks, the others wait in a collective as long as it computes,
  that wait is said as the consequence, not a second cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import files_text, severity
from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.judgement.cells import who_text
from mindspeed_prof.analysis.judgement.lag import Lag, is_wait
from mindspeed_prof.analysis.judgement.severity import HIGH_SHARE, MEDIUM_SHARE
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["RULES", "straggler"]

_WHERE = {"stage": "stage", "range": "range", "device": "device"}


def _title(g: Lag) -> str:
    what = (
        "computes longer than the other ranks"
        if g.kind == "device"
        else f"is behind the other ranks at {g.kind} {g.name}"
    )
    return (
        f"{who_text(g.who)} {what}: {g.lag_ms:+,.1f} ms per step (median of {g.compared} "
        f"steps: {g.others_ms + g.lag_ms:,.1f} against {g.others_ms:,.1f} ms), clearing the "
        f"row's noise of {g.noise_ms:,.1f} ms"
    )


def _detail(g: Lag, victims: list[Lag]) -> str:
    w = g.worst
    lines = [
        f"behind in {g.behind} of {g.compared} steps; worst, step {w.step}: {w.ms:,.1f} ms "
        f"against {w.median_ms:,.1f} ms on the other ranks ({w.ratio:.1f}x)",
        f"noise: the step-to-step spread of one lag ({g.noise_ms:,.2f} ms, a robust standard "
        f"deviation of the row once each rank's and step's own time is taken out); the chance "
        f"of such a lag from noise alone {g.p:.1g}, judged with every row and rank tested",
    ]
    lines += [
        f"{who_text(v.who)} waits for it in {v.name}: {v.lag_ms:+,.1f} ms per step "
        "(a consequence, not a second cause)"
        for v in victims
    ]
    return "\n".join(lines)


def _advice(g: Lag) -> str:
    if g.kind == "device":
        return (
            f"The other ranks wait for {who_text(g.who)} in their collectives: balance the work "
            "across ranks (pipeline stages, batch or sequence lengths), or look at what its "
            "device runs longer (mindspeed-prof compare its capture with another rank's)."
        )
    return (
        f"{who_text(g.who).capitalize()} is slow in {g.behind} of {g.compared} steps: a slow "
        "device or host, or more work on that rank (longer sequences, a larger shard); "
        "compare its capture with another rank's (mindspeed-prof compare) or capture the "
        "stage on that rank at level1."
    )


def straggler(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Each rank named behind the others (``judgement.lag``): its lag per step, the noise it
    cleared, the steps it rests on; ranks that wait for it in a collective as its detail."""
    lags = tables.lags
    named = [g for g in lags if g.consistent]
    causes = [g for g in named if not is_wait(g.name)] or named
    step = tables.step_time
    step_ms = step.median_ms if step else None
    traces = {t.rank: t for t in captures.traces}
    out = []
    for g in causes:
        victims = [v for v in named if v not in causes and v.kind == g.kind and v.who != g.who]
        share = ratio(g.lag_ms, step_ms, 0.0) if step_ms else 0.0
        out.append(
            Finding(
                rule="ranks.straggler",
                title=_title(g),
                detail=_detail(g, victims),
                suggestion=_advice(g),
                severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
                impact_ms=g.lag_ms,
                source=files_text(
                    captures,
                    [traces[g.rank]] if g.rank in traces else [],
                    f"{_WHERE[g.kind]} times per step of every rank",
                ),
                ranks=[g.rank],
                stage=g.name if g.kind == "stage" else None,
                step=g.worst.step,
            )
        )
    return out


#: This family's rules, in the order they run.
RULES: list[Rule] = [straggler]
