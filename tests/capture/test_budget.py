"""Disk budget: captures lowered or skipped so the save root stays under max_disk_mb."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from mindspeed_prof import Profiler
from mindspeed_prof.capture.budget import Budget, DiskBudget, bytes_under
from mindspeed_prof.config.validate import ConfigError, validate

MB = 1024 * 1024


def test_choose_lowers_then_skips(tmp_path: Path) -> None:
    budget = DiskBudget(1, tmp_path)
    assert budget.choose("level1", 3) == ("level1", "")  # unmeasured: this capture measures
    budget.learn("level1", MB // 2, 1)
    budget.learn("level0", MB // 8, 1)
    level, why = budget.choose("level1", 3)
    assert level == "level0" and "level1 would need about 1.5 MB" in why
    budget.learn("level_none", 1000, 1)
    (tmp_path / "big").write_bytes(b"x" * (MB - 10_000))
    assert budget.choose("level1", 3)[0] == "level_none"
    (tmp_path / "more").write_bytes(b"x" * 20_000)
    level, why = budget.choose("level0", 1)
    assert level is None and "of max_disk_mb=1 used" in why


def test_negative_budget_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"integrated\.max_disk_mb=-1"):  # a flat section
        validate({"max_disk_mb": -1})


@pytest.mark.parametrize("stage", ["actor_update", "all"])
def test_large_captures_stay_within_one_step_of_the_budget(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, stage: str) -> None:
    """Every capture shape: one capture per stage execution, and a whole-step window (taken
    one step per capture under a budget, so that it is lowered or stopped mid-window)."""
    prof = Profiler.from_config({
        "profile": True, "backend": "torch", "stage": stage, "profile_level": "level1",
        "profile_record_shapes": True, "profile_step_start": 1,
        "profile_step_end": 30, "max_disk_mb": 1, "profile_save_path": str(tmp_path)}, rank=0)
    x = torch.randn(4, 4)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 30):
            with prof.step(step), prof.stage("actor_update"):
                for _ in range(150):
                    x = (x @ x).tanh()
    prof.close()
    sizes = [sum(bytes_under(Path(f)) for f in c.files) for c in prof.captures]
    largest = max(sizes)
    assert largest > 0
    assert bytes_under(tmp_path) <= MB + largest  # overshoot: at most one capture (one step)
    assert all(len(c.steps) <= 1 for c in prof.captures)
    levels = [c.level for c in prof.captures if not c.skipped]
    assert levels[0] == "level1" and "level1" != levels[-1]  # lowered once measured
    skipped = [c for c in prof.captures if c.skipped]
    assert skipped and skipped[0].reason == "disk_budget"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("skipping captures" in m for m in messages) == 1
    assert sum("instead of level1" in m for m in messages) <= 1


def test_save_root_already_full_warns_before_the_first_step(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "earlier_run.bin").write_bytes(b"x" * (MB + 1))
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config({
            "profile": True, "backend": "torch", "profile_step_start": 1,
            "profile_step_end": 3, "max_disk_mb": 1, "profile_save_path": str(tmp_path)},
            rank=0)
        before = [r.getMessage() for r in caplog.records]
        for step in range(1, 4):
            with prof.step(step):
                pass
        prof.close()
    assert len(before) == 1 and "profiler_config.extensions.max_disk_mb=1" in before[0]
    assert str(tmp_path) in before[0] and "1.0 MB" in before[0]
    assert len(caplog.records) == 1  # the skip itself does not warn again
    assert [c.reason for c in prof.captures] == ["disk_budget"]
    assert bytes_under(tmp_path) < MB + 1 + 64 * 1024  # a manifest at most


def test_budget_with_room_for_a_step_says_nothing(tmp_path: Path) -> None:
    (tmp_path / "earlier_run.bin").write_bytes(b"x" * (MB - 65 * 1024))
    assert DiskBudget(1, tmp_path).full_at_start() == ""
    (tmp_path / "more.bin").write_bytes(b"x" * 2048)
    assert "already holds" in DiskBudget(1, tmp_path).full_at_start()


def test_learns_the_largest_cost_per_step_of_each_level(tmp_path: Path) -> None:
    budget = DiskBudget(4, tmp_path)
    budget.learn("level1", 3 * MB, 1)
    budget.learn("level1", MB // 4, 1)  # a cheap step after an expensive one
    budget.learn("level1", 0, 0)  # no steps: teaches nothing
    assert budget.per_step == {"level1": 3 * MB}
    level, why = budget.choose("level1", 2)  # 6 MB: the largest cost decides
    assert level == "level0" and "level1 would need about 6.0 MB" in why


def test_a_lowered_capture_teaches_the_level_it_was_taken_at(tmp_path: Path) -> None:
    """The configured level is level1; once lowered, what a capture wrote is level0's cost."""
    prof = Profiler.from_config({
        "profile": True, "backend": "torch", "stage": "all", "profile_level": "level1",
        "profile_record_shapes": True, "profile_step_start": 1,
        "profile_step_end": 30, "max_disk_mb": 1, "profile_save_path": str(tmp_path)}, rank=0)
    budget = next(p for p in prof.parts if isinstance(p, Budget)).budget
    x = torch.randn(4, 4)
    for step in range(1, 30):
        with prof.step(step), prof.stage("actor_update"):
            for _ in range(150):
                x = (x @ x).tanh()
    prof.close()
    taken = [c for c in prof.captures if not c.skipped]
    assert {c.level for c in taken} >= {"level1", "level0"}
    for level in ("level1", "level0"):
        largest = max(sum(bytes_under(Path(f)) for f in c.files) / len(c.steps)
                      for c in taken if c.level == level)
        assert budget.per_step[level] == largest
