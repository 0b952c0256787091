"""``rl.growing_stage``: one stage's share of the step growing over the steps (a least-squares
trend)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding, of_ranks, steps_text
from mindspeed_prof.analysis.findings.rl.steps import GENERATE, Who, steps_of, who_order, who_text
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.stragglers import noise_floor

if TYPE_CHECKING:
    from mindspeed_prof.analysis.result import Analysis

__all__ = ["GROWTH_REL", "MIN_R2", "MIN_STEPS", "growing_stage"]


#: A trend needs this many steps, a fit this good (r squared), and its growth over the steps
#: to be at least this share of where it started (and over the noise floor).
MIN_STEPS = 3
MIN_R2 = 0.5
GROWTH_REL = 0.2


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """Least squares ``y = a + b x``: (a, b, r squared); r squared 1 where ys are flat."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    b = ratio(sxy, sxx, 0.0)
    r2 = ratio(sxy * sxy, sxx * syy, 1.0)
    return my - b * mx, b, r2


@dataclass
class _Trend:
    who: Who
    steps: list[int]
    first: float  # fitted share at the first step
    last: float
    r2: float
    step_ms: float  # the mean step
    stage_ms: tuple[float, float]  # measured at the first and last step
    steps_ms: tuple[float, float]

    @property
    def growth_ms(self) -> float:
        return (self.last - self.first) * self.step_ms


def growing_stage(result: Analysis) -> list[Finding]:
    """Per stage, ranks where its share of the step grows over the steps: a least-squares
    slope over at least ``MIN_STEPS`` steps (fit r squared at least ``MIN_R2``) whose growth
    is over the noise floor and ``GROWTH_REL`` of the share it started from."""
    trends: dict[str, list[_Trend]] = defaultdict(list)
    for who, steps in steps_of(result).items():
        shares: dict[str, list[tuple[int, float, float, float]]] = defaultdict(list)
        for n, s in sorted(steps.items()):
            if s.step is None or s.step.dur <= 0:
                continue
            per: dict[str, float] = defaultdict(float)
            for r in s.stages:
                per[r.name] += r.dur
            for name, us in per.items():
                shares[name].append(
                    (n, ratio(us, s.step.dur, 0.0), us / 1000.0, s.step.dur / 1000.0)
                )
        for name, points in shares.items():
            if len(points) < MIN_STEPS:
                continue
            xs, ys = [float(p[0]) for p in points], [p[1] for p in points]
            a, b, r2 = _fit(xs, ys)
            # the fitted line at the first and last step: a share, so within 0-100%
            first, last = (min(max(a + b * x, 0.0), 1.0) for x in (xs[0], xs[-1]))
            step_ms = statistics.fmean(p[3] for p in points)
            t = _Trend(
                who,
                [p[0] for p in points],
                first,
                last,
                r2,
                step_ms,
                (points[0][2], points[-1][2]),
                (points[0][3], points[-1][3]),
            )
            if (
                b > 0
                and r2 >= MIN_R2
                and t.growth_ms >= noise_floor(result.noise_ms, step_ms)
                and last - first >= GROWTH_REL * max(first, 0.0)
            ):
                trends[name].append(t)
    out = []
    for name, found in trends.items():
        found.sort(key=lambda t: (-t.growth_ms, who_order(t.who)))
        t = found[0]
        lines = [
            f"{who_text(x.who)}: {x.first:.0%} -> {x.last:.0%} of the step (fit r^2 "
            f"{x.r2:.2f}, {steps_text(x.steps)}); {name} {x.stage_ms[0]:,.1f} -> "
            f"{x.stage_ms[1]:,.1f} ms, step {x.steps_ms[0]:,.1f} -> {x.steps_ms[1]:,.1f} ms"
            for x in found
        ]
        advice = (
            "Responses getting longer as training goes on make generation grow: watch "
            "the response length, cap it (max new tokens) or balance it across ranks."
            if name == GENERATE
            else "Something in this stage grows with the step (longer sequences, a cache or "
            "buffer that is never freed, memory fragmentation): capture it at an early "
            "and a late step and compare them (mindspeed-prof compare)."
        )
        held = [x.who for x in found]
        out.append(
            finding(
                result,
                held,
                rule="rl.growing_stage",
                title=f"{name}'s share of the step grew from {t.first:.0%} to {t.last:.0%} over "
                f"{steps_text(t.steps)} (+{t.growth_ms:,.1f} ms per step) on "
                f"{of_ranks(held)}",
                detail=detail(
                    lines,
                    "least-squares line through the stage's share of each step; growth: "
                    "its rise from the first step to the last, in ms of the mean step",
                ),
                suggestion=advice,
                share=t.last - t.first,
                impact_ms=t.growth_ms,
            )
        )
    return sorted(out, key=lambda f: -(f.impact_ms or 0.0))
