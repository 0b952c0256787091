"""``rl.generation_tail``: the generation stage waiting for its slowest rank, a different rank
from step to step: the longest rollouts hold every rank. (One rank slowest in most steps is a
straggler: ``ranks.straggler`` names it.)

Per step, the slowest rank's generation less the other ranks' median is the wait. It is a
finding when, over at least ``MIN_STEPS`` steps, the wait kept in nearly every step (as a
straggler's lag is judged: ``judgement.lag.least``, one step in four let off) is over the
floor, over the margin of the others' time and ``TAIL_NOISE`` times the row's noise
(``judgement.lag.row_noise``: the spread of one rank's generation against the others' once
each rank's and step's own time is taken out, which a tail that moves from rank to rank leaves
as outliers), and no rank is the slowest in ``SAME_RANK`` of those steps. Its cost is the
median wait."""

from __future__ import annotations

import statistics
from collections import Counter
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import detail, finding
from mindspeed_prof.analysis.findings.rl.steps import GENERATE
from mindspeed_prof.analysis.judgement.cells import by_name, ranked, who_order, who_text
from mindspeed_prof.analysis.judgement.lag import least, row_noise
from mindspeed_prof.analysis.judgement.noise import MIN_STEPS, noise_floor
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["SAME_RANK", "TAIL_NOISE", "generation_tail"]


#: A tail names no rank: none is the slowest in this share of its steps (else it is a
#: straggler's).
SAME_RANK = 0.75
#: The wait must be this many times the row's noise.
TAIL_NOISE = 3.0


def generation_tail(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Steps in which ``GENERATE`` waits for a slowest rank that changes from step to step, by
    more than the row's noise, the floor and the margin (``rl.generation_tail``)."""
    if not ranked(tables.counted, "stage"):  # one rank: no other to wait for
        return []
    # the steps two ranks or more ran it (all the rule and ``row_noise`` compare)
    stages = by_name(tables.counted, "stage")
    cells = stages.multi(GENERATE) if GENERATE in stages else {}
    rows = []  # step, slowest, its ms, the others' median
    for n, by in sorted(cells.items()):
        if len(by) >= 2:
            slow = max(by, key=lambda w: (by[w], [-x for x in who_order(w)[0]]))
            rows.append(
                (n, slow, by[slow], statistics.median(v for w, v in by.items() if w != slow))
            )
    if len(rows) < MIN_STEPS:
        return []
    step = tables.step_time
    floor = noise_floor(settings.noise_ms, step.median_ms if step else None)
    noise = row_noise(cells)
    waits = sorted(ms - o for _, _, ms, o in rows)
    mid, others = statistics.median(waits), statistics.median(o for *_, o in rows)
    kept = waits[least(len(waits)) - 1]
    count = Counter(w for _, w, _, _ in rows)
    top, most = min(count.items(), key=lambda kv: (-kv[1], who_order(kv[0])))
    if (
        kept < floor
        or kept < settings.margin * others
        or kept < TAIL_NOISE * noise
        or most >= SAME_RANK * len(rows)
    ):
        return []
    lines = [
        f"step {n}: {who_text(w)} {ms:,.1f} ms against {o:,.1f} ms on the others"
        for n, w, ms, o in rows
    ]
    slowest = sorted(count, key=who_order)
    return [
        finding(
            captures,
            tables,
            settings,
            sorted({w for by in cells.values() for w in by}, key=who_order),
            rule="rl.generation_tail",
            title=f"{GENERATE} waits for its slowest rank: {mid:+,.1f} ms per step (median of "
            f"{len(rows)} steps, {ratio(mid + others, others, 0.0):.1f}x the others), and the "
            "slowest rank changes (" + ", ".join(rank_label(*w) for w in slowest) + ")",
            detail=detail(
                lines,
                f"per step, {GENERATE} on its slowest rank against the median of the other "
                f"ranks; the row's noise {noise:,.2f} ms; no rank is the slowest in more than "
                f"{most} of {len(rows)} steps",
                of="steps",
            ),
            suggestion=(
                "The longest rollouts hold every rank's generation: cap or bucket response "
                "lengths, balance prompts across ranks by expected length, over-sample and "
                "drop the slowest rollouts, or generate asynchronously (partial rollouts)."
            ),
            share=ratio(mid, step.median_ms, 0.0) if step else 0.0,
            impact_ms=mid,
            what=f"{GENERATE} stage ranges",
            ranks=slowest,
            stage=GENERATE,
        )
    ]
