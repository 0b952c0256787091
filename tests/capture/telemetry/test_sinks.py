"""Telemetry sinks: TensorBoard event files read back with TensorBoard's own reader; faults in a
sink are one warning and training goes on. (Ray's sink: ``tests/ray/test_telemetry.py``.)"""

from __future__ import annotations

import errno
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import fake_clock

from mindspeed_prof import Profiler
from mindspeed_prof.extras import install_line

STAGE_MS = {"actor_generate": 6.0, "actor_update": 4.0}
SLOW_MS = 50.0  # rank 1's actor_update, every step


def _train(root: Path, rank: int, steps: int, clock: Any, **ext: Any) -> Profiler:
    prof = Profiler.from_config(
        {
            "integrated": {"profile_save_path": str(root)},
            "extensions": {"telemetry": ["tensorboard"], **ext},
        },
        rank=rank,
    )
    for step in range(1, steps + 1):
        with prof.step(step):
            for stage, ms in STAGE_MS.items():
                with prof.stage(stage):
                    slow = SLOW_MS if (rank, stage) == (1, "actor_update") else 0.0
                    clock.advance(ms + slow + step)  # each step 1 ms slower than the last
    prof.close()
    return prof


def _scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_each_rank_is_a_run_and_the_slow_rank_shows_from_the_first_step(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    with fake_clock() as clock:
        for rank in (0, 1):
            _train(tmp_path, rank, 3, clock)
    runs = {
        rank: _scalars(tmp_path / "telemetry" / "integrated" / f"rank{rank}") for rank in (0, 1)
    }
    for rank, scalars in runs.items():
        slow = SLOW_MS if rank == 1 else 0.0
        assert set(scalars) == {
            "prof/step/ms",
            "prof/stage/actor_generate/ms",
            "prof/stage/actor_update/ms",
        }
        assert scalars["prof/stage/actor_update/ms"] == [
            (s, pytest.approx(4.0 + slow + s)) for s in (1, 2, 3)
        ]
        assert scalars["prof/step/ms"] == [
            (s, pytest.approx(10.0 + slow + 2 * s)) for s in (1, 2, 3)
        ]
    for (s0, v0), (s1, v1) in zip(
        runs[0]["prof/stage/actor_update/ms"], runs[1]["prof/stage/actor_update/ms"]
    ):
        assert s0 == s1 and v1 - v0 == pytest.approx(SLOW_MS)


def test_an_export_every_n_steps_holds_their_mean_and_close_sends_the_rest(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    with fake_clock() as clock:
        _train(tmp_path, 0, 5, clock, telemetry_every=2)
    scalars = _scalars(tmp_path / "telemetry" / "integrated" / "rank0")
    # steps 1-2 at step 2, 3-4 at step 4, step 5 alone when the profiler closed
    assert scalars["prof/stage/actor_generate/ms"] == [
        (2, pytest.approx(7.5)),
        (4, pytest.approx(9.5)),
        (5, pytest.approx(11.0)),
    ]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "telemetry" in r.getMessage()]


def test_tensorboard_missing_is_one_warning_and_the_figures_are_still_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"), fake_clock() as clock:
        prof = _train(tmp_path, 0, 3, clock, telemetry=["metrics", "tensorboard"])
    assert _warnings(caplog) == [
        "mindspeed-prof: telemetry to tensorboard is off for the rest of this run "
        f"(RuntimeError: needs the tensorboard package ({install_line('tensorboard')})); "
        "training goes on"
    ]
    assert prof.metrics()["prof/stage/actor_generate/ms"] == pytest.approx(9.0)
    assert not (tmp_path / "telemetry").exists()


def test_a_folder_that_cannot_be_made_is_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("tensorboard")
    (tmp_path / "telemetry").write_text("a file where the folder goes")
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"), fake_clock() as clock:
        prof = _train(tmp_path, 0, 3, clock)
    (line,) = _warnings(caplog)
    assert line.startswith(
        "mindspeed-prof: telemetry to tensorboard is off for the rest of this run ("
    ) and line.endswith("); training goes on")
    assert prof.metrics(3)["prof/step/ms"] == pytest.approx(16.0)


def test_a_full_disk_midway_is_one_warning_and_the_steps_before_it_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard.writer import FileWriter

    real = FileWriter.add_summary
    steps: list[int] = []

    def add_summary(self: Any, summary: Any, global_step: int) -> None:
        if global_step >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        steps.append(global_step)
        real(self, summary, global_step)

    monkeypatch.setattr(FileWriter, "add_summary", add_summary)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"), fake_clock() as clock:
        prof = _train(tmp_path, 0, 5, clock)
    assert _warnings(caplog) == [
        "mindspeed-prof: telemetry to tensorboard is off for the rest of this run "
        "(OSError: [Errno 28] No space left on device); training goes on"
    ]
    scalars = _scalars(tmp_path / "telemetry" / "integrated" / "rank0")
    assert [s for s, _ in scalars["prof/step/ms"]] == [1, 2]
    assert steps == [1, 2] and prof.metrics(5)  # no write tried after the fault
