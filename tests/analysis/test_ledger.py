"""The RL ledger: generation time on samples not trained on (dropped, zero-variance groups,
truncated responses) and the long tail of response lengths, recomputed by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from counter_fixtures import rl_run
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import counted_rows

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.counts import percentile
from mindspeed_prof.analysis.findings.common import duration
from mindspeed_prof.analysis.ledger import Ledger, Tail
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.counters import Count
from mindspeed_prof.analysis.report.report import document
from mindspeed_prof.analysis.report.tables import tables

#: Rank 0 generates for 200 ms a step, rank 1 for 300 ms: 0.25 s a step on the mean rank.
GEN_MS = {0: 200.0, 1: 300.0}
LENGTHS = [100.0] * 95 + [1000.0, 1200.0, 1500.0, 2000.0, 4000.0]


def _planted(rank: int, step: int) -> list:
    """Per rank and step: 32 groups, 8 of them reward-constant (25%); 60 samples kept and 4
    dropped; 2 of 100 responses truncated; a long tail of lengths."""
    return [
        ("groups", 32, None),
        ("groups_zero_variance", 8, None),
        ("samples_kept", 60, None),
        ("samples_dropped", 4, None),
        ("responses", 100, None),
        ("responses_truncated", 2, None),
        ("response_length", LENGTHS, "actor_generate"),
    ]


def book_of(root: Path) -> Ledger:
    book = tables(analyse(root)).ledger
    assert book is not None
    return book


def tail_of(root: Path) -> Tail:
    tail = book_of(root).tail
    assert tail is not None
    return tail


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    return rl_run(
        tmp_path,
        ranks=(0, 1),
        steps=(1, 2, 3, 4),
        calls=_planted,
        stage_ms=lambda rank, step, stage: GEN_MS[rank] if stage == "actor_generate" else 50.0,
    )


def test_planted_waste_by_hand(planted: Path) -> None:
    book = book_of(planted)
    assert book.steps == 4
    assert book.generation_s == pytest.approx(4 * 0.25)
    lines = {x.line: x for x in book.lines}
    zv = lines["zero_variance"]
    assert (zv.count, zv.of, zv.steps) == (64.0, 256.0, 4)
    assert zv.share == pytest.approx(0.25) and zv.time_share == pytest.approx(0.25)
    assert zv.seconds == pytest.approx(4 * 0.25 * 0.25)  # 25% of 0.25 s in each of 4 steps
    dropped = lines["dropped"]
    assert (dropped.count, dropped.of) == (32.0, 512.0)
    assert dropped.share == pytest.approx(4 / 64)
    truncated = lines["truncated"]
    assert (truncated.count, truncated.of, truncated.share) == (16.0, 800.0, pytest.approx(0.02))


def test_planted_long_tail_by_hand(planted: Path) -> None:
    tail = tail_of(planted)
    pooled = np.array(LENGTHS * 2)  # one step: both ranks' lengths
    p95, top = float(np.percentile(pooled, 95)), float(pooled.max())
    assert tail.responses == 800 and tail.steps == 4
    assert (tail.p50, tail.p99, tail.max) == (
        pytest.approx(float(np.percentile(pooled, 50))),
        pytest.approx(float(np.percentile(pooled, 99))),
        4000.0,
    )
    assert tail.p95 == pytest.approx(p95)
    assert tail.share == pytest.approx((top - p95) / top)
    assert tail.seconds == pytest.approx(4 * 0.25 * (top - p95) / top)


def test_the_planted_waste_and_tail_are_named_with_their_numbers(planted: Path) -> None:
    result = analyse(planted)
    doc: dict[str, Any] = document(result)  # read as JSON
    counted_rows(doc)
    found = {f["rule"]: f for f in doc["findings"]}
    zv = found["rl.zero_variance"]
    assert zv["title"] == (
        "25% of generation time went to groups with zero reward variance "
        "(62.5 ms per step, 250.0 ms in 4 steps): 64 of 256 groups"
    )
    assert zv["impact_ms"] == pytest.approx(62.5)
    step = doc["verdict"]["step"]["median_ms"]  # severity: the share of the step it costs
    assert zv["severity"] == ("high" if 0.25 * step <= 62.5 else "medium")
    assert "group size" in zv["suggestion"]
    p95 = float(np.percentile(np.array(LENGTHS * 2), 95))
    share = (4000.0 - p95) / 4000.0
    tail = found["rl.long_tail"]
    assert tail["title"] == (
        f"the longest 5% of responses hold {share:.0%} of generation time "
        f"({duration(250 * share)} per step): length p50 100, p99 "
        f"{float(np.percentile(np.array(LENGTHS * 2), 99)):,.0f}, max "
        "4,000"
    )
    assert "partial rollouts" in tail["suggestion"]
    # under the thresholds: 6% dropped, 2% truncated
    assert "rl.dropped" not in found and "rl.truncated" not in found


def test_a_count_over_its_whole_leaves_its_step_out_and_says_so(tmp_path: Path) -> None:
    def calls(rank: int, step: int) -> list:
        zv = 70 if step == 2 else 16
        return [("groups", 64, None), ("groups_zero_variance", zv, None)]

    rl_run(tmp_path, ranks=(0,), steps=(1, 2, 3), calls=calls)
    (zv,) = book_of(tmp_path).lines
    assert (zv.count, zv.of, zv.steps) == (32.0, 128.0, 2)
    assert zv.note == (
        "left out: step 2: groups_zero_variance 70 of groups 64 (a count over "
        "its whole, or no whole)"
    )
    assert zv.share == pytest.approx(0.25)


def test_a_line_without_its_whole_and_no_generation_time(tmp_path: Path) -> None:
    rl_run(
        tmp_path,
        ranks=(0,),
        steps=(1,),
        stages=("actor_update",),
        calls=lambda rank, step: [
            ("samples_dropped", 5, None),
            ("groups", 10, None),
            ("groups_zero_variance", 5, None),
        ],
    )
    book = book_of(tmp_path)
    lines = {x.line: x for x in book.lines}
    assert lines["dropped"].share is None and "without samples" in str(lines["dropped"].note)
    zv = lines["zero_variance"]
    assert zv.share == pytest.approx(0.5) and zv.seconds is None and zv.time_share is None
    assert book.generation_s is None


@pytest.mark.parametrize(
    "calls, of",
    [
        ([("responses", 40, None), ("response_length", [5.0] * 10, None)], 40.0),
        ([("response_length", [5.0] * 10, None), ("samples_kept", 30, None)], 10.0),
        ([("samples_kept", 30, None), ("samples_dropped", 10, None)], 40.0),
    ],
)
def test_responses_default_to_the_lengths_then_the_samples(
    tmp_path: Path, calls: list, of: float
) -> None:
    rl_run(
        tmp_path,
        ranks=(0,),
        steps=(1,),
        calls=lambda rank, step: [("responses_truncated", 4, None), *calls],
    )
    lines = {x.line: x for x in book_of(tmp_path).lines}
    assert (lines["truncated"].count, lines["truncated"].of) == (4.0, of)


def test_percentile_is_numpys_linear() -> None:
    values = sorted([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    for q in (0, 50, 95, 99, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


# -- property: random counter sets ----------------------------------------------------------


@st.composite
def _runs(draw: st.DrawFn) -> tuple[list[TraceData], dict]:
    """Ranks and steps with random generation times and random (possibly inconsistent)
    counts, built in memory; and what each step should contribute."""
    ranks = draw(st.integers(1, 3))
    steps = draw(st.integers(1, 4))
    traces = []
    for rank in range(ranks):
        ranges, counts = [], []
        t = 0.0
        for step in range(1, steps + 1):
            if draw(st.booleans()) or rank == 0:
                dur = draw(st.floats(1.0, 5e5))
                ranges.append(Range(rank, "stage", "actor_generate", step, t, dur))
                t += dur + 1
            for name in (
                "groups",
                "groups_zero_variance",
                "samples_kept",
                "samples_dropped",
                "responses_truncated",
            ):
                if draw(st.booleans()):
                    counts.append(
                        Count(name=name, step=step, value=float(draw(st.integers(0, 50))), calls=1)
                    )
            if draw(st.booleans()):
                counts.append(
                    Count(
                        name="response_length",
                        step=step,
                        stage="actor_generate",
                        values=draw(st.lists(st.floats(0, 8192), max_size=40)),
                    )
                )
        traces.append(
            TraceData(
                Path(f"rank{rank}.mstx.trace.json"),
                "spans",
                rank,
                "",
                0,
                ranges=ranges,
                counters=counts,
            )
        )
    return traces, {}


@settings(max_examples=60, deadline=None)
@given(_runs())
def test_shares_within_range_and_seconds_add_up(case: tuple[list[TraceData], dict]) -> None:
    traces, _ = case
    result = Captures(root=Path("."), traces=traces)
    book = tables(result).ledger
    if book is None:
        return
    counted_rows(
        {
            "ledger": book.json(),
            "throughput": {"rows": [], "stages": []},
            "verdict": {},
            "findings": [],
        }
    )
    gen: dict[int | None, list[float]] = {}
    for t in traces:
        for r in t.ranges:
            gen.setdefault(r.step, []).append(r.dur / 1e6)
    per_step = {s: sum(v) / len(v) for s, v in gen.items()}
    counts: dict[int | None, dict[str, float]] = {}
    for t in traces:
        for c in t.counters:
            if c.value is not None:
                counts.setdefault(c.step, {})
                counts[c.step][c.name] = counts[c.step].get(c.name, 0.0) + c.value
    for x in book.lines:
        if x.line == "truncated":
            continue
        seconds = total = 0.0
        for step, have in counts.items():
            n = have.get(x.counter)
            d = (
                have.get("groups")
                if x.line == "zero_variance"
                else (
                    have["samples_kept"] + have.get("samples_dropped", 0.0)
                    if "samples_kept" in have
                    else None
                )
            )
            if n is None or d is None or n > d or d == 0:
                continue
            seconds += n / d * per_step.get(step, 0.0)
            total += per_step.get(step, 0.0)
        assert math.isclose(x.seconds or 0.0, seconds, rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(x.generation_s or 0.0, total, rel_tol=1e-9, abs_tol=1e-12)
    for part in [*book.lines, book.tail]:
        if part is not None and part.seconds is not None:
            assert 0.0 <= part.seconds <= (part.generation_s or 0.0) * (1 + 1e-12)
    json.dumps(book.json())
