"""A step's total in ``per_step`` is the step's own length, not the sum of its stages."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.config.schema import STAGES

GAP_S = 0.03  # work in each step outside any stage (data loading, logging...)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gap")
    with Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(root),
            }
        },
        rank=0,
    ) as prof:
        for step in (1, 2):
            with prof.step(step):
                for stage in STAGES[:2]:
                    with prof.stage(stage):
                        time.sleep(0.005)
                time.sleep(GAP_S)
    return root


def test_step_total_includes_time_outside_stages(run_dir: Path) -> None:
    result = analyse(run_dir)
    steps = {r.step: r for r in tables(result).per_step}
    assert sorted(steps) == [1, 2]
    step_ranges = {r.step: r.dur / 1000.0 for r in tables(result).ranges if r.kind == "step"}
    for step, row in steps.items():
        stages = sum(row.stages[s] for s in STAGES[:2])
        assert row.total == pytest.approx(step_ranges[step])  # the step range itself
        assert row.total is not None and row.total - stages >= GAP_S * 1000 * 0.9
