"""``rl.generation_tail``: the generation stage waiting for its slowest rank, step after step."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding
from mindspeed_prof.analysis.findings.rl.steps import GENERATE, Who, steps_of, who_order, who_text
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.stragglers import noise_floor, step_times

if TYPE_CHECKING:
    from mindspeed_prof.analysis.result import Analysis

__all__ = ["SAME_RANK", "generation_tail"]


#: The slowest rank of the generation tail is "the same" when it is so in this share of the
#: steps with a tail.
SAME_RANK = 0.75


def generation_tail(result: Analysis) -> list[Finding]:
    """Steps in which ``GENERATE`` on its slowest rank exceeds the median of the other ranks
    by the straggler margin and the noise floor, where that holds for the median step: the
    generation phase waits for its longest rollout."""
    per: dict[int, dict[Who, float]] = defaultdict(lambda: defaultdict(float))
    for who, steps in steps_of(result).items():
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
        tail = (
            others > 0
            and by[slow] > others * (1 + result.margin)
            and excess >= noise_floor(result.noise_ms, lengths.get(n))
        )
        rows.append((n, slow, by[slow], others, tail))
    if not rows:
        return []
    excesses = [r[2] - r[3] for r in rows]
    ratios = [ratio(r[2], r[3], float("inf")) for r in rows]
    mid = statistics.median(excesses)
    typical = (
        statistics.median(lengths[r[0]] for r in rows if r[0] in lengths)
        if any(r[0] in lengths for r in rows)
        else None
    )
    if not (
        statistics.median(ratios) > 1 + result.margin
        and mid >= noise_floor(result.noise_ms, typical)
    ):
        return []
    tails = [r for r in rows if r[4]]
    if not tails:
        return []
    slowest = [r[1] for r in tails]
    top, count = max(
        ((w, slowest.count(w)) for w in set(slowest)),
        key=lambda wc: (wc[1], -rank_order(wc[0][0])[1]),
    )
    same = count >= SAME_RANK * len(tails)
    lines = [
        f"step {n}: {who_text(w)} {ms:,.1f} ms against {o:,.1f} ms on the others"
        for n, w, ms, o, t in tails
    ]
    if same:
        where = f"mostly {who_text(top)} ({count} of {len(tails)})"
        advice = (
            f"{who_text(top).capitalize()} is the slowest in {count} of {len(tails)} steps: "
            "a slow device or host rather than long rollouts; compare its capture with "
            "another rank's (mindspeed-prof compare) or capture it at level1."
        )
    else:
        where = (
            "the slowest rank varies ("
            + ", ".join(rank_label(*w) for w in sorted(set(slowest), key=who_order))
            + ")"
        )
        advice = (
            "The longest rollouts hold every rank's generation: cap or bucket response "
            "lengths, balance prompts across ranks by expected length, over-sample and "
            "drop the slowest rollouts, or generate asynchronously (partial rollouts)."
        )
    share = ratio(mid, typical, 0.0)
    return [
        finding(
            result,
            sorted({w for by in per.values() for w in by}, key=who_order),
            rule="rl.generation_tail",
            title=f"{GENERATE} waits for its slowest rank: {statistics.median(ratios):.1f}x the "
            f"other ranks' median ({mid:+,.1f} ms) in {len(tails)} of {len(rows)} steps; "
            f"{where}",
            detail=detail(
                lines,
                f"per step, {GENERATE} on its slowest rank against the median of the other ranks",
                of="steps",
            ),
            suggestion=advice,
            share=share,
            impact_ms=mid,
            what=f"{GENERATE} stage ranges",
            ranks=slowest,
        )
    ]
