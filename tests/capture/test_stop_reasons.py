"""Why a capture stopped, and that a whole-step capture stopped by an error is not restarted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler


def make(tmp_path: Path, **fields: Any) -> Profiler:
    return Profiler.from_config(
        {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "profile_save_path": str(tmp_path),
            **fields,
        },
        rank=0,
    )


def run(prof: Profiler, steps: range, fail_step: int = 0) -> None:
    for step in steps:
        try:
            with prof.step(step), prof.stage("actor_update"):
                if step == fail_step:
                    raise RuntimeError("boom")
        except RuntimeError:
            pass  # the trainer skips the bad batch and goes on


def test_stage_capture_stopped_by_an_error_says_so(tmp_path: Path) -> None:
    with make(tmp_path, stage="actor_update", profile_step_end=4) as prof:
        run(prof, range(1, 4), fail_step=2)
    assert [(c.step, c.reason) for c in prof.captures] == [
        (1, "stage_end"),
        (2, "error"),
        (3, "stage_end"),
    ]


@pytest.mark.parametrize("fail_step", [1, 2])
def test_whole_step_capture_is_not_restarted_after_an_error(tmp_path: Path, fail_step: int) -> None:
    with make(tmp_path, profile_step_start=1, profile_step_end=5) as prof:
        run(prof, range(1, 6), fail_step=fail_step)
    (record,) = prof.captures
    assert record.reason == "error" and record.steps == list(range(1, fail_step + 1))
