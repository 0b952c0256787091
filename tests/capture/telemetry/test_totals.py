"""``StepTotals`` and ``StepRecord``: one step's figures and their flat names."""

from __future__ import annotations

import pytest

from mindspeed_prof.capture.telemetry import totals as totals_module
from mindspeed_prof.capture.telemetry.totals import StepRecord, StepTotals, mean_record

MS = 1_000_000


def test_a_step_adds_up_each_stage_and_counter_and_names_them_flat() -> None:
    t = StepTotals()
    t.stage("actor_generate", 3 * MS)
    t.stage("actor_update", 5 * MS)
    t.stage("actor_generate", 2 * MS)  # a stage run twice in a step: its time adds up
    t.count("tokens_generated", 100)
    t.count("tokens_generated", 28.5)
    t.count("response_length", [10, 30])
    t.count("response_length", [20])
    record = t.finish(4, 12 * MS, {"<b>custom</b>": MS // 2})
    assert record.flat() == {
        "prof/step/ms": 12.0,
        "prof/stage/actor_generate/ms": 5.0,
        "prof/stage/actor_update/ms": 5.0,
        "prof/range/<b>custom</b>/ms": 0.5,
        "prof/count/tokens_generated": 128.5,
        "prof/count/response_length/n": 3.0,
        "prof/count/response_length/mean": 20.0,
        "prof/count/response_length/min": 10.0,
        "prof/count/response_length/max": 30.0,
    }
    assert record.step == 4


def test_finish_starts_the_next_step_afresh_and_no_step_time_is_left_out() -> None:
    t = StepTotals()
    t.stage("a", MS)
    t.finish(1, MS, {})
    t.count("groups", 2)
    assert t.finish(2, None, {}).flat() == {"prof/count/groups": 2.0}


def test_an_empty_distribution_is_nothing_and_a_bad_value_raises_before_any_change() -> None:
    t = StepTotals()
    t.count("reward", [])
    with pytest.raises((TypeError, ValueError)):
        t.count("reward", ["x"])  # type: ignore[list-item]
    assert t.finish(1, None, {}).flat() == {}


def test_names_beyond_the_limit_are_not_kept_but_known_ones_still_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(totals_module, "MAX_NAMES", 2)
    t = StepTotals()
    for name in ("a", "b", "c", "a"):
        t.stage(name, MS)
        t.count(name, 1)
        t.count(f"d{name}", [1.0])
    record = t.finish(1, None, {})
    assert record.stages == {"a": 2.0, "b": 1.0}
    assert record.counts["a"] == 2.0 and "c" not in record.counts
    assert {k.split("/")[0] for k in record.counts} == {"a", "b", "da", "db"}


def test_the_mean_record_averages_each_figure_over_the_steps_that_have_it() -> None:
    records = [
        StepRecord(1, 10.0, {"a": 2.0}, {}, {"n": 4.0}),
        StepRecord(2, None, {"a": 4.0, "b": 1.0}, {"r": 3.0}, {}),
        StepRecord(3, 20.0, {"a": 6.0}, {}, {"n": 8.0}),
    ]
    mean = mean_record(records)
    assert (mean.step, mean.step_ms) == (3, 15.0)
    assert mean.stages == {"a": 4.0, "b": 1.0}
    assert mean.ranges == {"r": 3.0} and mean.counts == {"n": 6.0}
    assert mean_record(records[:1]) is records[0]
