"""The RL ledger: how much of the generation stage's time went on work that was not trained
on, and how much on the long tail of responses (``docs/ledger.md``).

Per counted step (warmup left out), the counters of every rank and stage are pooled, and the
step's generation time is the mean over ranks of each rank's ``actor_generate`` time in it (the
time a generation rank spends generating). Each line is a share of the step's work, turned into
seconds of that step's generation time, then summed over the steps:

- ``dropped``: ``samples_dropped / (samples_kept + samples_dropped)`` (DAPO's dynamic
  sampling, any filter after generation);
- ``zero_variance``: ``groups_zero_variance / groups`` (GRPO's advantage is 0 in a group
  whose rewards are all equal: nothing to learn from);
- ``truncated``: ``responses_truncated / responses`` (``responses``, else the number of
  ``response_length`` values, else the samples kept and dropped);
- the tail, from ``response_length``: p50, p95, p99, max, and ``(max - p95) / max``, the share
  of generation after 95% of responses had finished (decode runs until the longest response
  ends; under a constant time per decode iteration, its last ``max - p95`` iterations serve
  only the longest 5%).

A step whose counts cannot be a share (a part over its whole, a negative count) is left out
of that line, which names it. The lines may overlap (a filter that drops exactly the
zero-variance groups): they are not added up.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from mindspeed_prof.analysis.counts import GENERATE, CounterRow, percentile
from mindspeed_prof.analysis.judgement.lag import least
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.rows import Row

__all__ = ["LEDGER_NAMES", "LINES", "Ledger", "LedgerLine", "Tail", "ledger", "line_of", "tail_of"]

#: (line, numerator, what it is a share of, unit, what the line means)
LINES = (
    ("dropped", "samples_dropped", "samples", "samples", "samples dropped after generation"),
    (
        "zero_variance",
        "groups_zero_variance",
        "groups",
        "groups",
        "groups with zero reward variance",
    ),
    (
        "truncated",
        "responses_truncated",
        "responses",
        "responses",
        "responses cut at the length limit",
    ),
)
#: The counters any ledger line reads: one of them recorded makes a ledger.
LEDGER_NAMES = frozenset(
    {"samples_dropped", "groups_zero_variance", "responses_truncated", "response_length"}
)
#: Steps named in a line's note, at most.
NOTE_STEPS = 3


class LedgerLine(Row, kw_only=True):
    """One kind of waste over the steps that counted it: ``count`` of ``of`` (``share``, 0-1),
    ``seconds`` of the ``generation_s`` of those steps (``time_share``, 0-1; None where no
    step has generation time), ``steps`` counted, ``kept_share``: the share it keeps in
    nearly every step (``judgement.lag.least``: one step in four let off; a one-off step's
    waste is not the run's), ``note``: steps left out and why."""

    line: str
    counter: str
    unit: str
    means: str
    count: float = 0.0
    of: float = 0.0
    share: float | None = None
    seconds: float | None = None
    generation_s: float | None = None
    time_share: float | None = None
    steps: int = 0
    kept_share: float | None = None
    note: str | None = None


class Tail(Row, kw_only=True):
    """The response lengths of the counted steps: how many, p50/p95/p99/max over all of them,
    and ``share`` the time-weighted mean over steps of ``(max - p95) / max`` (each step's own),
    ``seconds`` of the ``generation_s`` of those steps (None where none has generation time);
    ``note``: steps left out and why."""

    responses: int = 0
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    share: float | None = None
    seconds: float | None = None
    generation_s: float | None = None
    steps: int = 0
    note: str | None = None


class Ledger(Row, kw_only=True):
    """The lines with counts (``LINES``), the tail (None without ``response_length``), and the
    generation time of the counted steps (``generation_s``; None: no ``actor_generate``
    ranges) over ``steps``."""

    steps: int = 0
    generation_s: float | None = None
    lines: list[LedgerLine] = []
    tail: Tail | None = None


def _generation(ranges: Sequence[Range]) -> dict[int | None, float]:
    """Per step, the mean over ranks of each rank's ``actor_generate`` seconds."""
    per: dict[int | None, dict[tuple[int | None, str], float]] = defaultdict(
        lambda: defaultdict(float)
    )
    for r in ranges:
        if r.kind == "stage" and r.name == GENERATE:
            per[r.step][(r.rank, r.source)] += r.dur / 1e6
    return {s: statistics.fmean(by.values()) for s, by in per.items()}


def _pooled(rows: list[CounterRow]) -> dict[int | None, dict[str, CounterRow]]:
    """Per step, each counter's rows over ranks and stages as one row."""
    out: dict[int | None, dict[str, CounterRow]] = defaultdict(dict)
    for c in rows:
        have = out[c.step].get(c.name)
        if have is None:
            out[c.step][c.name] = CounterRow(
                rank=None,
                step=c.step,
                name=c.name,
                value=c.value,
                calls=c.calls,
                values=list(c.values) if c.values else None,
            )
        else:
            if c.value is not None:
                have.value = (have.value or 0.0) + c.value
                have.calls += c.calls
            if c.values:  # ``have`` holds its own list: extended in place
                if have.values is None:
                    have.values = list(c.values)
                else:
                    have.values.extend(c.values)
    return out


def _whole(line: str, counts: dict[str, CounterRow]) -> float | None:
    """What a line's count is a share of in one step (None: not recorded)."""
    if line == "dropped":
        parts = [counts[n].total for n in ("samples_kept", "samples_dropped") if n in counts]
        return sum(parts) if "samples_kept" in counts else None
    if line == "zero_variance":
        return counts["groups"].total if "groups" in counts else None
    if "responses" in counts:
        return counts["responses"].total
    if "response_length" in counts and counts["response_length"].values:
        return float(len(counts["response_length"].values or []))
    if "samples_kept" in counts:
        return sum(counts[n].total for n in ("samples_kept", "samples_dropped") if n in counts)
    return None


def _steps_text(bad: list[str]) -> str:
    more = f"; and {len(bad) - NOTE_STEPS} more steps" if len(bad) > NOTE_STEPS else ""
    return "; ".join(bad[:NOTE_STEPS]) + more


def _label(step: int | None) -> str:
    return "outside the steps" if step is None else f"step {step}"


def line_of(
    spec: tuple[str, str, str, str, str],
    steps: dict[int | None, dict[str, CounterRow]],
    generation: dict[int | None, float],
) -> LedgerLine | None:
    """One ledger line over the steps that record its counter (None: no step does)."""
    line, counter, whole_name, unit, means = spec
    out = LedgerLine(line=line, counter=counter, unit=unit, means=means)
    bad: list[str] = []
    seconds = gen = 0.0
    timed = False
    each: list[float] = []
    for step in sorted(steps, key=lambda s: (s is None, s or 0)):
        counts = steps[step]
        if counter not in counts:
            continue
        n, d = counts[counter].total, _whole(line, counts)
        if d is None:
            bad.append(f"{_label(step)}: {counter} without {whole_name}")
            continue
        if n < 0 or d < 0 or n > d:
            bad.append(f"{_label(step)}: {counter} {n:,.0f} of {whole_name} {d:,.0f}")
            continue
        if d == 0:
            continue
        out.steps += 1
        out.count += n
        out.of += d
        each.append(n / d)
        if step in generation:
            timed = True
            seconds += n / d * generation[step]
            gen += generation[step]
    if not out.steps and not bad:
        return None
    if bad:
        out.note = f"left out: {_steps_text(bad)} (a count over its whole, or no whole)"
    if out.of > 0:
        out.share = min(out.count / out.of, 1.0)
    if each:
        out.kept_share = min(sorted(each)[least(len(each)) - 1], 1.0)
    if timed:
        out.seconds, out.generation_s = min(seconds, gen), gen
        out.time_share = min(seconds / gen, 1.0) if gen > 0 else 0.0
    return out


def tail_of(
    steps: dict[int | None, dict[str, CounterRow]], generation: dict[int | None, float]
) -> Tail | None:
    """The long tail of ``response_length`` (None: no step records it)."""
    every: list[float] = []
    bad: list[str] = []
    out = Tail()
    shares: list[float] = []
    seconds = gen = 0.0
    timed = False
    for step in sorted(steps, key=lambda s: (s is None, s or 0)):
        row = steps[step].get("response_length")
        if row is None or not row.values:
            continue
        values = sorted(row.values)
        if values[0] < 0:
            bad.append(f"{_label(step)}: a negative length ({values[0]:,.0f})")
            continue
        top = values[-1]
        if top <= 0:
            continue
        share = (top - percentile(values, 95)) / top
        out.steps += 1
        every.extend(values)
        shares.append(share)
        if step in generation:
            timed = True
            seconds += share * generation[step]
            gen += generation[step]
    if not out.steps and not bad:
        return None
    if bad:
        out.note = f"left out: {_steps_text(bad)}"
    if every:
        every.sort()
        out.responses = len(every)
        out.p50, out.p95, out.p99 = (percentile(every, q) for q in (50, 95, 99))
        out.max = every[-1]
        out.share = min(max(statistics.fmean(shares), 0.0), 1.0)
    if timed:
        out.seconds, out.generation_s = min(seconds, gen), gen
        out.share = min(seconds / gen, 1.0) if gen > 0 else out.share
    return out


def ledger(ranges: Sequence[Range], rows: list[CounterRow]) -> Ledger | None:
    """The ledger of the steps of ``ranges`` and ``rows`` (the counted ones: warmup left out
    by the caller); None where no ledger counter was recorded."""
    if not any(c.name in LEDGER_NAMES for c in rows):
        return None
    steps = _pooled(rows)
    generation = _generation(ranges)
    lines = [x for x in (line_of(spec, steps, generation) for spec in LINES) if x is not None]
    tail = tail_of(steps, generation)
    counted = {s for s in steps if any(n in LEDGER_NAMES for n in steps[s])}
    timed = [generation[s] for s in counted if s in generation]
    return Ledger(
        steps=len(counted), generation_s=sum(timed) if timed else None, lines=lines, tail=tail
    )
