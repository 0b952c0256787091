"""Disk budget: captures lowered or skipped so the save root stays under max_disk_mb."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import torch

from mindspeed_prof import Profiler
from mindspeed_prof.capture import budget as budget_module
from mindspeed_prof.capture.budget import LEVELS, Budget, Choice, DiskBudget, bytes_under
from mindspeed_prof.capture.ledger import Ledger
from mindspeed_prof.capture.part import Starting
from mindspeed_prof.capture.plan import ALL, Capture, CapturePlan, Trigger
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import Level
from mindspeed_prof.config.validate import ConfigError, validate

MB = 1024 * 1024


class _Used:
    """The ledger's figure, set by hand."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self) -> int:
        return self.bytes


def test_choose_lowers_then_skips() -> None:
    used = _Used()
    budget = DiskBudget(1, used)
    assert budget.choose("level1", 1) == Choice("level1", 1)  # unmeasured: this capture measures
    budget.learn("level1", MB // 2, 1)
    budget.learn("level0", MB // 8, 1)
    choice = budget.choose("level1", 3)
    assert choice.level == "level0" and choice.steps == 3
    assert "level1 would need about 1.5 MB" in choice.why
    budget.learn("level_none", 1000, 1)
    used.bytes = MB - 10_000
    assert budget.choose("level1", 3).level == "level_none"
    used.bytes += 20_000
    choice = budget.choose("level0", 1)
    assert choice.level is None and "of max_disk_mb=1 used" in choice.why


def test_an_unmeasured_level_is_measured_by_one_step_then_the_window_goes_on() -> None:
    """A window of 10 steps at a level not measured yet: one step measures it; once measured,
    the rest is one capture where it fits, else as many steps as fit at the highest level
    that holds one."""
    used = _Used()
    budget = DiskBudget(10, used)
    first = budget.choose("level1", 10)
    assert first == Choice("level1", 1, "level1 not measured yet: one step measures it")
    budget.learn("level1", MB // 2, 1)
    assert budget.choose("level1", 9) == Choice("level1", 9)  # 4.5 MB fits
    budget.learn("level0", MB // 4, 1)
    budget.learn("level_none", 2 * MB, 1)  # a level that costs more than one above it
    used.bytes = 8 * MB
    partial = budget.choose("level1", 9)  # 2 MB left: 8 steps of level0 or 4 of level1
    assert (partial.level, partial.steps) == ("level1", 4)
    assert "9 steps at level1 would need about 4.5 MB" in partial.why


def test_negative_budget_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"integrated\.max_disk_mb=-1"):  # a flat section
        validate({"max_disk_mb": -1})


@pytest.mark.parametrize("stage", ["actor_update", "all"])
def test_large_captures_stay_within_one_step_of_the_budget(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stage: str
) -> None:
    """Every capture shape: one capture per stage execution, and a whole-step window (one
    capture where it fits; split, with one warning, only to measure a level or where room
    runs out), lowered or stopped so the job's output stays within one step of the budget."""
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "torch",
            "stage": stage,
            "profile_level": "level1",
            "profile_record_shapes": True,
            "profile_step_start": 1,
            "profile_step_end": 30,
            "max_disk_mb": 1,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
    )
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
    assert sum(sizes) <= MB + largest  # overshoot: at most one capture (one step)
    levels = [c.level for c in prof.captures if not c.skipped]
    assert levels[0] == "level1" and levels[-1] != "level1"  # lowered once measured
    messages = [r.getMessage() for r in caplog.records]
    assert sum("instead of level1" in m for m in messages) <= 1
    if stage == "all":  # never one file per step: a few captures, the last holding the rest
        taken = [c for c in prof.captures if not c.skipped]
        assert len(taken) <= 2 * len(LEVELS) and max(len(c.steps) for c in taken) > 10
        assert sorted(s for c in taken for s in c.steps) == list(range(1, 30))
        assert sum("are split" in m for m in messages) == 1
    else:
        skipped = [c for c in prof.captures if c.skipped]
        assert skipped and skipped[0].reason == "disk_budget"
        assert sum("skipping captures" in m for m in messages) == 1


def test_a_window_that_fits_is_one_capture_whatever_the_root_holds(tmp_path: Path) -> None:
    """A save root already holding more than the budget (a dataset, an earlier run) does not
    count: only what this job writes does; the window is one capture once its level is
    measured (the first step measures it)."""
    (tmp_path / "dataset.bin").write_bytes(b"x" * (2 * MB))
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "profile_step_start": 1,
            "profile_step_end": 40,
            "max_disk_mb": 1,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
        run="one-window",
    )
    for step in range(1, 40):
        with prof.step(step):
            pass
    prof.close()
    assert [c.steps for c in prof.captures] == [[1], list(range(2, 40))]
    assert all(Path(f).is_file() for c in prof.captures for f in c.files)


def test_learns_the_largest_cost_per_step_of_each_level() -> None:
    budget = DiskBudget(4, _Used())
    budget.learn("level1", 3 * MB, 1)
    budget.learn("level1", MB // 4, 1)  # a cheap step after an expensive one
    budget.learn("level1", 0, 0)  # no steps: teaches nothing
    assert budget.per_step == {"level1": 3 * MB}
    choice = budget.choose("level1", 2)  # 6 MB: the largest cost decides
    assert choice.level == "level0" and "level1 would need about 6.0 MB" in choice.why


def test_a_lowered_capture_teaches_the_level_it_was_taken_at(tmp_path: Path) -> None:
    """The configured level is level1; once lowered, what a capture wrote is level0's cost."""
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "torch",
            "stage": "all",
            "profile_level": "level1",
            "profile_record_shapes": True,
            "profile_step_start": 1,
            "profile_step_end": 30,
            "max_disk_mb": 1,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
    )
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
        largest = max(
            sum(bytes_under(Path(f)) for f in c.files) / len(c.steps)
            for c in taken
            if c.level == level
        )
        assert budget.per_step[level] == largest


# -- exact sizes, edges and messages --------------------------------------------------------
def test_bytes_under_adds_every_file_and_skips_one_gone_since_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture's folder: a file removed between the folder's listing and its stat counts 0,
    and the files listed after it still count."""
    (tmp_path / "a").write_bytes(b"x" * 3)
    (tmp_path / "c").write_bytes(b"x" * 5)
    assert bytes_under(tmp_path / "a") == 3 and bytes_under(tmp_path / "empty") == 0
    listing: list[tuple[str, list[str], list[str]]] = [(str(tmp_path), [], ["a", "gone", "c"])]
    fake_os = SimpleNamespace(walk=lambda path: iter(listing), stat=os.stat, path=os.path)
    monkeypatch.setattr(budget_module, "os", fake_os)
    assert bytes_under(tmp_path) == 8


def test_choose_edges_of_the_room_left() -> None:
    """No room (used == limit) skips; one byte left lets an unmeasured level measure; an
    estimate that exactly fills the room fits. ``why`` gives the MB used and the limit."""
    used = _Used()
    budget = DiskBudget(2, used)
    used.bytes = 2 * MB
    assert budget.choose("level1", 1) == Choice(None, 0, "2.0 MB of max_disk_mb=2 used")
    used.bytes = 2 * MB - 1
    assert budget.choose("level1", 1) == Choice("level1", 1)
    used.bytes = 3 * MB // 2
    budget.learn("level1", MB // 4, 1)
    assert budget.choose("level1", 2) == Choice("level1", 2)  # 2 x 0.25 MB = the 0.5 MB left
    budget.learn("level1", MB // 2, 1)
    assert budget.choose("level1", 2) == Choice(
        "level0",
        1,
        "1.5 MB of max_disk_mb=2 used; level1 would need about 1.0 MB; "
        "level0 not measured yet: one step measures it",
    )


def test_learn_keeps_the_cost_per_step_even_when_nothing_was_written() -> None:
    budget = DiskBudget(4, _Used())
    budget.learn("level1", 6 * MB, 3)
    budget.learn("level_none", 0, 2)
    assert budget.per_step == {"level1": 2 * MB, "level_none": 0.0}


# -- the part, on a host double --------------------------------------------------------------
class _Host:
    """What ``Budget`` uses of its profiler: the config, the plan, the save root, the records
    and the warnings (written down)."""

    def __init__(self, root: Path, plan: CapturePlan) -> None:
        self.cfg = validate({"profile": True, "max_disk_mb": 1, "profile_level": "level1"})
        self.plan, self.save_root = plan, root
        self.rank, self.role, self.run = 5, "actor", ("r1", "given")
        self.captures: list[CaptureRecord] = []
        self.warned: list[tuple[str, str]] = []

    def warn_once(self, key: str, message: str) -> None:
        self.warned.append((key, message))


def _budget(tmp_path: Path, plan: CapturePlan | None = None) -> tuple[Budget, _Host]:
    host = _Host(tmp_path, plan or CapturePlan(enabled=True, one_per_step=True))
    return Budget(cast(Any, host)), host


def _starting(host: _Host, capture: Capture, trigger: Trigger | None = None) -> Starting:
    return Starting(capture, trigger, host.cfg)


@pytest.mark.parametrize(
    "capture,trigger,one_per_step,steps",
    [
        (Capture(ALL, 2), Trigger("anomaly", 3), True, 3),  # a triggered run of whole steps
        (Capture("actor_update", 2), Trigger("anomaly", 3), True, 1),  # each stage execution
        (Capture("actor_update", 2), None, False, 1),
        (Capture(ALL, 2), None, True, 1),  # one step per capture (continuous steps off)
        (Capture(ALL, 2), None, False, 3),  # the window [1, 5) from step 2: steps 2, 3, 4
    ],
)
def test_each_capture_is_estimated_for_the_steps_it_will_hold(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capture: Capture,
    trigger: Trigger | None,
    one_per_step: bool,
    steps: int,
) -> None:
    part, host = _budget(
        tmp_path, CapturePlan(enabled=True, start=1, end=5, one_per_step=one_per_step)
    )
    asked: list[tuple[str, int]] = []

    def choose(level: str, n: int) -> Choice:
        asked.append((level, n))
        return Choice(level, n)

    monkeypatch.setattr(part.budget, "choose", choose)
    part.before_capture(_starting(host, capture, trigger))
    assert asked == [("level1", steps)]


def test_a_lowered_capture_warns_under_lowered_with_the_reason(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    part.budget.learn("level1", 2 * MB, 1)
    starting = _starting(host, Capture(ALL, 7))
    part.before_capture(starting)
    assert starting.cfg.profile_level is Level.level0 and not starting.skip
    assert host.warned == [
        (
            "lowered",
            "mindspeed-prof: disk budget: capturing step 7 at "
            "level0 instead of level1 (0.0 MB of max_disk_mb=1 used; level1 "
            "would need about 2.0 MB)",
        )
    ]


def test_skipped_captures_make_one_record_that_counts_them(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    part.ledger.add(MB)  # what this job wrote so far
    firsts = [_starting(host, Capture("actor_update", step, index=1)) for step in (3, 4, 5)]
    for starting in firsts:
        part.before_capture(starting)
    assert [s.skip for s in firsts] == ["disk budget: 1.0 MB of max_disk_mb=1 used"] * 3
    (record,) = host.captures
    assert (record.stage, record.step, record.index, record.rank, record.role) == (
        "actor_update",
        3,
        1,
        5,
        "actor",
    )
    assert (record.backend, record.reason, record.skipped, record.skipped_captures) == (
        "none",
        "disk_budget",
        "1.0 MB of max_disk_mb=1 used",
        3,
    )
    assert host.warned == [  # the profiler's warn_once says the first only
        (
            "skipped",
            f"mindspeed-prof: disk budget: skipping captures from step {step} on while "
            "there is no room (1.0 MB of max_disk_mb=1 used)",
        )
        for step in (3, 4, 5)
    ]


def test_one_skip_is_counted_once(tmp_path: Path) -> None:
    part, host = _budget(tmp_path)
    part.ledger.add(MB)  # what this job wrote so far
    part.before_capture(_starting(host, Capture(ALL, 3)))
    assert [(c.stage, c.skipped_captures) for c in host.captures] == [(ALL, 1)]


def test_only_a_written_capture_with_a_level_teaches_its_cost(tmp_path: Path) -> None:
    part, _ = _budget(tmp_path / "root")
    written = tmp_path / "trace.json"
    written.write_bytes(b"x" * 1000)

    def record(files: list[str], level: str | None) -> CaptureRecord:
        return CaptureRecord(
            stage=ALL,
            step=1,
            index=0,
            rank=0,
            role="integrated",
            backend="torch",
            level=level,
            steps=[1, 2],
            files=files,
        )

    part.on_capture(record([str(written)], "level1"), "stop failed")  # an error
    part.on_capture(record([], "level1"), "")  # nothing written
    part.on_capture(record([str(written)], None), "")  # no level
    assert part.budget.per_step == {}
    assert part.ledger.mine == 1000  # what it wrote counts, whether or not it teaches
    part.on_capture(record([str(written)], "level1"), "")
    assert part.budget.per_step == {"level1": 500.0} and part.ledger.used == 2000


# -- the root is never walked: a crowded or slow save root costs a step nothing --------------
def test_a_crowded_slow_root_is_never_walked_nor_its_files_statted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A save root holding 2,000 files of a dataset, whose every stat would take 1 ms (a slow
    NFS, as a double): over a 60-step window under a budget, no file of the dataset is ever
    statted and its folder never listed, on any thread; what the job writes counts."""
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    for i in range(2000):
        (dataset / f"shard{i}.bin").write_bytes(b"x" * 1000)
    touched: list[str] = []
    real_stat, real_scandir, real_walk = os.stat, os.scandir, os.walk

    def slow_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(str(dataset)):
            touched.append(str(path))
            time.sleep(0.001)
        return real_stat(path, *args, **kwargs)

    def listing(real: Any) -> Any:
        def look(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if str(path) in (str(tmp_path), str(dataset)):
                touched.append(str(path))
            return real(path, *args, **kwargs)

        return look

    monkeypatch.setattr(os, "stat", slow_stat)
    monkeypatch.setattr(os, "scandir", listing(real_scandir))
    monkeypatch.setattr(os, "walk", listing(real_walk))
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "profile_step_start": 1,
            "profile_step_end": 61,
            "max_disk_mb": 1,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
        run="crowded",
    )
    for step in range(1, 61):
        with prof.step(step):
            pass
    prof.close()
    ledger = next(p for p in prof.parts if isinstance(p, Budget)).ledger
    assert touched == []
    assert ledger.mine == sum(Path(f).stat().st_size for c in prof.captures for f in c.files)
    assert [len(c.steps) for c in prof.captures] == [1, 59]


def test_the_job_s_ranks_count_each_other_through_the_ledger(tmp_path: Path) -> None:
    """Two ranks of one job share a root: each counts what the other published; a third
    process of another job (another run) does not count."""
    a, b = Ledger(tmp_path, "rank0"), Ledger(tmp_path, "rank1")
    other = Ledger(tmp_path, "rank0")
    for ledger, run in ((a, "job"), (b, "job"), (other, "another")):
        ledger._folder = tmp_path / ".budget" / run  # as ``share`` sets it, without its thread
    a.add(3 * MB)
    other.add(50 * MB)
    for ledger in (a, other, b):
        ledger.look()
    assert (b.others, b.used) == (3 * MB, 3 * MB)
    b.add(MB)
    b.look()
    a.look()
    assert a.used == 4 * MB and a.others == MB


def test_the_ledger_looks_off_the_training_thread_and_rate_limited(tmp_path: Path) -> None:
    """``share`` starts the thread: it looks once at once, then no more than once per
    interval, and once more at ``close``; the caller never looks."""
    seen: list[str] = []
    ledger = Ledger(tmp_path, "rank0", interval_s=3600.0)
    real = ledger.look

    def look() -> None:
        seen.append(threading.current_thread().name)
        real()

    ledger.look = look  # type: ignore[method-assign]
    ledger.add(10)
    ledger.share("job")
    ledger.share("job")  # one thread whatever
    deadline = time.monotonic() + 30
    while len(seen) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    ledger.add(20)
    ledger.close()
    assert ledger._thread is not None
    ledger._thread.join(30)
    assert seen == ["mindspeed-prof-ledger"] * 2  # the first look, and the last at close
    assert (tmp_path / ".budget" / "job" / "rank0").read_text() == "30"


def test_memory_stays_bounded_over_a_long_run(tmp_path: Path) -> None:
    """3,000 steps under a budget: the budget keeps nothing per step (its figures are a few
    numbers), and the window is still one capture after the first measuring step."""
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "profile_level": "level_none",
            "profile_step_start": 1,
            "profile_step_end": 3001,
            "max_disk_mb": 10,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
        run="long",
    )
    part = next(p for p in prof.parts if isinstance(p, Budget))
    for step in range(1, 3001):
        with prof.step(step):
            pass
    prof.close()
    assert len(prof.captures) == 2 and len(part.budget.per_step) <= len(LEVELS)
    assert vars(part.ledger).keys() == vars(Ledger(tmp_path, "x")).keys()
