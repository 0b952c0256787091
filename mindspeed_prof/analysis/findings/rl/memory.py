"""``rl.memory_growth``: a stage's peak memory rising step over step (a tensor kept across
steps, a cache never freed, fragmentation), from the stage memory counters (``stage_memory``),
judged as stage time's growth is (``judgement.growth``): the Mann-Kendall test over every stage
and rank at once (Holm's correction at ``ALPHA``), on at least ``MIN_TREND_STEPS`` steps, the
Theil-Sen slope its MiB per step."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding, of_ranks, steps_text
from mindspeed_prof.analysis.findings.rl.steps import Who, who_order, who_text
from mindspeed_prof.analysis.judgement.growth import MIN_TREND_STEPS
from mindspeed_prof.analysis.judgement.noise import ALPHA
from mindspeed_prof.analysis.ranges import stage_order
from mindspeed_prof.stats.multiple import holm
from mindspeed_prof.stats.trend import Trend, trend

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["MEMORY_COUNTERS", "MIN_GROWTH_BYTES", "MIN_GROWTH_REL", "memory_growth"]

#: The counters read: a device's peak allocated bytes, else a host's peak resident set.
MEMORY_COUNTERS = ("memory_peak_allocated_bytes", "memory_peak_rss_bytes")
#: A trend must grow at least this much over its steps (and this share of where it started).
MIN_GROWTH_BYTES, MIN_GROWTH_REL = float(1 << 20), 0.02
MIB = float(1 << 20)


def _series(
    captures: Captures, tables: Tables, settings: Settings
) -> dict[tuple[str, str], dict[Who, dict[int, float]]]:
    """Per (counter, stage), rank and step: the stage's peak in that step (its largest
    execution's)."""
    out: dict[tuple[str, str], dict[Who, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for c in tables.counted_counters:
        if c.name not in MEMORY_COUNTERS or c.step is None or c.stage is None:
            continue
        peaks = [*(c.values or []), *([c.value] if c.value is not None else [])]
        if peaks:
            by_step = out[(c.name, c.stage)][(c.rank, c.source)]
            by_step[c.step] = max(by_step.get(c.step, 0.0), max(peaks))
    return out


def memory_growth(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Per counter, the stages and ranks whose peak rises over at least ``MIN_TREND_STEPS``
    steps, by a Mann-Kendall trend that clears ``ALPHA`` over every series tested (Holm) and a
    Theil-Sen growth over the steps of ``MIN_GROWTH_BYTES`` and ``MIN_GROWTH_REL`` of its first
    value: one finding per counter (memory held across steps raises every later stage's peak
    alike), the steepest first."""
    tested: list[tuple[str, str, Who, Trend, list[int], dict[int, float]]] = []
    for (name, stage), ranks in sorted(_series(captures, tables, settings).items()):
        for who, by_step in ranks.items():
            steps = sorted(by_step)
            if len(steps) >= MIN_TREND_STEPS:
                t = trend([float(s) for s in steps], [by_step[s] for s in steps])
                tested.append((name, stage, who, t, steps, by_step))
    hits: dict[str, list[tuple[float, str, Who, Trend, list[int], dict[int, float]]]] = defaultdict(
        list
    )
    for (name, stage, who, t, steps, by_step), real in zip(
        tested, holm([x[3].p_up for x in tested], ALPHA), strict=True
    ):
        grown = t.slope * (steps[-1] - steps[0])
        if real and grown >= max(MIN_GROWTH_BYTES, MIN_GROWTH_REL * by_step[steps[0]]):
            hits[name].append((t.slope, stage, who, t, steps, by_step))
    out = []
    for name, found in hits.items():
        found.sort(key=lambda h: (-h[0], who_order(h[2]), stage_order(h[1])))
        slope, stage, _, t, steps, by_step = found[0]
        held = sorted({h[2] for h in found}, key=who_order)
        stages = sorted({h[1] for h in found})
        lines = [
            f"{who_text(w)} {st}: {bs[sp[0]] / MIB:,.1f} -> {bs[sp[-1]] / MIB:,.1f} MiB over "
            f"{steps_text(sp)}, {tr.slope / MIB:+,.2f} MiB per step (Theil-Sen), "
            f"Mann-Kendall p={tr.p_up:.2g}"
            for _, st, w, tr, sp, bs in found
        ]
        grown = slope * (steps[-1] - steps[0])
        where = f"in {len(stages)} stages, most {stage}" if len(stages) > 1 else f"in {stage}"
        out.append(
            finding(
                captures,
                tables,
                settings,
                held,
                rule="rl.memory_growth",
                title=f"peak memory grows {slope / MIB:,.2f} MiB per step on {of_ranks(held)} "
                f"{where}: {by_step[steps[0]] / MIB:,.1f} -> {by_step[steps[-1]] / MIB:,.1f} "
                f"MiB over {steps_text(steps)} (p={t.p_up:.2g})",
                detail=detail(lines, f"{name} per step (its largest execution's)", of="stages"),
                suggestion="Something allocated in a step outlives it (a tensor kept with its "
                "graph, a list or cache never cleared, fragmentation); the first stage whose "
                "peak grows is where to look: record the allocator's history over a few "
                "steps (memory_window_steps with profile_with_memory) and compare where the "
                "growth is allocated; oom_snapshot keeps a snapshot if it runs out.",
                # severity from the growth over the steps, a share of where it started
                share=min(grown / max(by_step[steps[0]], 1.0), 1.0),
                impact_ms=0.0,
                what=f"{name} counters",
            )
        )
    return out
