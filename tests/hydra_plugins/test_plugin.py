"""The installed plugin seen from a Hydra app that lives outside the package."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import run_app


def test_plugin_import_is_cheap() -> None:
    code = ("import sys, hydra_plugins.mindspeed_prof.mindspeed_prof_plugin as p; "
            "heavy = [m for m in ('torch', 'ray', 'torch_npu', 'rich', 'msgspec') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_mstx_light_cfg_job(app: Path) -> None:
    out = run_app(app, "profiler=mstx_light", "--cfg", "job", check=True).stdout
    assert "profile: true" in out and "mstx: true" in out and "profile_level: level_none" in out


def test_help_lists_presets(app: Path) -> None:
    out = run_app(app, "--help", check=True).stdout
    assert "profiler: dpo, full, memory_debug, mstx_light, none, stage_scoped" in out
    assert "profiler_sweep: all_stages" in out


def test_preset_typo_lists_available_options(app: Path) -> None:
    proc = run_app(app, "profiler=mstx_lite")
    assert proc.returncode != 0 and "mstx_light" in proc.stderr


@pytest.mark.parametrize("override,field,allowed", [
    ("profiler_config.integrated.stage=bogus", "stage", "actor_generate"),
    ("profiler_config.integrated.profile_level=level9", "profile_level", "level_none"),
    ("profiler_config.integrated.profile_export_type=csv", "profile_export_type", "text"),
    ("profiler_config.integrated.profile_step_end=1", "profile_step_end", "greater than"),
    ("profiler_config.integrated.profile_ranks=[-1]", "profile_ranks", "integers >= 0"),
    ("profiler_config.integrated.profile_ranks=abc", "profile_ranks", '"all"'),
])
def test_bad_override_stops_before_task(app: Path, override: str, field: str, allowed: str) -> None:
    proc = run_app(app, "profiler=mstx_light", override)
    assert proc.returncode != 0
    assert "TASK BODY RAN" not in proc.stdout
    assert f"profiler_config.integrated.{field}" in proc.stderr and allowed in proc.stderr


def test_two_job_sweep(app: Path) -> None:
    proc = run_app(app, "-m", "profiler=stage_scoped",
                   "profiler_config.integrated.stage=actor_generate,actor_update", check=True)
    assert proc.stdout.count("TASK DONE") == 2
    jobs = sorted(p.parent.name for p in app.glob("multirun/*/*/*/profiler_data"))
    assert jobs == ["0", "1"]


def test_sweep_over_a_stage_list_and_a_stage(app: Path) -> None:
    run_app(app, "-m", "profiler=stage_scoped",
            "profiler_config.integrated.stage=[actor_generate,actor_update],critic_update",
            check=True)
    (sweep,) = app.glob("multirun/*/*")
    folders = [sorted(p.name for p in (sweep / job / "profiler_data").iterdir() if p.is_dir())
               for job in ("0", "1")]
    assert folders == [["actor_generate", "actor_update"], ["critic_update"]]
    jobs = json.loads((sweep / "sweep_summary.json").read_text())["jobs"]
    assert [j["stage"] for j in jobs] == [["actor_generate", "actor_update"], "critic_update"]
    assert [j["captures"] for j in jobs] == [2, 1] and all(j["ms_per_stage"] for j in jobs)
