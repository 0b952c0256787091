"""``profile_analysis: true``: a summary next to each capture, hung on the profiler's on_capture."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.summary import after_capture


def test_profile_analysis_writes_summary_next_to_capture(tmp_path: Path) -> None:
    cfg = {"integrated": {"profile": True, "profile_save_path": str(tmp_path),
                          "stage": "actor_generate", "profile_analysis": True, "mstx": True}}
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
