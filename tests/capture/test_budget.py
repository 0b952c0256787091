"""Disk budget: captures lowered or skipped so the save root stays under max_disk_mb."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import torch

from mindspeed_prof import Profiler
from mindspeed_prof.capture import budget as budget_module
from mindspeed_prof.capture.budget import Budget, DiskBudget, bytes_under
from mindspeed_prof.capture.part import Starting
from mindspeed_prof.capture.plan import ALL, Capture, CapturePlan, Trigger
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import Level
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


def test_a_save_root_not_made_yet_holds_nothing(tmp_path: Path) -> None:
    root = tmp_path / "not_yet"
    assert bytes_under(root) == 0
    assert DiskBudget(1, root).full_at_start() == ""
    assert DiskBudget(1, root).choose("level1", 3) == ("level1", "")
    assert not root.exists()  # asking made nothing


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


# -- exact sizes, edges and messages --------------------------------------------------------
def test_bytes_under_adds_every_file_and_skips_one_gone_since_the_listing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file removed between the folder's listing and its stat counts 0, and the files
    listed after it still count."""
    (tmp_path / "a").write_bytes(b"x" * 3)
    (tmp_path / "c").write_bytes(b"x" * 5)
    assert bytes_under(tmp_path / "a") == 3 and bytes_under(tmp_path / "empty") == 0
    listing: list[tuple[str, list[str], list[str]]] = [(str(tmp_path), [], ["a", "gone", "c"])]
    fake_os = SimpleNamespace(walk=lambda path: iter(listing), stat=os.stat, path=os.path)
    monkeypatch.setattr(budget_module, "os", fake_os)
    assert bytes_under(tmp_path) == 8


def test_full_at_start_fits_one_step_exactly_and_says_how_much_is_held(tmp_path: Path) -> None:
    """64 KB short of 1 MB leaves room for exactly one step of ranges; one byte more does not."""
    (tmp_path / "earlier_run.bin").write_bytes(b"x" * (MB - 64 * 1024))
    assert DiskBudget(1, tmp_path).full_at_start() == ""
    (tmp_path / "more.bin").write_bytes(b"x")
    assert DiskBudget(1, tmp_path).full_at_start() == (
        f"{tmp_path} already holds 0.9 MB, and one step needs about 64 KB more")  # 15/16 MB


def test_choose_edges_of_the_room_left(tmp_path: Path) -> None:
    """No room (used == limit) skips; one byte left lets an unmeasured level measure; an
    estimate that exactly fills the room fits. ``why`` gives the MB used and the limit."""
    budget = DiskBudget(2, tmp_path)
    (tmp_path / "held").write_bytes(b"x" * (2 * MB))
    assert budget.choose("level1", 1) == (None, "2.0 MB of max_disk_mb=2 used")
    (tmp_path / "held").write_bytes(b"x" * (2 * MB - 1))
    assert budget.choose("level1", 1) == ("level1", "")
    (tmp_path / "held").write_bytes(b"x" * (3 * MB // 2))
    budget.learn("level1", MB // 4, 1)
    assert budget.choose("level1", 2) == ("level1", "")  # 2 x 0.25 MB = the 0.5 MB left
    budget.learn("level1", MB // 2, 1)
    assert budget.choose("level1", 2) == (
        "level0", "1.5 MB of max_disk_mb=2 used; level1 would need about 1.0 MB")


def test_choose_with_no_save_root_yet_has_the_whole_budget(tmp_path: Path) -> None:
    budget = DiskBudget(1, tmp_path / "not_yet")
    budget.learn("level1", MB, 1)
    assert budget.choose("level1", 1) == ("level1", "")  # 1 MB per step fills 1 MB exactly


def test_learn_keeps_the_cost_per_step_even_when_nothing_was_written(tmp_path: Path) -> None:
    budget = DiskBudget(4, tmp_path)
    budget.learn("level1", 6 * MB, 3)
    budget.learn("level_none", 0, 2)
    assert budget.per_step == {"level1": 2 * MB, "level_none": 0.0}


def test_full_save_root_warning_names_the_roles_field(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "earlier_run.bin").write_bytes(b"x" * (MB + 1))
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config({"profile": True, "max_disk_mb": 1,
                                     "profile_save_path": str(tmp_path)}, rank=0, role="actor")
    prof.close()
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: profiler_config.actor.max_disk_mb=1: {tmp_path} already holds 1.0 MB,"
        " and one step needs about 64 KB more; no capture will be written (raise max_disk_mb,"
        " or clear the folder)"]


# -- the part, on a host double --------------------------------------------------------------
class _Host:
    """What ``Budget`` uses of its profiler: the config, the plan, the save root, the records
    and the warnings (written down)."""

    def __init__(self, root: Path, plan: CapturePlan) -> None:
        self.cfg = validate({"profile": True, "max_disk_mb": 1, "profile_level": "level1"})
        self.plan, self.save_root = plan, root
        self.rank, self.role = 5, "actor"
        self.captures: list[CaptureRecord] = []
        self.warned: list[tuple[str, str]] = []

    def warn_once(self, key: str, message: str) -> None:
        self.warned.append((key, message))


def _budget(tmp_path: Path, plan: CapturePlan | None = None) -> tuple[Budget, _Host]:
    host = _Host(tmp_path, plan or CapturePlan(enabled=True, one_per_step=True))
    return Budget(cast(Any, host)), host


def _starting(host: _Host, capture: Capture, trigger: Trigger | None = None) -> Starting:
    return Starting(capture, trigger, host.cfg)


@pytest.mark.parametrize("capture,trigger,one_per_step,steps", [
    (Capture(ALL, 2), Trigger("anomaly", 3), True, 3),  # a triggered run of whole steps
    (Capture("actor_update", 2), Trigger("anomaly", 3), True, 1),  # each stage execution
    (Capture("actor_update", 2), None, False, 1),
    (Capture(ALL, 2), None, True, 1),  # one step per capture
    (Capture(ALL, 2), None, False, 3),  # the window [1, 5) from step 2: steps 2, 3, 4
])
def test_each_capture_is_estimated_for_the_steps_it_will_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: Capture,
        trigger: Trigger | None, one_per_step: bool, steps: int) -> None:
    part, host = _budget(tmp_path, CapturePlan(enabled=True, start=1, end=5,
                                               one_per_step=one_per_step))
    asked: list[tuple[str, int]] = []

    def choose(level: str, n: int) -> tuple[str | None, str]:
        asked.append((level, n))
        return level, ""

    monkeypatch.setattr(part.budget, "choose", choose)
    part.before_capture(_starting(host, capture, trigger))
    assert asked == [("level1", steps)]


def test_a_lowered_capture_warns_under_lowered_with_the_reason(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    part.budget.learn("level1", 2 * MB, 1)
    starting = _starting(host, Capture(ALL, 7))
    part.before_capture(starting)
    assert starting.cfg.profile_level is Level.level0 and not starting.skip
    assert host.warned == [("lowered", "mindspeed-prof: disk budget: capturing step 7 at "
                            "level0 instead of level1 (0.0 MB of max_disk_mb=1 used; level1 "
                            "would need about 2.0 MB)")]


def test_skipped_captures_make_one_record_that_counts_them(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    (tmp_path / "held").write_bytes(b"x" * MB)
    firsts = [_starting(host, Capture("actor_update", step, index=1)) for step in (3, 4, 5)]
    for starting in firsts:
        part.before_capture(starting)
    assert [s.skip for s in firsts] == ["disk budget: 1.0 MB of max_disk_mb=1 used"] * 3
    (record,) = host.captures
    assert (record.stage, record.step, record.index, record.rank, record.role) == (
        "actor_update", 3, 1, 5, "actor")
    assert (record.backend, record.reason, record.skipped, record.skipped_captures) == (
        "none", "disk_budget", "1.0 MB of max_disk_mb=1 used", 3)
    assert host.warned == [  # the profiler's warn_once says the first only
        ("skipped", f"mindspeed-prof: disk budget: skipping captures from step {step} on while "
                    "there is no room (1.0 MB of max_disk_mb=1 used)") for step in (3, 4, 5)]


def test_one_skip_is_counted_once(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    (tmp_path / "held").write_bytes(b"x" * MB)
    part.before_capture(_starting(host, Capture(ALL, 3)))
    assert [(c.stage, c.skipped_captures) for c in host.captures] == [(ALL, 1)]


def test_only_a_written_capture_with_a_level_teaches_its_cost(tmp_path: Path) -> None:
    part, _ = _budget(tmp_path / "root")
    written = tmp_path / "trace.json"
    written.write_bytes(b"x" * 1000)

    def record(files: list[str], level: str | None) -> CaptureRecord:
        return CaptureRecord(stage=ALL, step=1, index=0, rank=0, role="integrated",
                             backend="torch", level=level, steps=[1, 2], files=files)

    part.on_capture(record([str(written)], "level1"), "stop failed")  # an error
    part.on_capture(record([], "level1"), "")  # nothing written
    part.on_capture(record([str(written)], None), "")  # no level
    assert part.budget.per_step == {}
    part.on_capture(record([str(written)], "level1"), "")
    assert part.budget.per_step == {"level1": 500.0}
