"""Judgement: the verdict and the findings measured like a classifier, on captures with a planted
cause and on healthy controls (``benchmarks/planted.py`` plants them).

Two sources, each run many times:

- synthetic captures (2 and 8 ranks, 4 and 8 steps, many seeds; a 21.5 ms step): each stage
  jitters 3% and stalls in 2% of its cells (1-3x its time), and in 2% of a rank's steps the
  rank stops outside every stage for 25-200% of the step; planted at a random stage and
  rank: nothing (healthy), one rank +25% of the step (straggler), +100% of the step on every
  rank (stage), +0.5 ms a step (growth), one rank +200% of the step in one step (stall), one
  rank 3 ms longer in a range while the others wait for it in a collective (victim);
- the demo trainer's worker, 2 ranks as 2 processes in step (a barrier per step), 12 captured
  steps, quiet and under load (a busy process on every core): nothing planted, rank 1 +30 ms in
  actor_generate, +80 ms in critic_compute_values on every rank, critic_update +8 ms a step,
  one +300 ms stall (rank 0, reference_compute_log_prob, step 5), 40% reward-constant groups
  (zero variance), the same with dynamic sampling (dropped), 5% long responses (long tail);
  the last three with generation 40 ms longer on every rank (it dominates an RL step: what it
  wastes is worth naming).

Each run is scored from ``analyse``'s report:

- false alarm: a healthy run with any ``high`` finding or a named straggler;
- miss: the planted cause is not the verdict's first answer (its first cause; a slow stage on
  every rank: the slowest stage with no straggler; a stall: no straggler, no high finding);
- mislocated: found, but at the wrong rank, stage or step (a stall: the one-off named);
- inconsistent: the verdict, Next and the findings do not agree (the first finding that costs
  time is the first cause; Next looks at the first cause's stage and rank; a named straggler is
  a finding of its own, and the slowest stage names no other rank);
- slope error: a growth's ms per step (the finding's: the median over its ranks) against the
  planted one;
- `compare --fail-over 0.05` (its default floor): on two healthy runs (a false alarm when it
  fails; the demo runs three healthy runs a seed for these pairs, each against the next), and
  on a healthy run against one with a stage slower on every rank (synthetic: +100% of the
  step, 21.5 ms; the demo: +80 ms; a miss when it does not name that stage).

Goals: false alarms 0 quiet, at most 5% under load; misses and mislocations at most 5%;
inconsistent answers 0; the worst slope error at most 20%. Each row says how many runs it
rests on.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.planted import DEMO, SYNTHETIC, Demo, Truth, load, synthetic
from benchmarks.report import Report

__all__ = ["Score", "run", "score"]

#: Synthetic runs shorter than this hold too few steps to tell one row's change among 14 or
#: more (``gate.steps_needed``): their gate is reported apart.
SHORT = 5
#: Healthy demo runs per seed of the planted ones: the gate's false alarms rest on their pairs.
HEALTHY = 3


@dataclass
class Score:
    """One run's marks (None: not asked of this scenario)."""

    false_alarm: bool | None = None
    miss: bool | None = None
    mislocated: bool | None = None
    inconsistent: bool = False
    slope_error: float | None = None
    why: list[str] = field(default_factory=list)


def _first(v: Any) -> tuple[str, str | None, int | None, int | None]:
    """The verdict's first answer: (rule, stage, rank, step)."""
    if v.causes:
        c = v.causes[0]
        stage = c.stage
        if c.rule == "ranks.straggler" and v.behind is not None:
            stage = v.behind.name
        return c.rule, stage, c.rank, c.step
    if v.slowest is not None:
        return "slowest", v.slowest.name, v.slowest.rank, None
    return "none", None, None, None


def _consistent(rep: Any) -> list[str]:
    """What in the report contradicts the verdict, one line each."""
    from mindspeed_prof.analysis.next_capture import target

    v, out = rep.verdict, []
    costed = [f for f in rep.findings if f.impact_ms and f.severity != "low"]
    if v.causes and (
        not costed or costed[0].rule != v.causes[0].rule or costed[0].title != v.causes[0].title
    ):
        out.append("the first finding that costs time is not the first cause")
    if v.behind is not None:
        said = [
            f for f in rep.findings if f.rule == "ranks.straggler" and f.ranks == [v.behind.rank]
        ]
        if not said:
            out.append("the named straggler has no finding")
    if (
        v.slowest is not None
        and v.slowest.rank is not None
        and (v.behind is None or v.behind.rank != v.slowest.rank)
    ):
        out.append("the slowest stage names a rank the straggler line does not")
    if v.next:
        want = target(v.causes[0] if v.causes else None, v.behind, v.slowest)
        text = " ".join(n.command + " " + n.why for n in v.next)
        if want.stage and want.stage not in text:
            out.append(f"Next does not look at {want.stage}")
        if (
            want.rank is not None
            and f"rank {want.rank}" not in text
            and f"--ranks {want.rank}" not in text
            and f"--detail {want.rank}" not in text
        ):
            out.append(f"Next does not look at rank {want.rank}")
    return out


def score(rep: Any, truth: Truth) -> Score:
    """The marks of one report against what was planted."""
    v = rep.verdict
    s = Score()
    high = [f.rule for f in rep.findings if f.severity == "high"]
    named = v.behind
    rule, stage, rank, step = _first(v)
    s.why = _consistent(rep)
    s.inconsistent = bool(s.why)
    kind = truth.scenario
    if kind == "healthy":
        s.false_alarm = bool(high) or named is not None
        if s.false_alarm:
            s.why.append(f"healthy: high {high}, straggler {named and (named.rank, named.name)}")
        return s
    if kind in ("straggler", "victim"):
        s.miss = rule != "ranks.straggler"
        s.mislocated = not s.miss and (rank, stage) != (truth.rank, truth.stage)
    elif kind == "stage":
        s.miss = named is not None or v.slowest is None or v.slowest.name != truth.stage
        s.mislocated = False
    elif kind == "growth":
        s.miss = rule != "rl.growing_stage"
        s.mislocated = not s.miss and stage != truth.stage
        grew = [g.slope_ms for g in rep.tables.growths if g.consistent and g.stage == truth.stage]
        if grew and truth.slope_ms:  # the slope the finding says: the median over its ranks
            s.slope_error = abs(statistics.median(grew) - truth.slope_ms) / truth.slope_ms
    elif kind == "stall":
        s.miss = named is not None or bool(high) or v.one_off is None
        g = v.one_off
        s.mislocated = (
            not s.miss
            and g is not None
            and (g.rank, g.name, g.step) != (truth.rank, truth.stage, truth.step)
        )
    else:  # the ledger's: the rule of the same name
        s.miss = rule != f"rl.{kind}"
        s.mislocated = False
    if s.miss or s.mislocated:
        s.why.append(f"{kind}: first {rule} at {stage} rank {rank} step {step}; planted {truth}")
    return s


@dataclass
class Tally:
    """Marks added up over runs."""

    runs: int = 0
    alarms: list[int] = field(default_factory=lambda: [0, 0])  # false alarms, healthy runs
    misses: list[int] = field(default_factory=lambda: [0, 0])
    mislocated: list[int] = field(default_factory=lambda: [0, 0])
    inconsistent: int = 0
    missed: dict[str, int] = field(default_factory=dict)
    gate_alarms: list[int] = field(default_factory=lambda: [0, 0])  # compare, same config
    gate_misses: list[int] = field(default_factory=lambda: [0, 0])  # compare, a slower stage
    gate_short: list[int] = field(default_factory=lambda: [0, 0, 0])  # named, warned, runs
    slope: list[float] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def add(self, s: Score, scenario: str) -> None:
        self.runs += 1
        if s.miss or s.mislocated or s.false_alarm:
            self.missed[scenario] = self.missed.get(scenario, 0) + 1
        for mark, into in (
            (s.false_alarm, self.alarms),
            (s.miss, self.misses),
            (s.mislocated, self.mislocated),
        ):
            if mark is not None:
                into[0] += mark
                into[1] += 1
        self.inconsistent += s.inconsistent
        if s.slope_error is not None:
            self.slope.append(s.slope_error)
        for key, bad in (
            ("alarm", s.false_alarm),
            ("miss", s.miss or s.mislocated),
            ("inconsistent", s.inconsistent),
        ):
            if bad and s.why:
                self.examples.setdefault(key, []).append("; ".join(s.why))


def _rate(pair: list[int]) -> float:
    return pair[0] / pair[1] if pair[1] else 0.0


def _figures(report: Report, where: str, t: Tally, alarm_goal: float) -> None:
    def ex(key: str) -> str:
        return f"; e.g. {t.examples[key][0]}" if key in t.examples else ""

    report.add(
        f"false alarms, {where}",
        f"{t.alarms[1]} healthy runs",
        _rate(t.alarms),
        alarm_goal,
        f"{t.alarms[0]} of {t.alarms[1]}{ex('alarm')}",
    )
    by = ", ".join(f"{k} {n}" for k, n in sorted(t.missed.items()))
    report.add(
        f"planted causes missed, {where}",
        f"{t.misses[1]} planted runs",
        _rate(t.misses),
        0.05,
        f"{t.misses[0]} of {t.misses[1]}{f' (by scenario: {by})' if by else ''}{ex('miss')}",
    )
    found = t.misses[1] - t.misses[0]
    report.add(
        f"planted causes mislocated, {where}",
        f"{found} found",
        _rate(t.mislocated),
        0.05,
        f"{t.mislocated[0]} of {t.mislocated[1]}",
    )
    report.add(
        f"inconsistent answers, {where}",
        f"{t.runs} runs",
        t.inconsistent / max(t.runs, 1),
        0.0,
        f"{t.inconsistent} of {t.runs}{ex('inconsistent')}",
    )
    if t.slope:
        report.add(
            f"growth slope error (worst), {where}",
            "the planted slope",
            max(t.slope),
            0.2,
            f"{len(t.slope)} growth runs",
        )
    if t.gate_alarms[1]:
        report.add(
            f"compare --fail-over 0.05 on one config twice, {where}",
            f"{t.gate_alarms[1]} pairs of healthy runs",
            _rate(t.gate_alarms),
            alarm_goal,
            f"{t.gate_alarms[0]} of {t.gate_alarms[1]} failed{ex('gate alarm')}",
        )
    if t.gate_misses[1]:
        report.add(
            f"compare --fail-over 0.05 missing a stage slower on every rank, {where}",
            f"{t.gate_misses[1]} pairs",
            _rate(t.gate_misses),
            0.05,
            f"{t.gate_misses[0]} of {t.gate_misses[1]}",
        )
    if t.gate_short[2]:
        named, warned, runs = t.gate_short
        report.add(
            f"compare --fail-over 0.05 naming a stage slower on every rank, {where}, "
            f"runs of fewer than {SHORT} steps",
            f"{runs} pairs",
            named / runs,
            None,
            f"{named} of {runs} named it; {warned} of {runs} said how many steps the gate needs",
        )


def _synthetic(seeds: int) -> Tally:
    from mindspeed_prof.analysis.report.report import report as make_report

    t = Tally()
    for ranks in (2, 8):
        for steps in (4, 8):
            for scenario in SYNTHETIC:
                if scenario == "growth" and steps < 8:
                    continue  # a trend needs 7 steps at least
                for seed in range(seeds):
                    result, truth = synthetic(scenario, ranks, steps, seed * 1000 + ranks + steps)
                    t.add(score(make_report(result), truth), scenario)
            _synthetic_gate(t, ranks, steps, seeds)
    return t


def _synthetic_gate(t: Tally, ranks: int, steps: int, seeds: int) -> None:
    """``compare``'s gate on synthetic runs: two healthy runs (other seeds), and a healthy run
    against one with a stage slower on every rank (+100% of the step)."""
    from mindspeed_prof.analysis.compare import compare_runs, few_steps, side_of, slower_than

    def said(a: Any, b: Any) -> tuple[list[str], bool]:
        found = compare_runs(side_of(a), side_of(b))
        return slower_than(found, 0.05), few_steps(found, 0.05) is not None

    for seed in range(seeds):
        base = seed * 1000 + ranks + steps
        a, _ = synthetic("healthy", ranks, steps, base)
        b, _ = synthetic("healthy", ranks, steps, base + 500)
        alarm, _ = said(a, b)
        t.gate_alarms[0] += bool(alarm)
        t.gate_alarms[1] += 1
        if alarm:
            t.examples.setdefault("gate alarm", []).append(alarm[0])
        slow, truth = synthetic("stage", ranks, steps, base + 500)
        lines, short = said(a, slow)
        named = any(f"stage {truth.stage!r}" in line for line in lines)
        if steps < SHORT:  # too few steps to tell one row among this many: said, not a miss
            t.gate_short[0] += named
            t.gate_short[1] += short
            t.gate_short[2] += 1
        else:
            t.gate_misses[0] += not named
            t.gate_misses[1] += 1


def _demo(seeds: int, scenarios: Iterable[str], busy: int) -> Tally:
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.report.report import report as make_report

    t = Tally()
    root = Path(tempfile.mkdtemp())
    demo = Demo(2)
    try:
        with load(busy):
            for seed in range(HEALTHY * seeds):
                for scenario in scenarios if seed < seeds else ("healthy",):
                    out = root / f"{scenario}-{seed}"
                    truth = demo.run(scenario, seed, out)
                    t.add(score(make_report(analyse(out, cache=False)), truth), scenario)
        _gate(t, root, seeds, scenarios)
    finally:
        demo.close()
        shutil.rmtree(root, ignore_errors=True)
    return t


def _gate(t: Tally, root: Path, seeds: int, scenarios: Iterable[str]) -> None:
    """``compare --fail-over 0.05`` (its default floor) on two healthy runs of one config (a
    false alarm when it names anything slower), and on a healthy run against the run with a
    stage 80 ms slower on every rank (a miss when it does not name that stage)."""
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.compare import compare_runs, side_of, slower_than

    def slower(a: Path, b: Path) -> list[str]:
        return slower_than(
            compare_runs(side_of(analyse(a, cache=False)), side_of(analyse(b, cache=False))), 0.05
        )

    healthy = HEALTHY * seeds if "healthy" in scenarios else 0
    for seed in range(healthy):
        a = root / f"healthy-{seed}"
        b = root / f"healthy-{(seed + 1) % healthy}"
        if healthy > 1:
            said = slower(a, b)
            t.gate_alarms[0] += bool(said)
            t.gate_alarms[1] += 1
            if said:
                t.examples.setdefault("gate alarm", []).append(said[0])
        if "stage" in scenarios and seed < seeds:
            said = slower(a, root / f"stage-{seed}")
            t.gate_misses[0] += not any("critic_compute_values" in line for line in said)
            t.gate_misses[1] += 1


def run(report: Report) -> None:
    quick = report.quick
    load_now = os.getloadavg()[0]
    _figures(
        report,
        f"synthetic, 2 and 8 ranks (load {load_now:.1f})",
        _synthetic(1 if quick else 40),
        0.0,
    )
    scenarios = ("healthy", "straggler") if quick else DEMO
    seeds = 1 if quick else 4
    _figures(
        report, f"demo, quiet (load {os.getloadavg()[0]:.1f})", _demo(seeds, scenarios, 0), 0.0
    )
    if not quick:
        busy = os.cpu_count() or 2
        _figures(
            report,
            f"demo, {busy} busy processes (load {os.getloadavg()[0]:.1f})",
            _demo(seeds, scenarios, busy),
            0.05,
        )


def main() -> None:  # pragma: no cover - a quick look by hand
    r = Report(quick=True)
    r.group = "judgement"
    run(r)
    for f in r.figures:
        print(f.line())


if __name__ == "__main__":
    main()
