"""Ledger findings: each kind of waste and the long tail named with its numbers at and above
its threshold, none under it or under the noise floor."""

from __future__ import annotations

from pathlib import Path

import pytest
from counter_fixtures import rl_run
from helpers import answered

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.findings import find
from mindspeed_prof.analysis.findings.common import duration
from mindspeed_prof.analysis.findings.rl_ledger import (
    TAIL_HIGH,
    TAIL_MEDIUM,
    WASTE_HIGH,
    WASTE_MEDIUM,
    long_tail,
    waste,
)
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables


def _run(root: Path, calls: list, gen_ms: float = 100.0) -> Path:
    return rl_run(
        root,
        ranks=(0, 1),
        steps=(1, 2),
        calls=lambda rank, step: calls,
        stage_ms=lambda rank, step, stage: gen_ms if stage == "actor_generate" else 20.0,
    )


@pytest.mark.parametrize(
    "dropped, severity",
    [
        (int(100 * WASTE_MEDIUM) - 1, None),
        (int(100 * WASTE_MEDIUM), "medium"),
        (int(100 * WASTE_HIGH) - 1, "medium"),
        (int(100 * WASTE_HIGH), "high"),
    ],
)
def test_dropped_samples_at_the_thresholds(
    tmp_path: Path, dropped: int, severity: str | None
) -> None:
    _run(tmp_path, [("samples_kept", 100 - dropped, None), ("samples_dropped", dropped, None)])
    found = waste(*answered(analyse(tmp_path)))
    if severity is None:
        assert found == []
        return
    (f,) = found
    share = dropped / 100
    assert f.rule == "rl.dropped" and f.severity == severity
    # 2 steps x 2 ranks x dropped of 100; 0.1 s of generation a step (the mean rank)
    assert f.title == (
        f"{share:.0%} of generation time went to samples dropped after "
        f"generation ({duration(100 * share)} per step, {duration(200 * share)} "
        f"in 2 steps): {4 * dropped} of 400 samples"
    )
    assert f.impact_ms == pytest.approx(100 * share)
    assert "before generation" in f.suggestion and f.ranks == [0, 1]
    assert "rank0_host_1_step1.mstx.trace.json" in f.source


def test_truncated_responses_and_their_advice(tmp_path: Path) -> None:
    _run(tmp_path, [("responses", 50, None), ("responses_truncated", 20, None)])
    (f,) = waste(*answered(analyse(tmp_path)))
    assert f.rule == "rl.truncated" and f.severity == "high"
    assert f.title.startswith(
        "40% of generation time went to responses cut at the length limit"
    ) and f.title.endswith(": 80 of 200 responses")
    assert "max response length" in f.suggestion


def test_waste_under_the_noise_floor_is_no_finding(tmp_path: Path) -> None:
    """A 1 ms generation: 30% of it is 0.3 ms a step, under the 1 ms floor."""
    _run(tmp_path, [("groups", 10, None), ("groups_zero_variance", 3, None)], gen_ms=1.0)
    result = analyse(tmp_path)
    book = tables(result).ledger
    assert book is not None and book.lines[0].time_share == pytest.approx(0.3)
    assert waste(*answered(result)) == []
    given = Settings(noise_ms=0.1)
    assert [f.rule for f in waste(*answered(result, given))] == ["rl.zero_variance"]


def _tail(root: Path, top: float) -> Path:
    """99 responses of 100 tokens and one of ``top`` per rank and step: p95 is 100 (numpy's
    linear percentile of 200 values puts it between two 100s)."""
    return _run(root, [("response_length", [100.0] * 99 + [top], "actor_generate")])


@pytest.mark.parametrize(
    "top, severity",
    [
        (100 / (1 - TAIL_MEDIUM) - 1, None),
        (100 / (1 - TAIL_MEDIUM) + 1, "medium"),
        (100 / (1 - TAIL_HIGH) + 1, "high"),
    ],
)
def test_long_tail_at_the_thresholds(tmp_path: Path, top: float, severity: str | None) -> None:
    _tail(tmp_path, top)
    result = analyse(tmp_path)
    found = long_tail(*answered(result))
    share = (top - 100.0) / top
    book = tables(result).ledger
    assert book is not None and book.tail is not None
    assert book.tail.share == pytest.approx(share)
    if severity is None:
        assert found == []
        return
    (f,) = found
    assert f.severity == severity
    assert f.title == (
        f"the longest 5% of responses hold {share:.0%} of generation time "
        f"({duration(100 * share)} per step): length p50 100, p99 "
        f"{100 + 0.01 * (top - 100):,.0f}, max {top:,.0f}"
    )
    assert "p95 100" in f.detail


def test_no_counters_no_ledger_findings(tmp_path: Path) -> None:
    _run(tmp_path, [("tokens_generated", 10, "actor_generate")])
    result = analyse(tmp_path)
    assert (
        tables(result).ledger is None
        and waste(*answered(result)) == []
        and long_tail(*answered(result)) == []
    )
    found, notes = find(*answered(result))
    assert not notes and not [f for f in found if f.rule.startswith(("rl.dropped", "rl.long_tail"))]


def test_waste_in_one_step_of_four_is_no_finding(tmp_path: Path) -> None:
    """Every sample dropped in step 1, none in steps 2 to 4: 25% over the run, but not the
    share the run keeps (a one-off step's waste)."""
    rl_run(
        tmp_path,
        ranks=(0,),
        steps=(1, 2, 3, 4),
        calls=lambda rank, step: [
            ("samples_kept", 0 if step == 1 else 100, None),
            ("samples_dropped", 100 if step == 1 else 0, None),
        ],
        stage_ms=lambda rank, step, stage: 100.0 if stage == "actor_generate" else 20.0,
    )
    result = analyse(tmp_path)
    book = tables(result).ledger
    assert book is not None
    (dropped,) = [x for x in book.lines if x.line == "dropped"]
    assert dropped.share == 0.25 and dropped.kept_share == 0.0
    assert waste(*answered(result)) == []
