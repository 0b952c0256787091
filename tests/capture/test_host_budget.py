"""``capture_host_mb``: the estimate is the calibration step's trace times the steps (scaled by
level), the level chosen is the first that fits, a capture over the budget is lowered with one
line saying what and why, and a window with no step before it says it runs unchecked."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof import Profiler
from mindspeed_prof.capture.estimate import (
    HOST_FIXED_BYTES,
    HOST_PER_TRACE_BYTE,
    LEVEL_FACTOR,
    LEVELS,
    Measured,
    choose,
    estimate,
)
from mindspeed_prof.capture.host_budget import HostBudget


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(LEVELS[:-1]),
    st.floats(1e3, 1e9),
    st.sampled_from(LEVELS),
    st.integers(1, 50),
    st.floats(0, 1e12),
)
def test_the_first_level_that_fits_is_chosen(measured_at, trace, level, steps, limit) -> None:
    m = Measured(measured_at, trace)
    got = choose(m, level, steps, limit)
    below = LEVELS[LEVELS.index(level) :]
    assert got.level in below and got.steps == steps
    for skipped in below[: below.index(got.level)]:  # every level above the one chosen is over
        assert estimate(m, skipped, steps).host_bytes > limit
    assert got.host_bytes <= limit or got.level == "level_none"
    e = estimate(m, level, steps)
    assert e.trace_bytes == pytest.approx(
        trace * steps * LEVEL_FACTOR[level] / LEVEL_FACTOR[measured_at]
    )
    assert e.host_bytes == pytest.approx(
        HOST_FIXED_BYTES + HOST_PER_TRACE_BYTE[level] * e.trace_bytes
    )


def config(root: Path, start: int, host_mb: int) -> dict[str, Any]:
    return {
        "integrated": {
            "profile": True,
            "mstx": True,
            "profile_level": "level1",
            "profile_with_cpu": True,
            "profile_step_start": start,
            "profile_step_end": start + 2,
            "profile_save_path": str(root),
        },
        "extensions": {"backend": "torch", "capture_host_mb": host_mb},
    }


def train(prof: Profiler, steps: int) -> None:
    import torch

    for step in range(1, steps + 1):
        with prof.step(step), prof.stage("actor_update"):
            for _ in range(50):
                torch.ones(8).add_(1)
    prof.close()


def part(prof: Profiler) -> HostBudget:
    (p,) = [p for p in prof.parts if isinstance(p, HostBudget)]
    return p


def test_a_capture_within_the_budget_keeps_its_level_and_is_measured(tmp_path: Path) -> None:
    prof = Profiler.from_config(config(tmp_path, 3, 100_000), rank=0)
    train(prof, 5)
    (r,) = part(prof).results
    measured = part(prof).measured
    assert measured is not None and measured.level == "level1" and measured.trace_bytes > 0
    assert r.estimate.level == "level1" and r.estimate.steps == 2
    assert r.estimate.trace_bytes == pytest.approx(2 * measured.trace_bytes)
    assert 0.5 <= r.estimate.trace_bytes / r.trace_bytes <= 2.0  # steps alike: within 2x
    assert prof.captures[0].level == "level1" and r.flush_seconds is not None
    assert not (tmp_path / ".calibration").exists()  # the calibration step is thrown away


def test_over_the_budget_the_level_is_lowered_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config(config(tmp_path, 2, 1), rank=0)
        train(prof, 3)
    (line,) = [r.getMessage() for r in caplog.records]
    est = choose(part(prof).measured, "level1", 2, float("inf"))  # type: ignore[arg-type]
    assert line == (
        "mindspeed-prof: profiler_config.extensions.capture_host_mb=1: capturing 2 step(s) "
        f"from step 2 at level_none instead of level1: level1 would take about "
        f"{est.host_mb:,.0f} MB of host memory ({est.host_mb / 2:,.1f} MB a step, measured on "
        "step 1); level_none: about "
        f"{choose(part(prof).measured, 'level1', 2, 0).host_mb:,.0f} MB"  # type: ignore[arg-type]
    )
    assert [c.level for c in prof.captures] == ["level_none"]


def test_no_step_before_the_window_runs_unchecked_saying_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config(config(tmp_path, 1, 1), rank=0)
        train(prof, 2)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "no step ran before the window" in line and "profile_step_start=1" in line
    assert [c.level for c in prof.captures] == ["level1"]
