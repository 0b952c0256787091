"""Findings rules: the RL ledger (``analysis.ledger``, from ``prof.count`` counters), where
generation time goes on work that is not trained on, or on the long tail of responses.

- ``waste``: one finding per ledger line (dropped samples, zero-variance groups, truncated
  responses) whose share of generation time is at least ``WASTE_MEDIUM`` (high from
  ``WASTE_HIGH``), whose share is at least that in nearly every step too (``kept_share``: a
  one-off step's waste is not the run's) and whose seconds per step are over the noise
  floor;
- ``long_tail``: the share of generation after 95% of responses had finished, at least
  ``TAIL_MEDIUM`` (high from ``TAIL_HIGH``).

Each names its numbers (the counts, their share, the seconds per step) and what to change.
Thresholds are documented in ``docs/ledger.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.counts import GENERATE
from mindspeed_prof.analysis.findings.common import duration, files_text, severity
from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.ledger import LedgerLine, Tail
from mindspeed_prof.analysis.readers.labels import rank_order

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "ADVICE",
    "RULES",
    "TAIL_HIGH",
    "TAIL_MEDIUM",
    "WASTE_HIGH",
    "WASTE_MEDIUM",
    "long_tail",
    "waste",
]

#: A ledger line's share of generation time at which it is a finding (medium), then high.
WASTE_MEDIUM, WASTE_HIGH = 0.10, 0.25
#: The long tail's share of generation time at which it is a finding (medium), then high.
TAIL_MEDIUM, TAIL_HIGH = 0.25, 0.50

#: What to change, per ledger line.
ADVICE = {
    "dropped": "Filter before generation instead of after it: skip prompts whose recent "
    "groups were all solved or all failed (a pass-rate filter or curriculum), or "
    "give dynamic sampling a budget (generate in smaller batches until the train "
    "batch is full instead of over-generating a fixed multiple).",
    "zero_variance": "A group whose rewards are all equal has zero advantage and teaches "
    "nothing: raise the group size (more responses per prompt make variance "
    "likelier), filter prompts that are always solved or never solved "
    "before generation, or drop such groups early (DAPO's dynamic "
    "sampling) with a generation budget.",
    "truncated": "Responses cut at the length limit are the longest, and the step waits for "
    "them: raise max response length if they are truncated answers, or shape "
    "the reward against overlong responses (DAPO's overlong penalty) and mask "
    "them from the loss so the model learns to finish.",
}
TAIL_ADVICE = (
    "Generation waits for its longest responses: cap them (a lower max response "
    "length), use partial rollouts (stop at a token budget and continue the rest "
    "in the next step), or over-sample and drop the slowest responses so the batch "
    "ends when most have finished."
)


def _files(captures: Captures, tables: Tables, settings: Settings) -> str:
    held = [t for t in captures.traces if t.counters]
    return files_text(captures, held, "counters; actor_generate stage ranges")


def _ranks(captures: Captures, tables: Tables, settings: Settings) -> list[int | None]:
    return sorted({c.rank for c in tables.counted_counters}, key=rank_order)


def _step_ms(captures: Captures, tables: Tables, settings: Settings) -> float | None:
    step = tables.step_time
    return step.median_ms if step else None


def _per_step(seconds: float | None, steps: int) -> float | None:
    return seconds / steps if seconds is not None and steps else None


def _line_finding(
    captures: Captures,
    tables: Tables,
    settings: Settings,
    x: LedgerLine,
    generation_s: float | None,
) -> Finding | None:
    share = x.time_share if x.time_share is not None else x.share
    if share is None or share < WASTE_MEDIUM or (x.kept_share or 0.0) < WASTE_MEDIUM:
        return None
    per = _per_step(x.seconds, x.steps)
    if per is not None and per * 1000.0 < noise_floor(
        settings.noise_ms, _step_ms(captures, tables, settings)
    ):
        return None
    where = (
        "of generation time"
        if x.time_share is not None
        else "of the work generated (no actor_generate ranges to time it)"
    )
    seconds = (
        f" ({duration(per * 1000.0)} per step, {duration(x.seconds * 1000.0)} in {x.steps} "
        f"step{'s' * (x.steps != 1)})"
        if per is not None and x.seconds is not None
        else ""
    )
    detail = [
        f"{x.counter}: {x.count:,.0f} of {x.of:,.0f} {x.unit} ({x.share or 0.0:.0%}) "
        f"over {x.steps} step{'s' * (x.steps != 1)}"
    ]
    if x.seconds is not None and x.generation_s is not None:
        detail.append(
            f"{duration(x.seconds * 1000.0)} of {duration(x.generation_s * 1000.0)} of "
            f"{GENERATE} (each "
            "step's share of its count times its generation time, the mean over "
            "ranks)"
        )
    if x.note:
        detail.append(x.note)
    return Finding(
        rule=f"rl.{x.line}",
        title=f"{share:.0%} {where} went to {x.means}{seconds}: {x.count:,.0f} of "
        f"{x.of:,.0f} {x.unit}",
        detail="\n".join(detail),
        suggestion=ADVICE[x.line],
        severity=severity(share, WASTE_MEDIUM, WASTE_HIGH),
        impact_ms=per * 1000.0 if per is not None else None,
        source=_files(captures, tables, settings),
        ranks=_ranks(captures, tables, settings),
    )


def waste(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """One finding per ledger line whose share of generation time is large."""
    book = tables.ledger
    if book is None:
        return []
    found = [_line_finding(captures, tables, settings, x, book.generation_s) for x in book.lines]
    return [f for f in found if f is not None]


def _tail_finding(
    captures: Captures, tables: Tables, settings: Settings, t: Tail
) -> Finding | None:
    if t.share is None or t.share < TAIL_MEDIUM or not t.responses:
        return None
    per = _per_step(t.seconds, t.steps)
    if per is not None and per * 1000.0 < noise_floor(
        settings.noise_ms, _step_ms(captures, tables, settings)
    ):
        return None
    seconds = f" ({duration(per * 1000.0)} per step)" if per is not None else ""
    detail = [
        f"response_length over {t.steps} step{'s' * (t.steps != 1)}: {t.responses:,} "
        f"responses, p50 {t.p50:,.0f}, p95 {t.p95:,.0f}, p99 {t.p99:,.0f}, max "
        f"{t.max:,.0f}",
        "decode runs until the longest response ends: after 95% of responses have "
        "finished, (max - p95) / max of its iterations remain, each step's own, "
        "weighted by its generation time",
    ]
    if t.seconds is not None and t.generation_s is not None:
        detail.append(
            f"{duration(t.seconds * 1000.0)} of {duration(t.generation_s * 1000.0)} of {GENERATE}"
        )
    if t.note:
        detail.append(t.note)
    return Finding(
        rule="rl.long_tail",
        title=f"the longest 5% of responses hold {t.share:.0%} of generation time{seconds}: "
        f"length p50 {t.p50:,.0f}, p99 {t.p99:,.0f}, max {t.max:,.0f}",
        detail="\n".join(detail),
        suggestion=TAIL_ADVICE,
        severity=severity(t.share, TAIL_MEDIUM, TAIL_HIGH),
        impact_ms=per * 1000.0 if per is not None else None,
        source=_files(captures, tables, settings),
        ranks=_ranks(captures, tables, settings),
    )


def long_tail(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """The long tail of response lengths, where it holds much of generation."""
    book = tables.ledger
    if book is None or book.tail is None:
        return []
    found = _tail_finding(captures, tables, settings, book.tail)
    return [found] if found else []


#: This family's rules, in the order they run.
RULES: list[Rule] = [waste, long_tail]
