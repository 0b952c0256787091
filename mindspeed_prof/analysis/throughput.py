"""Throughput: per stage, rank and step, tokens and samples per second of that rank's own
time in that stage in that step; per stage, the spread across ranks, the trend over steps and
MFU (model FLOPs utilisation) where the model's FLOPs per token and the device's peak are
known. Warmup steps are left out (``Tables.counted``).

Tokens of a stage: ``tokens_generated`` for ``actor_generate``, ``tokens_trained`` for the
update stages (``*_update``), recorded in the stage, or, where the stage records none, in no
stage in that step on that rank (a trainer that counts once per step); any other stage: the
tokens it records itself (generated, else trained). Samples: ``samples_kept`` plus
``samples_dropped`` (every sample generated), ``samples_kept`` alone for the update stages.

MFU = tokens x FLOPs per token x (3 for an update stage: forward and backward; else 1) /
(seconds x peak TFLOPS x 1e12). It is a share of the peak: one over 1 is not printed, the row
says the inputs are wrong instead.
"""

from __future__ import annotations

import functools
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence

from mindspeed_prof.analysis.counts import GENERATE, CounterRow, Model, is_update
from mindspeed_prof.analysis.ranges import stage_order
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.stats.trend import trend

__all__ = [
    "OVER_PEAK",
    "RankRate",
    "StageThroughput",
    "TREND_ALPHA",
    "ThroughputRow",
    "mfu",
    "stage_summaries",
    "throughput_rows",
]

Who = tuple[int | None, str]
#: How an MFU note starts when the inputs give more than the device's peak.
OVER_PEAK = "over the peak"
#: A stage's tokens/s has a trend where the Mann-Kendall test (two-sided) finds one at this.
TREND_ALPHA = 0.05


class ThroughputRow(Row, kw_only=True):
    """One stage on one rank in one step: ``seconds`` of stage time, ``tokens`` and
    ``samples`` counted (None: none), their rates, where they were counted (``stage``, or
    ``step``: in no stage), and ``mfu`` (0-1; None with ``mfu_note`` saying why)."""

    stage: str
    rank: int | None
    source: str = ""
    step: int | None
    seconds: float
    tokens: float | None = None
    samples: float | None = None
    tokens_per_s: float | None = None
    samples_per_s: float | None = None
    counted_in: str = "stage"
    mfu: float | None = None
    mfu_note: str | None = None


class RankRate(Row, kw_only=True):
    """One rank's stage over the counted steps: its tokens and samples over its seconds."""

    rank: int | None
    source: str = ""
    seconds: float
    tokens: float | None = None
    samples: float | None = None
    tokens_per_s: float | None = None
    samples_per_s: float | None = None


class StageThroughput(Row, kw_only=True):
    """One stage: tokens/s per rank (median, min, max over ranks; ``slowest`` the rank with
    the fewest), samples/s per rank (median), the trend (per step, the median over ranks;
    ``first``/``last`` measured at the first and last step, ``slope`` tok/s per step, the
    Theil-Sen slope, ``change`` its rise over the steps relative to its start where the
    series has a trend, else None), and MFU of
    every rank and step together (None with ``mfu_note`` saying why)."""

    stage: str
    ranks: int
    steps: int
    tokens_per_s: float | None = None
    min_tokens_per_s: float | None = None
    max_tokens_per_s: float | None = None
    slowest_rank: int | None = None
    slowest_source: str = ""
    samples_per_s: float | None = None
    first_tokens_per_s: float | None = None
    last_tokens_per_s: float | None = None
    slope: float | None = None
    change: float | None = None
    mfu: float | None = None
    mfu_note: str | None = None
    per_rank: list[RankRate] = []


def _token_name(stage: str, names: set[str]) -> str | None:
    if stage == GENERATE:
        return "tokens_generated"
    if is_update(stage):
        return "tokens_trained"
    return next((n for n in ("tokens_generated", "tokens_trained") if n in names), None)


def _sample_names(stage: str) -> tuple[str, ...]:
    return ("samples_kept",) if is_update(stage) else ("samples_kept", "samples_dropped")


def _sum(rows: dict[str, CounterRow], names: tuple[str, ...]) -> float | None:
    found = [rows[n].total for n in names if n in rows]
    return sum(found) if found else None


def _tokens(stage: str, counts: dict[str, CounterRow]) -> float | None:
    name = _token_name(stage, set(counts))
    return _sum(counts, (name,)) if name else None


def _samples(stage: str, counts: dict[str, CounterRow]) -> float | None:
    return _sum(counts, _sample_names(stage))


def _counted(
    own: dict[str, CounterRow],
    loose: dict[str, CounterRow],
    amount: Callable[[dict[str, CounterRow]], float | None],
) -> tuple[float | None, str]:
    """An amount counted in the stage, else in no stage of its step (``loose``)."""
    inside = amount(own)
    if inside is not None or not loose:
        return inside, "stage"
    return amount(loose), "step"


def mfu(
    tokens: float | None, seconds: float, stage: str, model: Model
) -> tuple[float | None, str | None]:
    """(MFU 0-1, None) or (None, why not)."""
    if model.flops_per_token is None:
        return None, "no FLOPs per token (--flops-per-token, or model_flops_per_token)"
    if model.peak_tflops is None:
        return None, "no peak (--peak-tflops, or peak_tflops)"
    if tokens is None:
        return None, "no tokens counted"
    if seconds <= 0:
        return None, "no stage time"
    mult = 3.0 if is_update(stage) else 1.0
    value = tokens * model.flops_per_token * mult / (seconds * model.peak_tflops * 1e12)
    if value > 1.0:
        return None, (
            f"{OVER_PEAK} ({value:,.2f}x): the tokens, FLOPs per token or peak are "
            "wrong (tokens counted on every model-parallel rank? FLOPs of the whole "
            "model on a sharded one?)"
        )
    return value, None


def throughput_rows(
    ranges: Sequence[Range], counters: list[CounterRow], model: Model
) -> list[ThroughputRow]:
    """One row per stage run on a rank in a step (of ``ranges``) that has tokens or samples
    counted (``counters``)."""
    if not counters:  # no row without a count: nor a dict of every stage run (a range file's)
        return []
    seconds: dict[tuple[str, int | None, str, int | None], float] = defaultdict(float)
    for r in ranges:
        if r.kind == "stage":
            seconds[(r.name, r.rank, r.source, r.step)] += r.dur / 1e6
    counts: dict[tuple[int | None, str, int | None, str | None], dict[str, CounterRow]] = (
        defaultdict(dict)
    )
    for c in counters:
        counts[(c.rank, c.source, c.step, c.stage)][c.name] = c
    out = []
    for (stage, rank, source, step), secs in seconds.items():
        own = counts.get((rank, source, step, stage), {})
        loose = (
            counts.get((rank, source, step, None), {})
            if (stage == GENERATE or is_update(stage))
            else {}
        )
        tokens, where = _counted(own, loose, functools.partial(_tokens, stage))
        samples, held = _counted(own, loose, functools.partial(_samples, stage))
        if tokens is None and samples is None:
            continue
        where = where if tokens is not None else held
        value, note = mfu(tokens, secs, stage, model)
        out.append(
            ThroughputRow(
                stage=stage,
                rank=rank,
                source=source,
                step=step,
                seconds=secs,
                tokens=tokens,
                samples=samples,
                counted_in=where,
                mfu=value,
                mfu_note=note,
                tokens_per_s=tokens / secs if tokens is not None and secs > 0 else None,
                samples_per_s=samples / secs if samples is not None and secs > 0 else None,
            )
        )
    return sorted(
        out,
        key=lambda r: (
            stage_order(r.stage),
            rank_order(r.rank),
            r.source,
            r.step is None,
            r.step or 0,
        ),
    )


def _rate(amount: float | None, secs: float) -> float | None:
    return amount / secs if amount is not None and secs > 0 else None


def _total(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def stage_summaries(rows: list[ThroughputRow], model: Model) -> list[StageThroughput]:
    """Per stage of ``rows``: the spread over ranks, the trend over steps, MFU."""
    by_stage: dict[str, list[ThroughputRow]] = defaultdict(list)
    for r in rows:
        by_stage[r.stage].append(r)
    out = []
    for stage in sorted(by_stage, key=stage_order):
        mine = by_stage[stage]
        per: dict[Who, list[ThroughputRow]] = defaultdict(list)
        for r in mine:
            per[(r.rank, r.source)].append(r)
        ranks = []
        for (rank, source), rs in sorted(
            per.items(), key=lambda kv: (rank_order(kv[0][0]), kv[0][1])
        ):
            secs = sum(r.seconds for r in rs)
            tokens, samples = _total([r.tokens for r in rs]), _total([r.samples for r in rs])
            ranks.append(
                RankRate(
                    rank=rank,
                    source=source,
                    seconds=secs,
                    tokens=tokens,
                    samples=samples,
                    tokens_per_s=_rate(tokens, secs),
                    samples_per_s=_rate(samples, secs),
                )
            )
        row = StageThroughput(
            stage=stage, ranks=len(ranks), steps=len({r.step for r in mine}), per_rank=ranks
        )
        rated = [x for x in ranks if x.tokens_per_s is not None]
        if rated:
            slow = min(rated, key=lambda x: (x.tokens_per_s or 0.0, rank_order(x.rank)))
            row.tokens_per_s = statistics.median(x.tokens_per_s or 0.0 for x in rated)
            row.min_tokens_per_s = slow.tokens_per_s
            row.max_tokens_per_s = max(x.tokens_per_s or 0.0 for x in rated)
            row.slowest_rank, row.slowest_source = slow.rank, slow.source
            _trend(row, mine)
        sampled = [x.samples_per_s for x in ranks if x.samples_per_s is not None]
        row.samples_per_s = statistics.median(sampled) if sampled else None
        row.mfu, row.mfu_note = mfu(
            _total([r.tokens for r in mine]),
            sum(r.seconds for r in mine if r.tokens is not None),
            stage,
            model,
        )
        out.append(row)
    return out


def _trend(row: StageThroughput, rows: list[ThroughputRow]) -> None:
    """Per step (steps with a number), the median over ranks of their tokens/s; first and
    last measured; ``slope`` the Theil-Sen slope (two steps at least), ``change`` its rise
    over the steps relative to its start only where the Mann-Kendall test finds the series
    monotone at ``TREND_ALPHA`` (both ways: five steps at least), else None: a few noisy steps
    or a one-off stall are no trend."""
    per: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        if r.step is not None and r.tokens_per_s is not None:
            per[r.step].append(r.tokens_per_s)
    steps = sorted(per)
    if not steps:
        return
    ys = [statistics.median(per[s]) for s in steps]
    row.first_tokens_per_s, row.last_tokens_per_s = ys[0], ys[-1]
    if len(steps) < 2:
        return
    found = trend([float(s) for s in steps], ys)
    row.slope = found.slope
    start = found.intercept + found.slope * steps[0]
    if 2 * min(found.p_up, found.p_down) <= TREND_ALPHA and start > 0:
        row.change = found.slope * (steps[-1] - steps[0]) / start
