"""Thresholds at their edges: a straggler exceeds the median by more than the margin, a
regression changes the mean by more than the threshold (exactly at the edge is neither)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import Captures
from mindspeed_prof.analysis.compare import DEFAULT_THRESHOLD, Side, compare, side_of
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.rows import Change


def run(
    ms_by_rank: dict[int, float], stage: str = "actor_update", margin: float = 0.25, steps: int = 1
) -> Side:
    """``steps`` steps of ``stage`` per rank, each lasting the given milliseconds (exact in
    binary)."""
    traces = []
    for rank, ms in ms_by_rank.items():
        t = TraceData(Path(f"rank{rank}_h_1_step1.mstx.trace.json"), "spans", rank, "integrated", 1)
        t.ranges += [
            Range(rank, "stage", stage, step, 0.0, ms * 1000.0) for step in range(1, steps + 1)
        ]
        traces.append(t)
    return side_of(Captures(root=Path("."), traces=traces), Settings(margin=margin))


@pytest.mark.parametrize("slow_ms,flagged", [(125.0, False), (125.0078125, True), (124.0, False)])
def test_straggler_margin_edge(slow_ms: float, flagged: bool) -> None:
    # median 100 ms, margin 0.25: the edge is exactly 125 ms
    found = run({0: 100.0, 1: 100.0, 2: slow_ms}).tables.stragglers
    assert [(s.rank, s.ratio) for s in found] == ([(2, slow_ms / 100.0)] if flagged else [])


def test_straggler_margin_is_the_configured_one() -> None:
    ranks = {0: 100.0, 1: 100.0, 2: 150.0}
    assert run(ranks, margin=0.5).tables.stragglers == []
    assert [s.rank for s in run(ranks, margin=0.375).tables.stragglers] == [2]


def _compare(a_ms: float, b_ms: float, threshold: float = DEFAULT_THRESHOLD) -> Change:
    """Six steps a side: enough for the gate's rank test to find a shift real (1 in 924)."""
    (row,) = compare(run({0: a_ms}, steps=6), run({0: b_ms}, steps=6), threshold)
    return row


@pytest.mark.parametrize(
    "b_ms,regression,improvement",
    [
        (128.0, False, False),  # +0.0: unchanged
        (144.0, False, False),  # +12.5%: exactly at the threshold is not a regression
        (144.0078125, True, False),  # just over
        (112.0, False, False),  # -12.5%: exactly at the threshold is not an improvement
        (111.9921875, False, True),  # just under
    ],
)
def test_compare_threshold_edge(b_ms: float, regression: bool, improvement: bool) -> None:
    row = _compare(128.0, b_ms, threshold=0.125)
    assert (row.regression, row.improvement) == (regression, improvement)
    assert row.change == pytest.approx((b_ms - 128.0) / 128.0)


def test_default_threshold_is_ten_percent() -> None:
    assert not _compare(100.0, 109.0).regression
    assert _compare(100.0, 111.0).regression
    assert _compare(100.0, 89.0).improvement


def test_compare_rows_for_stages_in_one_run_only() -> None:
    a, b = run({0: 100.0}, stage="actor_update"), run({0: 50.0}, stage="critic_update")
    rows = {r.name: r for r in compare(a, b)}
    assert rows["actor_update"].b_mean_ms is None and rows["actor_update"].change is None
    assert rows["critic_update"].a_mean_ms is None and not rows["critic_update"].regression


def test_compare_rows_by_impact_then_stage_and_rank() -> None:
    both = run({0: 100.0, 1: 100.0}, stage="critic_update", steps=6).captures
    both.traces += run({0: 10.0, 1: 10.0}, stage="actor_update", steps=6).captures.traces
    a = side_of(both)
    b = run({1: 200.0, 0: 100.0}, stage="critic_update", steps=6)
    rows = compare(a, b)
    # the costliest change first; rows missing from one run (no impact) last
    assert [(r.kind, r.name, r.rank, r.impact_ms) for r in rows] == [
        ("stage", "critic_update", 1, 600.0),
        ("stage", "critic_update", 0, 0.0),
        ("stage", "actor_update", 0, None),
        ("stage", "actor_update", 1, None),
    ]
    assert [r.regression for r in rows] == [True, False, False, False]
    assert rows[0].json()["stage"] == "critic_update"
