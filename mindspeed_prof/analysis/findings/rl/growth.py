"""``rl.growing_stage``: a stage whose own time grows with the step (``judgement.growth``: a
Mann-Kendall trend that clears the noise over every stage and rank tested, its Theil-Sen slope
the ms per step said); never a change in its share of the step.

"Responses getting longer" is said only where the response lengths the trainer counts
(``prof.count("response_length", ...)``) grow too, by the same test."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding
from mindspeed_prof.analysis.findings.rl.steps import GENERATE
from mindspeed_prof.analysis.judgement.cells import who_order, who_text
from mindspeed_prof.analysis.judgement.growth import Growth
from mindspeed_prof.analysis.judgement.noise import ALPHA
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.stats.trend import trend

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["growing_stage", "responses_grow"]


def responses_grow(captures: Captures, tables: Tables, settings: Settings) -> bool:
    """Whether the counted response lengths' median per step rises over the steps (the
    trend test at ``ALPHA``)."""
    per: dict[int, list[float]] = defaultdict(list)
    for c in tables.counted_counters:
        if c.name == "response_length" and c.step is not None and c.values:
            per[c.step] += c.values
    if len(per) < 3:
        return False
    steps = sorted(per)
    t = trend([float(s) for s in steps], [statistics.median(per[s]) for s in steps])
    return t.slope > 0 and t.p_up <= ALPHA


def _line(g: Growth) -> str:
    return (
        f"{who_text(g.who)}: {g.slope_ms:+,.2f} ms per step over steps {g.first_step}-"
        f"{g.last_step} ({g.n} steps), {g.first_ms:,.1f} -> {g.last_ms:,.1f} ms on the fitted "
        f"line; trend p {g.p:.1g} against {g.noise_ms:,.2f} ms of noise about it"
    )


def growing_stage(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Per stage, the ranks where its own time grows (``judgement.growth``)."""
    by_stage: dict[str, list[Growth]] = defaultdict(list)
    for g in tables.growths:
        if g.consistent:
            by_stage[g.stage].append(g)
    step = tables.step_time
    step_ms = step.median_ms if step else None
    out = []
    for stage, found in by_stage.items():
        found.sort(key=lambda g: (-g.rise_ms, who_order(g.who)))
        slope = statistics.median(g.slope_ms for g in found)
        rise = statistics.median(g.rise_ms for g in found)
        t = found[0]
        ranks = f"{who_text(t.who)}" + (f" and {len(found) - 1} more" if len(found) > 1 else "")
        if stage == GENERATE and responses_grow(captures, tables, settings):
            advice = (
                "The responses counted grow longer too, and generation with them: watch the "
                "response length, cap it (max new tokens) or balance it across ranks."
            )
        else:
            advice = (
                "Something in this stage grows with the step (longer sequences, a cache or "
                "buffer that is never freed, memory fragmentation): capture it at an early "
                "and a late step and compare them (mindspeed-prof compare)."
            )
        out.append(
            finding(
                captures,
                tables,
                settings,
                [g.who for g in found],
                rule="rl.growing_stage",
                title=f"{stage} grows {slope:+,.1f} ms per step over steps {t.first_step}-"
                f"{t.last_step} on {ranks} ({t.first_ms:,.1f} -> {t.last_ms:,.1f} ms; "
                f"+{rise:,.1f} ms per step by now)",
                detail=detail(
                    [_line(g) for g in found],
                    "its time in each step on each rank: the Theil-Sen slope (the median of "
                    "the slopes between every two steps), judged by the Mann-Kendall test "
                    "over every stage and rank (Holm's correction); a share of the step is "
                    "never read",
                ),
                suggestion=advice,
                share=ratio(rise, step_ms, 0.0) if step_ms else 0.0,
                impact_ms=rise,
                stage=stage,
            )
        )
    return sorted(out, key=lambda f: -(f.impact_ms or 0.0))
