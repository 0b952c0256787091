"""The captured stage nested in itself: the capture ends at the outer exit, not the inner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof import Profiler, mstx


@pytest.mark.parametrize("depth", [2, 3])
def test_nested_stage_is_one_capture_to_the_outer_exit(tmp_path: Path, depth: int) -> None:
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "stage": "actor_update",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            }
        },
        rank=0,
    )

    def stage(level: int) -> None:
        with prof.stage("actor_update"):
            if level < depth:
                stage(level + 1)
            with mstx.range(f"after_level{level}"):  # after every deeper stage has exited
                pass

    with prof:
        for step in (1, 2):
            with prof.step(step):
                stage(1)
                with mstx.range("outside"):
                    pass
    assert [(c.step, c.reason) for c in prof.captures] == [(1, "stage_end"), (2, "stage_end")]
    for c in prof.captures:
        (path,) = c.files
        names = {e["name"] for e in json.loads(Path(path).read_text())["traceEvents"]}
        assert {f"after_level{i}" for i in range(1, depth + 1)} <= names
        assert "outside" not in names
