"""``profile_analysis: true``: a summary next to each capture, hung on the profiler's on_capture."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.summary import after_capture


def test_profile_analysis_writes_summary_next_to_capture(tmp_path: Path) -> None:
    cfg = {
        "integrated": {
            "profile": True,
            "profile_save_path": str(tmp_path),
            "stage": "actor_generate",
            "profile_analysis": True,
            "mstx": True,
        }
    }
    with Profiler.from_config(cfg, on_capture=after_capture(cfg)) as prof:
        for step in (1, 2):
            with prof.step(step), prof.stage("actor_generate"):
                torch.randn(8, 8) @ torch.randn(8, 8)
                with mstx.range("inner"):
                    pass
    (summary,) = (tmp_path / "actor_generate").glob("*.summary.json")
    data = json.loads(summary.read_text())
    assert [r["stage"] for r in data["stage_rank"]] == ["actor_generate"]
    assert data["stage_rank"][0]["count"] == 1 and data["top_ops"]


def test_no_hook_without_profile_analysis() -> None:
    assert after_capture({"integrated": {"profile": True}}) == []


def test_a_jobs_run_summary_is_of_its_own_run(tmp_path: Path) -> None:
    """Two runs in one save root: a job's ``analysis.json`` analyses its run, not the other
    (nor both); a run that captured nothing writes none."""
    from capture_fixtures import make_run

    from mindspeed_prof.analysis.summary import write_run_summary
    from mindspeed_prof.capture import run

    make_run(tmp_path, ranks=(0, 1), profile_level="level_none")
    first = run.resolve()[0]
    run.new_job()
    make_run(tmp_path, ranks=(0,), profile_level="level_none")
    path = write_run_summary(tmp_path, first)
    assert path is not None
    data = json.loads(path.read_text())
    assert data["run"]["id"] == first and data["ranks"] == [0, 1]
    assert len(data["runs"]) == 2
    assert write_run_summary(tmp_path, "a-run-that-captured-nothing") is None
