"""A save root or range file deleted mid-run (``rm -rf``): noticed at the next flush with one
warning, the profiler stops or writes a new file, and what the job lists (the manifest's
captures and files) never names a file that is gone."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.formats.manifest import Manifest, capture_count, job_files, nothing_captured


def _wait_written(prof: Profiler) -> None:
    """The range file's writer thread done with what it was handed (as a step end leaves it)."""
    spans = prof._capturer._spans
    if spans is not None:
        spans.wait()


def test_a_save_root_deleted_mid_window_is_noticed_with_one_warning_and_profiling_stops(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 120-step window; the root deleted at step 20: one warning naming the range file,
    profiling off (training goes on), nothing written after (the root is not made again),
    and the job lists no capture file."""
    root = tmp_path / "save"
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "profile_step_start": 1,
            "profile_step_end": 121,
            "on_demand": False,
            "profile_save_path": str(root),
        },
        rank=0,
        run="vanish",
    )
    with (
        caplog.at_level(logging.WARNING, logger="mindspeed_prof"),
        pytest.warns(RuntimeWarning, match="removed while being written"),
    ):
        for step in range(1, 121):
            with prof.step(step):
                pass
            if step == 20:
                _wait_written(prof)
                shutil.rmtree(root)
            time.sleep(0.005)  # steps of a real length: a flush is due every 100 ms
    prof.close()
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "removed while being written" in messages[0]
    assert "mstx.trace.json" in messages[0] and "profiling is off" in messages[0]
    assert prof.failed and not root.exists()
    records = list(prof.captures)
    assert job_files(root, records, "vanish") == [] and records == []
    manifest = Manifest(status="completed", captures=records, files=[], profiler_failed=True)
    assert capture_count(manifest) == 0  # the last line: "profiling failed", not "1 capture"
    assert nothing_captured(manifest) == "profiling failed in this job (its log names the cause)"


def test_a_root_deleted_between_captures_gets_new_files_and_the_gone_ones_are_listed_nowhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One capture per stage execution; the root deleted between two: the next capture writes
    a new file under a new root, and the job's list of files (and each capture's) holds only
    the files still there."""
    root = tmp_path / "save"
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "stage": "actor_update",
            "profile_step_start": 1,
            "profile_step_end": 41,
            "on_demand": False,
            "profile_save_path": str(root),
        },
        rank=0,
        run="vanish2",
    )
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 41):
            with prof.step(step), prof.stage("actor_update"):
                pass
            if step == 20:
                shutil.rmtree(root)
    prof.close()
    assert not prof.failed and caplog.records == []
    records = list(prof.captures)
    listed = job_files(root, records, "vanish2")
    kept = records  # the captures whose files were deleted: listed nowhere
    assert [r.step for r in kept] == list(range(21, 41))
    assert len(listed) == 20 and all((root / f.path).stat().st_size == f.bytes for f in listed)
    assert sorted(str(root / f.path) for f in listed) == sorted(f for r in kept for f in r.files)
