"""Findings rules: RL post-training loops, read from the step and stage ranges that
mindspeed-prof's own captures record (``prof.step``, ``prof.stage``; roles from each capture's
metadata).

- ``uncovered``: time in a step that no stage covers (weight sync, resharding, data
  dispatch): the step's length less the union of its stages, per rank;
- ``growing_stage``: one stage's share of the step growing over the steps (a least-squares
  trend);
- ``role_imbalance``: one role's stage time per step far above the other roles' (actor,
  reference, critic... on workers of their own);
- ``generation_tail``: the generation stage waiting for its slowest rank, step after step.

A difference is noise under ``stragglers.noise_floor`` (``--noise-ms``, or 1% of the step).
Warmup steps are left out unless ``include_warmup`` (``Analysis.counted``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import files_text, severity
from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.readers.device.breakdown import merge
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.readers.ranks import role_of
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.stragglers import noise_floor, step_times

if TYPE_CHECKING:
    from mindspeed_prof.analysis.analyse import Analysis

__all__ = ["GENERATE", "GROWTH_REL", "MIN_R2", "MIN_STEPS", "ROLE_MARGIN", "RULES",
           "generation_tail", "growing_stage", "role_imbalance", "uncovered"]

#: Shares of the step at which an RL finding is medium, then high.
MEDIUM_SHARE, HIGH_SHARE = 0.05, 0.20
#: A trend needs this many steps, a fit this good (r squared), and its growth over the steps
#: to be at least this share of where it started (and over the noise floor).
MIN_STEPS = 3
MIN_R2 = 0.5
GROWTH_REL = 0.2
#: A role is far above the others when its stage time per step exceeds the median of the
#: other roles' by this share (and the noise floor).
ROLE_MARGIN = 0.5
#: The generation stage.
GENERATE = "actor_generate"
#: The slowest rank of the generation tail is "the same" when it is so in this share of the
#: steps with a tail.
SAME_RANK = 0.75
DETAIL_LINES = 4

Who = tuple[int | None, str]  # rank, source


def _who(w: Who) -> str:
    return f"rank {rank_label(*w)}"


@dataclass
class _Step:
    """One rank's step: its own range (the longest, if several) and its stage ranges."""

    step: Range | None = None
    stages: list[Range] = field(default_factory=list)


def _steps(result: Analysis) -> dict[Who, dict[int, _Step]]:
    """Per rank (and source) and counted step, the step range and stage ranges."""
    out: dict[Who, dict[int, _Step]] = defaultdict(dict)
    for r in result.counted():
        if r.step is None or r.kind not in ("step", "stage") or r.dur < 0:
            continue
        s = out[(r.rank, r.source)].setdefault(r.step, _Step())
        if r.kind == "stage":
            s.stages.append(r)
        elif s.step is None or r.dur > s.step.dur:
            s.step = r
    return out


def _traces(result: Analysis) -> dict[Who, list[TraceData]]:
    out: dict[Who, list[TraceData]] = defaultdict(list)
    for t in result.traces:
        source = t.clash_label
        out[(t.rank, source if isinstance(source, str) else "")].append(t)
    return out


def _source(result: Analysis, who: list[Who], what: str = "step and stage ranges") -> str:
    traces = _traces(result)
    return files_text(result, [t for w in who for t in traces.get(w, [])], what)


def _ranks(who: list[Who]) -> list[int | None]:
    return sorted({w[0] for w in who}, key=rank_order)


def _of_ranks(hits: list[Who]) -> str:
    return f"{_who(hits[0])}" + (f" (of {len(hits)} ranks)" if len(hits) > 1 else "")


def _steps_text(steps: list[int]) -> str:
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {ranks_text(steps)}"


# -- (a) time no stage covers ---------------------------------------------------------------

def _gaps(step: Range, stages: list[Range]) -> tuple[float, dict[str, float]]:
    """The step's time (us) in no stage, and where it lies: ``before X``, ``between X and
    Y``, ``after Y`` (X, Y the stages either side)."""
    lo, hi = step.ts, step.ts + step.dur
    spans = sorted((max(r.ts, lo), min(r.ts + r.dur, hi), r.name) for r in stages
                   if r.ts < hi and r.ts + r.dur > lo)
    pieces: list[list] = []  # [start, end, first stage, the stage that ends it]
    for a, b, name in spans:
        if pieces and a <= pieces[-1][1]:
            if b > pieces[-1][1]:
                pieces[-1][1], pieces[-1][3] = b, name
        else:
            pieces.append([a, b, name, name])
    where: dict[str, float] = defaultdict(float)
    if not pieces:
        return step.dur, {"in the step": step.dur}
    if pieces[0][0] > lo:
        where[f"before {pieces[0][2]}"] += pieces[0][0] - lo
    for prev, nxt in zip(pieces, pieces[1:]):
        where[f"between {prev[3]} and {nxt[2]}"] += nxt[0] - prev[1]
    if hi > pieces[-1][1]:
        where[f"after {pieces[-1][3]}"] += hi - pieces[-1][1]
    covered = sum(b - a for a, b in merge([(p[0], p[1]) for p in pieces]))
    return step.dur - covered, dict(where)


def uncovered(result: Analysis) -> list[Finding]:
    """Per rank, the time in a step that none of its stages covers, where it is over the
    noise floor: weight sync, resharding, data dispatch and collection run there."""
    hits: list[tuple[float, Who, float, dict[str, float], list[int]]] = []
    for who, steps in _steps(result).items():
        rows = [(n, s) for n, s in sorted(steps.items()) if s.step is not None and s.stages]
        if not rows:
            continue
        gaps: dict[str, float] = defaultdict(float)
        left = 0.0
        for _, s in rows:
            assert s.step is not None
            us, where = _gaps(s.step, s.stages)
            left += us
            for k, v in where.items():
                gaps[k] += v
        n = len(rows)
        ms = left / n / 1000.0
        step_ms = sum(s.step.dur for _, s in rows if s.step) / n / 1000.0
        if step_ms > 0 and ms >= noise_floor(result.noise_ms, step_ms):
            hits.append((ms, who, step_ms, {k: v / n / 1000.0 for k, v in gaps.items()},
                         [k for k, _ in rows]))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], rank_order(h[1][0]), h[1][1]))
    ms, _, step_ms, gaps, _ = hits[0]
    place, place_ms = max(gaps.items(), key=lambda kv: (kv[1], kv[0]))
    lines = []
    for m, w, s_ms, g, st in hits[:DETAIL_LINES]:
        parts = ", ".join(f"{k} {v:,.1f}" for k, v in sorted(g.items(), key=lambda kv: -kv[1])
                          if v > 0)
        lines.append(f"{_who(w)}: {m:,.1f} of {s_ms:,.1f} ms per step ({_steps_text(st)}) in "
                     f"no stage: {parts} ms")
    if len(hits) > DETAIL_LINES:
        lines.append(f"... and {len(hits) - DETAIL_LINES} more ranks")
    lines.append("the step's own range less the union of its stage ranges")
    share = ratio(ms, step_ms, 0.0)
    return [Finding(
        rule="rl.uncovered",
        title=f"{ms:,.1f} ms per step ({share:.0%} of the step) is in no stage on "
              f"{_of_ranks([h[1] for h in hits])}: most {place} ({place_ms:,.1f} ms)",
        detail="\n".join(lines),
        suggestion="Name what runs there (weight sync to the rollout engine, resharding, "
                   "data dispatch and collection, logging): wrap it in mstx.range or record it "
                   "as a stage, then shrink or overlap it (bucketed or colocated weight sync, "
                   "asynchronous dispatch).",
        severity=severity(share, MEDIUM_SHARE, HIGH_SHARE), impact_ms=ms,
        source=_source(result, [h[1] for h in hits]),
        ranks=_ranks([h[1] for h in hits]))]


# -- (b) a stage's share growing over the steps ---------------------------------------------

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
    for who, steps in _steps(result).items():
        shares: dict[str, list[tuple[int, float, float, float]]] = defaultdict(list)
        for n, s in sorted(steps.items()):
            if s.step is None or s.step.dur <= 0:
                continue
            per: dict[str, float] = defaultdict(float)
            for r in s.stages:
                per[r.name] += r.dur
            for name, us in per.items():
                shares[name].append((n, ratio(us, s.step.dur, 0.0), us / 1000.0,
                                     s.step.dur / 1000.0))
        for name, points in shares.items():
            if len(points) < MIN_STEPS:
                continue
            xs, ys = [float(p[0]) for p in points], [p[1] for p in points]
            a, b, r2 = _fit(xs, ys)
            # the fitted line at the first and last step: a share, so within 0-100%
            first, last = (min(max(a + b * x, 0.0), 1.0) for x in (xs[0], xs[-1]))
            step_ms = statistics.fmean(p[3] for p in points)
            t = _Trend(who, [p[0] for p in points], first, last, r2, step_ms,
                       (points[0][2], points[-1][2]), (points[0][3], points[-1][3]))
            if (b > 0 and r2 >= MIN_R2 and t.growth_ms >= noise_floor(result.noise_ms, step_ms)
                    and last - first >= GROWTH_REL * max(first, 0.0)):
                trends[name].append(t)
    out = []
    for name, found in trends.items():
        found.sort(key=lambda t: (-t.growth_ms, rank_order(t.who[0]), t.who[1]))
        t = found[0]
        lines = [f"{_who(x.who)}: {x.first:.0%} -> {x.last:.0%} of the step (fit r^2 "
                 f"{x.r2:.2f}, {_steps_text(x.steps)}); {name} {x.stage_ms[0]:,.1f} -> "
                 f"{x.stage_ms[1]:,.1f} ms, step {x.steps_ms[0]:,.1f} -> {x.steps_ms[1]:,.1f} ms"
                 for x in found[:DETAIL_LINES]]
        if len(found) > DETAIL_LINES:
            lines.append(f"... and {len(found) - DETAIL_LINES} more ranks")
        lines.append("least-squares line through the stage's share of each step; growth: "
                     "its rise from the first step to the last, in ms of the mean step")
        advice = ("Responses getting longer as training goes on make generation grow: watch "
                  "the response length, cap it (max new tokens) or balance it across ranks."
                  if name == GENERATE else
                  "Something in this stage grows with the step (longer sequences, a cache or "
                  "buffer that is never freed, memory fragmentation): capture it at an early "
                  "and a late step and compare them (mindspeed-prof compare).")
        held = [x.who for x in found]
        out.append(Finding(
            rule="rl.growing_stage",
            title=f"{name}'s share of the step grew from {t.first:.0%} to {t.last:.0%} over "
                  f"{_steps_text(t.steps)} (+{t.growth_ms:,.1f} ms per step) on "
                  f"{_of_ranks(held)}",
            detail="\n".join(lines), suggestion=advice,
            severity=severity(t.last - t.first, MEDIUM_SHARE, HIGH_SHARE),
            impact_ms=t.growth_ms, source=_source(result, held), ranks=_ranks(held)))
    return sorted(out, key=lambda f: -(f.impact_ms or 0.0))


# -- (c) imbalance between roles ------------------------------------------------------------

def role_imbalance(result: Analysis) -> list[Finding]:
    """A role whose stage time per step (median over its ranks, then over the steps every
    role recorded) exceeds the median of the other roles' by ``ROLE_MARGIN`` and the noise
    floor: where roles run on workers of their own, the others wait for it."""
    roles: dict[Who, str] = {}
    for who, traces in _traces(result).items():
        named = {role_of(t) for t in traces} - {""}
        if len(named) == 1:
            roles[who] = named.pop()
    per: dict[str, dict[int, dict[Who, float]]] = defaultdict(lambda: defaultdict(dict))
    by_stage: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for who, steps in _steps(result).items():
        role = roles.get(who)
        if role is None:
            continue
        for n, s in steps.items():
            if s.stages:
                per[role][n][who] = sum(r.dur for r in s.stages) / 1000.0
                for r in s.stages:
                    by_stage[role][r.name] += r.dur / 1000.0
    if len(per) < 2:
        return []
    common = sorted(set.intersection(*(set(v) for v in per.values())))
    if not common:
        return []
    ms = {role: statistics.median(statistics.median(per[role][n].values()) for n in common)
          for role in per}
    lengths = step_times(result.counted())
    step_ms = statistics.median(lengths[n] for n in common) if all(
        n in lengths for n in common) else None
    floor = noise_floor(result.noise_ms, step_ms)
    hits = []
    for role, v in ms.items():
        others = statistics.median(x for r, x in ms.items() if r != role)
        if others > 0 and v > others * (1 + ROLE_MARGIN) and v - others >= floor:
            hits.append((v - others, role, v, others))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], h[1]))
    excess, role, v, others = hits[0]
    rest = sorted(name for name in ms if name != role)
    lines = []
    for name in sorted(ms, key=lambda k: (-ms[k], k)):
        held = sorted({w for n in common for w in per[name][n]}, key=lambda w: (
            rank_order(w[0]), w[1]))
        total = sum(by_stage[name].values()) or 1.0
        stages = ", ".join(f"{stage} {ms[name] * x / total:,.1f}" for stage, x in sorted(
            by_stage[name].items(), key=lambda kv: -kv[1]))
        lines.append(f"{name}: {ms[name]:,.1f} ms per step in its stages ({stages}) on ranks "
                     f"{', '.join(rank_label(*w) for w in held)}")
    lines.append(f"median over each role's ranks, then over the {len(common)} steps every "
                 "role recorded; each role's stage ranges summed per step")
    share = ratio(excess, step_ms or v, 0.0)
    return [Finding(
        rule="rl.role_imbalance",
        title=f"role {role} spends {v:,.1f} ms per step in its stages against {others:,.1f} "
              f"ms for the other roles ({', '.join(rest)}): {ratio(v, others, 0.0):.1f}x, "
              f"{excess:+,.1f} ms",
        detail="\n".join(lines),
        suggestion=f"Rebalance devices between roles: give {role} more devices (a larger "
                   "data-parallel size or micro-batch), put the lighter roles on fewer devices "
                   f"or colocate them with {role}, or run the roles asynchronously so the "
                   "lighter ones do not wait.",
        severity=severity(share, MEDIUM_SHARE, HIGH_SHARE), impact_ms=excess,
        source=_source(result, [w for name in per for n in common for w in per[name][n]],
                       "stage ranges; roles from each capture's metadata"),
        ranks=_ranks([w for n in common for w in per[role][n]]))]


# -- (d) the generation long tail -----------------------------------------------------------

def generation_tail(result: Analysis) -> list[Finding]:
    """Steps in which ``GENERATE`` on its slowest rank exceeds the median of the other ranks
    by the straggler margin and the noise floor, where that holds for the median step: the
    generation phase waits for its longest rollout."""
    per: dict[int, dict[Who, float]] = defaultdict(lambda: defaultdict(float))
    for who, steps in _steps(result).items():
        for n, s in steps.items():
            for r in s.stages:
                if r.name == GENERATE:
                    per[n][who] += r.dur / 1000.0
    lengths = step_times(result.counted())
    rows = []  # step, slowest, its ms, the others' median, is a tail
    for n, by in sorted(per.items()):
        if len(by) < 2:
            continue
        slow = max(by, key=lambda w: (by[w], rank_order(w[0])))
        others = statistics.median(v for w, v in by.items() if w != slow)
        excess = by[slow] - others
        tail = (others > 0 and by[slow] > others * (1 + result.margin)
                and excess >= noise_floor(result.noise_ms, lengths.get(n)))
        rows.append((n, slow, by[slow], others, tail))
    if not rows:
        return []
    excesses = [r[2] - r[3] for r in rows]
    ratios = [ratio(r[2], r[3], float("inf")) for r in rows]
    mid = statistics.median(excesses)
    typical = statistics.median(lengths[r[0]] for r in rows if r[0] in lengths) if any(
        r[0] in lengths for r in rows) else None
    if not (statistics.median(ratios) > 1 + result.margin
            and mid >= noise_floor(result.noise_ms, typical)):
        return []
    tails = [r for r in rows if r[4]]
    if not tails:
        return []
    slowest = [r[1] for r in tails]
    top, count = max(((w, slowest.count(w)) for w in set(slowest)),
                     key=lambda wc: (wc[1], -rank_order(wc[0][0])[1]))
    same = count >= SAME_RANK * len(tails)
    lines = [f"step {n}: {_who(w)} {ms:,.1f} ms against {o:,.1f} ms on the others"
             for n, w, ms, o, t in tails[:DETAIL_LINES]]
    if len(tails) > DETAIL_LINES:
        lines.append(f"... and {len(tails) - DETAIL_LINES} more steps")
    lines.append(f"per step, {GENERATE} on its slowest rank against the median of the other "
                 "ranks")
    if same:
        where = f"mostly {_who(top)} ({count} of {len(tails)})"
        advice = (f"{_who(top).capitalize()} is the slowest in {count} of {len(tails)} steps: "
                  "a slow device or host rather than long rollouts; compare its capture with "
                  "another rank's (mindspeed-prof compare) or capture it at level1.")
    else:
        where = "the slowest rank varies (" + ", ".join(
            rank_label(*w) for w in sorted(set(slowest), key=lambda w: (
                rank_order(w[0]), w[1]))) + ")"
        advice = ("The longest rollouts hold every rank's generation: cap or bucket response "
                  "lengths, balance prompts across ranks by expected length, over-sample and "
                  "drop the slowest rollouts, or generate asynchronously (partial rollouts).")
    share = ratio(mid, typical, 0.0)
    return [Finding(
        rule="rl.generation_tail",
        title=f"{GENERATE} waits for its slowest rank: {statistics.median(ratios):.1f}x the "
              f"other ranks' median ({mid:+,.1f} ms) in {len(tails)} of {len(rows)} steps; "
              f"{where}",
        detail="\n".join(lines), suggestion=advice,
        severity=severity(share, MEDIUM_SHARE, HIGH_SHARE), impact_ms=mid,
        source=_source(result, sorted({w for by in per.values() for w in by},
                                      key=lambda w: (rank_order(w[0]), w[1])),
                       f"{GENERATE} stage ranges"),
        ranks=_ranks(slowest))]


#: This family's rules, in the order they run.
RULES: list[Rule] = [uncovered, growing_stage, role_imbalance, generation_tail]
