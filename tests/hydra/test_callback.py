"""The Hydra callback, run as users run it: subprocesses of an app in a temp dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import load_json, run_app

from mindspeed_prof.analysis.analyse import analyse

STAGES3 = "actor_generate,actor_update,critic_update"


def manifests(app: Path, kind: str = "outputs") -> list[dict]:
    return [load_json(p) for p in sorted(app.glob(f"{kind}/**/profiler_data/manifest.json"))]


def test_single_run_writes_manifest(app: Path) -> None:
    proc = run_app(app, "profiler=full", check=True)
    (m,) = manifests(app)
    assert m["status"] == "completed" and m["job"]["overrides"] == ["profiler=full"]
    assert m["profiler_config"]["integrated"]["profile_level"] == "level1"
    assert m["versions"]["torch"] and m["versions"]["hydra-core"].startswith("1.3")
    assert m["pid"] > 0 and m["host"] and m["duration_s"] > 0
    assert [c["steps"] for c in m["captures"]] == [[2, 3]]
    assert {Path(f["path"]).parent.name for f in m["files"]} == {"integrated"}
    assert Path(m["job"]["output_dir"]).is_absolute()
    # One line says where the captures are and how to read them; the command works as given.
    root = next(app.glob("outputs/*/*/profiler_data")).relative_to(app)
    (line,) = [x for x in (proc.stdout + proc.stderr).splitlines() if "mindspeed-prof:" in x]
    assert line.endswith(f"mindspeed-prof: 1 capture in {root}; read them: "
                         f"mindspeed-prof analyse {root}")
    analysed = subprocess.run([sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(root)],
                              cwd=app, capture_output=True, text=True, timeout=300)
    assert analysed.returncode == 0 and analysed.stdout.startswith(f"1 capture under {root}")
    assert "USDT" not in proc.stderr + proc.stdout  # torch's start/stop markers


def test_profile_off_writes_nothing(app: Path) -> None:
    proc = run_app(app, check=True)
    assert "TASK DONE" in proc.stdout
    assert not list(app.glob("outputs/**/profiler_data"))


def check_sweep(app: Path) -> None:
    (sweep,) = app.glob("multirun/*/*")
    jobs = sorted((p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit()),
                  key=lambda p: int(p.name))
    assert len(jobs) == 3
    for job, stage in zip(jobs, STAGES3.split(",")):
        root = job / "profiler_data"
        m = load_json(root / "manifest.json")
        assert m["status"] == "completed" and m["profiler_config"]["integrated"]["stage"] == stage
        dirs = sorted(p.name for p in root.iterdir() if p.is_dir())
        assert dirs == [stage]
        assert all(json.loads((root / f["path"]).read_text())["traceEvents"]
                   for f in m["files"] if f["path"].endswith(".json"))
    summary = load_json(sweep / "sweep_summary.json")
    assert [j["stage"] for j in summary["jobs"]] == STAGES3.split(",")
    assert all(j["captures"] == 1 and j["ms_per_stage"] > 0 for j in summary["jobs"])


def test_stage_sweep_basic_launcher(app: Path) -> None:
    proc = run_app(app, "-m", "profiler=stage_scoped",
                   f"profiler_config.integrated.stage={STAGES3}", check=True)
    check_sweep(app)
    assert "ms/stage" in proc.stdout  # the sweep summary table


def test_stage_sweep_says_when_the_chosen_stage_never_ran(app: Path) -> None:
    proc = run_app(app, "-m", "profiler=stage_scoped",
                   "profiler_config.integrated.stage=actor_update,critic_compute_values",
                   check=True)
    never = "stage critic_compute_values never ran in this job (step 1)"
    assert f"job 1: {never}\n" in proc.stdout  # the sweep summary, under its table
    (sweep,) = app.glob("multirun/*/*")
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["captures"], j["note"]) for j in jobs] == [(1, None), (0, never)]
    assert proc.stdout.count("mindspeed-prof: 1 capture in ") == 1
    assert f"mindspeed-prof: nothing captured in {sweep.relative_to(app)}/1/profiler_data: " \
           f"{never}" in proc.stdout


def test_stage_sweep_joblib_launcher(app: Path) -> None:
    run_app(app, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
            "profiler=stage_scoped", f"profiler_config.integrated.stage={STAGES3}", check=True)
    check_sweep(app)


def test_sweep_across_presets_turns_callback_on_for_all(app: Path) -> None:
    run_app(app, "-m", "profiler=none,mstx_light,stage_scoped", check=True)
    found = sorted(m["profiler_config"]["integrated"]["profile_level"]
                   for m in manifests(app, "multirun"))
    assert found == ["level1", "level_none"]


def test_task_that_raises_leaves_failed_manifest_and_loadable_captures(app: Path) -> None:
    proc = run_app(app, "profiler=full", "fail_at=2")
    assert proc.returncode != 0
    (m,) = manifests(app)
    assert m["status"] == "failed" and m["captures"][0]["reason"] == "error"
    root = next(app.glob("outputs/**/profiler_data"))
    for f in m["files"]:
        assert "ProfilerStep#2" in (root / f["path"]).read_text()
        json.loads((root / f["path"]).read_text())


def test_sys_exit_still_flushes(app: Path) -> None:
    proc = run_app(app, "profiler=full", "exit_at=3")
    assert proc.returncode == 3
    (m,) = manifests(app)
    assert m["status"] == "exited" and m["captures"] and m["files"]
    root = next(app.glob("outputs/**/profiler_data"))
    result = analyse(root)
    assert not result.bad and {t.kind for t in result.traces} == {"torch", "spans"}
    assert {(r.step, r.rank) for r in result.per_step()} == {(2, 0), (3, 0)}


@pytest.mark.parametrize("override", ["profiler_config.integrated.profile_step_start=0",
                                      "profiler_config.integrated.profile_ranks=[1,-2]"])
def test_invalid_override_stops_job_without_files(app: Path, override: str) -> None:
    proc = run_app(app, "profiler=full", override)
    assert proc.returncode != 0 and "TASK BODY RAN" not in proc.stdout
    assert "mindspeed-prof: invalid config" in proc.stderr
    assert not list(app.glob("outputs/**/profiler_data"))


def test_callback_pickles(tmp_path: Path) -> None:
    """Launchers pickle callbacks between jobs: a copy runs the next job like the original."""
    import pickle

    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    import mindspeed_prof
    from mindspeed_prof.hydra.callback import ProfilerCallback

    def job(cb: ProfilerCallback, out: Path) -> dict:
        GlobalHydra.instance().clear()
        with initialize_config_module("mindspeed_prof.conf", version_base=None):
            cfg = compose("demo", overrides=[
                "profiler=mstx_light", f"hydra.runtime.output_dir={out}", "hydra.job.name=t",
                "profiler_config.integrated.profile_step_start=1"], return_hydra_config=True)
        GlobalHydra.instance().clear()
        HydraConfig.instance().set_config(cfg)
        cb.on_job_start(cfg)
        prof = mindspeed_prof.current()
        for step in (1, 2, 3):
            with prof.step(step), prof.stage("actor_update"):
                pass
        cb.on_job_end(cfg)
        (m,) = [load_json(p) for p in out.rglob("manifest.json")]
        return m

    first = pickle.loads(pickle.dumps(ProfilerCallback()))
    m1 = job(first, tmp_path / "a")
    second = pickle.loads(pickle.dumps(first))  # after a job: nothing open is left in it
    m2 = job(second, tmp_path / "b")
    for m in (m1, m2):
        assert m["status"] == "completed" and [c["steps"] for c in m["captures"]] == [[1, 2, 3]]


def test_profile_analysis_writes_run_analysis(app: Path) -> None:
    run_app(app, "profiler=full", "profiler_config.integrated.profile_analysis=true", check=True)
    root = next(app.glob("outputs/**/profiler_data"))
    analysis = load_json(root / "analysis.json")
    assert {r["stage"] for r in analysis["stage_rank"]} == {"actor_generate", "actor_update",
                                                          "critic_update"}
    assert list((root / "integrated").glob("*.summary.json"))
