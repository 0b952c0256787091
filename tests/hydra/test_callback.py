"""The Hydra callback, run as users run it: subprocesses of an app in a temp dir."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, cast

import pytest
from helpers import load_json, run_app

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.tables import tables

STAGES3 = "actor_generate,actor_update,critic_update"


def manifest_path(folder: Path) -> Path:
    """The rank-0 manifest of the newest run in ``folder`` (``manifest-<run>.json``: each run
    writes its own)."""
    paths = [p for p in folder.glob("manifest-*.json") if ".rank" not in p.name]
    return max(paths, key=lambda p: load_json(p)["start_time"])


def manifests(app: Path) -> list[dict]:
    """The app's manifests: ``profiler_data/`` in the launch dir (``version_base=None``: no
    chdir), a multirun job's in ``profiler_data/<job>/``."""
    paths = [
        *sorted((app / "profiler_data").glob("manifest-*.json")),
        *sorted(app.glob("profiler_data/*/manifest-*.json")),
    ]
    return [load_json(p) for p in paths if p.is_file()]


def test_single_run_writes_manifest(app: Path) -> None:
    proc = run_app(app, "profiler_config=full", check=True)
    (m,) = manifests(app)
    assert m["status"] == "completed" and m["job"]["overrides"] == ["profiler_config=full"]
    assert m["profiler_config"]["integrated"]["profile_level"] == "level1"
    assert m["versions"]["torch"] and m["versions"]["hydra-core"].startswith("1.3")
    assert m["pid"] > 0 and m["host"] and m["duration_s"] > 0
    assert [c["steps"] for c in m["captures"]] == [[2, 3]]
    assert {Path(f["path"]).parent.name for f in m["files"]} == {"integrated"}
    assert Path(m["job"]["output_dir"]).is_absolute()
    # In the launch dir, as MindSpeed-RL's apps write it (version_base=None: no chdir)
    root = Path("profiler_data")
    assert (app / root / "integrated").is_dir() and not list(app.glob("outputs/**/profiler_data"))
    # One line says where the captures are and how to read them; the command works as given.
    (line,) = [x for x in (proc.stdout + proc.stderr).splitlines() if "mindspeed-prof:" in x]
    assert line.endswith(
        f"mindspeed-prof: 1 capture in {root}; read them: mindspeed-prof analyse {root}"
    )
    analysed = subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(root)],
        cwd=app,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert analysed.returncode == 0 and analysed.stdout.startswith(f"1 capture under {root}")
    assert "USDT" not in proc.stderr + proc.stdout  # torch's start/stop markers


def test_profile_off_writes_nothing(app: Path) -> None:
    proc = run_app(app, check=True)
    assert "TASK DONE" in proc.stdout
    assert not list(app.glob("**/profiler_data"))


def check_sweep(app: Path) -> None:
    (sweep,) = app.glob("multirun/*/*")
    jobs = sorted(
        (p for p in sweep.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)
    )
    assert len(jobs) == 3
    for job, stage in zip(jobs, STAGES3.split(",")):
        root = app / "profiler_data" / job.name  # the launch dir's, one folder per job
        assert not (job / "profiler_data").exists()
        m = load_json(manifest_path(root))
        assert m["status"] == "completed" and m["profiler_config"]["integrated"]["stage"] == stage
        dirs = sorted(p.name for p in root.iterdir() if p.is_dir())
        assert dirs == [stage]
        assert all(
            json.loads((root / f["path"]).read_text())["traceEvents"]
            for f in m["files"]
            if f["path"].endswith(".json")
        )
    summary = load_json(sweep / "sweep_summary.json")
    assert [j["stage"] for j in summary["jobs"]] == STAGES3.split(",")
    # stage_scoped captures the stage in steps 2 and 3 (step 1 is warm-up)
    assert all(j["captures"] == 2 and j["ms_per_stage"] > 0 for j in summary["jobs"])


def test_stage_sweep_basic_launcher(app: Path) -> None:
    proc = run_app(
        app,
        "-m",
        "profiler_config=stage_scoped",
        f"profiler_config.integrated.stage={STAGES3}",
        check=True,
    )
    check_sweep(app)
    assert proc.stdout.count("ms/stage") == 1  # the sweep summary table, once


def test_stage_sweep_says_when_the_chosen_stage_never_ran(app: Path) -> None:
    proc = run_app(
        app,
        "-m",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_update,critic_compute_values",
        check=True,
    )
    never = "stage critic_compute_values never ran in this job (steps 2 to 3)"
    assert f"job 1: {never}\n" in proc.stdout  # the sweep summary, under its table
    (sweep,) = app.glob("multirun/*/*")
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["captures"], j["note"]) for j in jobs] == [(2, None), (0, never)]
    assert proc.stdout.count("mindspeed-prof: 2 captures in ") == 1
    assert f"mindspeed-prof: nothing captured in profiler_data/1: {never}" in proc.stdout


def test_stage_sweep_joblib_launcher(app: Path) -> None:
    run_app(
        app,
        "-m",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "profiler_config=stage_scoped",
        f"profiler_config.integrated.stage={STAGES3}",
        check=True,
    )
    check_sweep(app)


@pytest.mark.parametrize(
    "launcher", [[], ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]], ids=["basic", "joblib"]
)
def test_a_failed_job_still_gets_its_sweep_summary(app: Path, launcher: list[str]) -> None:
    """Hydra's sweeper raises once its jobs ran when one of them failed, before
    ``on_multirun_end``: the summary is still written and printed, names the failed job with
    its exception in one line, and keeps the other jobs' rows."""
    proc = run_app(app, "-m", *launcher, "profiler_config=mstx_light", "fail_at=0,2,0")
    assert proc.returncode == 1 and "boom in critic_update" in proc.stderr  # Hydra's report
    (sweep,) = app.glob("multirun/*/*")
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["job"], j["status"], j["error"]) for j in jobs] == [
        (0, "completed", None),
        (1, "failed", "RuntimeError: boom in critic_update"),
        (2, "completed", None),
    ]
    assert all(j["captures"] == 1 and j["ms_per_step"] > 0 for j in jobs)
    assert [j["overrides"][-1] for j in jobs] == ["fail_at=0", "fail_at=2", "fail_at=0"]
    assert proc.stdout.count(f"Sweep {sweep.relative_to(app)}") == 1  # the table, once
    assert "job 1: fail_at=2; failed: RuntimeError: boom in critic_update\n" in proc.stdout
    assert load_json(manifest_path(app / "profiler_data" / "1"))["error"] == (
        "RuntimeError: boom in critic_update"
    )


def test_sweep_across_presets_turns_callback_on_for_all(app: Path) -> None:
    run_app(app, "-m", "profiler_config=none,mstx_light,stage_scoped", check=True)
    found = sorted(m["profiler_config"]["integrated"]["profile_level"] for m in manifests(app))
    assert found == ["level1", "level_none"]


def test_task_that_raises_leaves_failed_manifest_and_loadable_captures(app: Path) -> None:
    proc = run_app(app, "profiler_config=full", "fail_at=2")
    assert proc.returncode != 0
    (m,) = manifests(app)
    assert m["status"] == "failed" and m["captures"][0]["reason"] == "error"
    root = app / "profiler_data"
    for f in m["files"]:
        assert "ProfilerStep#2" in (root / f["path"]).read_text()
        json.loads((root / f["path"]).read_text())


def test_sys_exit_still_flushes(app: Path) -> None:
    proc = run_app(app, "profiler_config=full", "exit_at=3")
    assert proc.returncode == 3
    (m,) = manifests(app)
    assert m["status"] == "exited" and m["captures"] and m["files"]
    root = app / "profiler_data"
    result = analyse(root)
    assert not result.bad and {t.kind for t in result.traces} == {"torch", "spans"}
    assert {(r.step, r.rank) for r in tables(result).per_step} == {(2, 0), (3, 0)}


@pytest.mark.parametrize(
    "override",
    [
        "profiler_config.integrated.profile_step_start=0",
        "profiler_config.integrated.profile_ranks=[1,-2]",
    ],
)
def test_invalid_override_stops_job_without_files(app: Path, override: str) -> None:
    proc = run_app(app, "profiler_config=full", override)
    assert proc.returncode != 0 and "TASK BODY RAN" not in proc.stdout
    assert "mindspeed-prof: invalid config" in proc.stderr
    assert not list(app.glob("**/profiler_data"))


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
            cfg = compose(
                "demo",
                overrides=[
                    "profiler_config=mstx_light",
                    f"hydra.runtime.output_dir={out}",
                    "hydra.job.name=t",
                    "profiler_config.integrated.profile_step_start=1",
                ],
                return_hydra_config=True,
            )
        GlobalHydra.instance().clear()
        HydraConfig.instance().set_config(cfg)
        cb.on_job_start(cfg)
        prof = mindspeed_prof.current()
        for step in (1, 2, 3):
            with prof.step(step), prof.stage("actor_update"):
                pass
        cb.on_job_end(cfg)
        (m,) = [load_json(p) for p in out.rglob("manifest-*.json")]
        return m

    first = pickle.loads(pickle.dumps(ProfilerCallback()))
    m1 = job(first, tmp_path / "a")
    second = pickle.loads(pickle.dumps(first))  # after a job: nothing open is left in it
    m2 = job(second, tmp_path / "b")
    for m in (m1, m2):
        assert m["status"] == "completed" and [c["steps"] for c in m["captures"]] == [[1, 2, 3]]


def test_profile_analysis_writes_run_analysis(app: Path) -> None:
    run_app(
        app, "profiler_config=full", "profiler_config.integrated.profile_analysis=true", check=True
    )
    root = app / "profiler_data"
    analysis = load_json(root / "analysis.json")
    assert {r["stage"] for r in analysis["stage_rank"]} == {
        "actor_generate",
        "actor_update",
        "critic_update",
    }
    assert list((root / "integrated").glob("*.summary.json"))


# -- where relative save paths go: the app's own working-directory semantics -----------------
def test_chdir_true_puts_captures_in_the_job_output_dir(app: Path) -> None:
    proc = run_app(app, "profiler_config=full", "hydra.job.chdir=true", check=True)
    (root,) = app.glob("outputs/*/*/profiler_data")
    assert not (app / "profiler_data").exists()
    assert load_json(manifest_path(root))["status"] == "completed"
    shown = root.relative_to(app)
    assert (
        f"mindspeed-prof: 1 capture in {shown}; read them: mindspeed-prof analyse {shown}"
        in proc.stdout + proc.stderr
    )


def test_multirun_with_chdir_true_keeps_each_job_in_its_own_dir(app: Path) -> None:
    run_app(
        app,
        "-m",
        "hydra.job.chdir=true",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_generate,actor_update",
        check=True,
    )
    (sweep,) = app.glob("multirun/*/*")
    assert [
        load_json(manifest_path(sweep / n / "profiler_data"))["profiler_config"]["integrated"][
            "stage"
        ]
        for n in ("0", "1")
    ] == ["actor_generate", "actor_update"]
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [j["captures"] for j in jobs] == [2, 2]  # steps 2 and 3 of each stage


# -- a preset the app's own profiler_config block overrides ----------------------------------
MSRL_BLOCK = """
profiler_config:
  integrated:
    profile: true
    mstx: false
    stage: actor_update
    profile_save_path: ./profiler_data
    profile_export_type: db
    profile_step_start: 1
    profile_step_end: 2
    profile_level: level1
    profile_with_memory: false
    profile_record_shapes: false
    profile_with_cpu: true
    profile_with_npu: true
    profile_with_module: false
    profile_analysis: true
    profile_ranks: [0]
"""


def msrl_app(app: Path, self_first: bool) -> None:
    """The app with MindSpeed-RL's real test-config block (tests/st/configs), the README's
    one line in its defaults, and _self_ after it (as Hydra appends it when missing, as
    MindSpeed-RL's configs leave it out) or before it."""
    order = ["- _self_", "- profiler_config: none"]
    defaults = "\n".join("  " + e for e in (order if self_first else order[::-1]))
    (app / "config.yaml").write_text(
        f"defaults:\n{defaults}\nsteps: 2\nstages: [actor_update]\nfail_at: 0\nexit_at: 0\n"
        + MSRL_BLOCK
    )


def test_yaml_block_over_a_chosen_preset_is_named_in_one_line(app: Path) -> None:
    msrl_app(app, self_first=False)
    proc = run_app(app, "profiler_config=mstx_light", check=True)
    lines = [x for x in (proc.stdout + proc.stderr).splitlines() if "overrides the preset" in x]
    assert len(lines) == 1, proc.stdout + proc.stderr
    line = lines[0]
    for key, have, preset in [
        ("mstx", False, True),
        ("profile_level", "level1", "level_none"),
        ("profile_with_cpu", True, False),
    ]:
        assert f"profiler_config.integrated.{key}={have!r} (the preset's: {preset!r})" in line
    assert "profile_with_npu" not in line  # the block agrees with the preset there
    assert "delete these keys" in line and "_self_ before the profiler_config entry" in line
    m = load_json(manifest_path(app / "profiler_data"))
    assert m["profiler_config"]["integrated"]["profile_level"] == "level1"  # Hydra's order
    # a field set on the command line is the user's choice: not named
    proc = run_app(
        app, "profiler_config=mstx_light", "profiler_config.integrated.mstx=false", check=True
    )
    (line,) = [x for x in proc.stdout.splitlines() if "overrides the preset" in x]
    assert "integrated.mstx=" not in line and "integrated.profile_level=" in line
    # the block's own preset, or none chosen: nothing to name
    assert "overrides the preset" not in run_app(app, check=True).stdout


def test_self_first_lets_the_preset_win_and_none_keeps_the_block(app: Path) -> None:
    msrl_app(app, self_first=True)
    proc = run_app(app, "profiler_config=full", check=True)
    assert "overrides the preset" not in proc.stdout + proc.stderr
    got = load_json(manifest_path(app / "profiler_data"))["profiler_config"]["integrated"]
    assert (
        got["mstx"],
        got["profile_record_shapes"],
        got["profile_step_start"],
        got["profile_step_end"],
    ) == (True, True, 2, 4)
    assert got["stage"] == "actor_update" and got["profile_ranks"] == [0]  # the rest: the block
    run_app(app, check=True)  # profiler_config: none sets nothing: the block stays whole
    got = load_json(manifest_path(app / "profiler_data"))["profiler_config"]["integrated"]
    assert (got["profile"], got["profile_level"], got["profile_export_type"]) == (
        True,
        "level1",
        "db",
    )


# -- the callback in this process (what the app tests above check through a subprocess) -----


def compose_job(out: Path, *overrides: str, mode: str = "RUN", cwd: Path | None = None) -> Any:
    """The demo's config as Hydra composes it for a job, set as the current HydraConfig."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    with initialize_config_module("mindspeed_prof.conf", version_base=None):
        cfg = compose(
            "demo",
            overrides=[f"hydra.runtime.output_dir={out}", "hydra.job.name=t", *overrides],
            return_hydra_config=True,
        )
    GlobalHydra.instance().clear()
    with open_dict(cfg):
        cfg.hydra.mode = mode
        cfg.hydra.runtime.cwd = str(out.parent if cwd is None else cwd)
    HydraConfig.instance().set_config(cfg)
    return cfg


def run_steps(steps: range, stage: str = "actor_update") -> None:
    import mindspeed_prof

    prof = mindspeed_prof.current()
    for step in steps:
        with prof.step(step), prof.stage(stage):
            pass


class Ended:
    """What Hydra hands ``on_job_end``: a status and, for a failed task, its exception."""

    def __init__(self, status: str, value: object = None) -> None:
        from hydra.core.utils import JobStatus

        self.status, self._return_value = JobStatus[status], value


def exit_hooks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The exit hooks the callback registers, (function, args), kept instead of registered."""
    import types

    from mindspeed_prof.hydra import callback

    hooks: list[Any] = []
    monkeypatch.setattr(
        callback,
        "atexit",
        types.SimpleNamespace(
            register=lambda f, *a: hooks.append((f, a)),
            unregister=lambda f: hooks.__setitem__(slice(None), [h for h in hooks if h[0] != f]),
        ),
    )
    return hooks


@pytest.fixture
def callback() -> Any:
    from mindspeed_prof.hydra.callback import ProfilerCallback

    return ProfilerCallback()


def test_a_job_in_process_writes_its_manifest_and_says_where(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    monkeypatch.setattr(sys, "orig_argv", ["python", "-X", "dev", "train.py", "-cn", "demo"])
    monkeypatch.setattr(sys, "argv", ["train.py", "-cn", "demo"])
    monkeypatch.setenv("WORLD_SIZE", "1")
    out = tmp_path / "outputs"
    cfg = compose_job(
        out,
        "profiler_config=mstx_light",
        "profiler_config.integrated.profile_step_start=2",
        "profiler_config.integrated.profile_step_end=4",
        "+x=y",
    )
    callback.on_job_start(cfg)
    running = load_json(manifest_path(out / "profiler_data"))
    assert running["status"] == "running" and running["job"] == {
        "name": "t",
        "num": None,
        "overrides": [
            "profiler_config=mstx_light",
            "profiler_config.integrated.profile_step_start=2",
            "profiler_config.integrated.profile_step_end=4",
            "+x=y",
        ],
        "output_dir": str(out),
        "world_size": 1,
        "cwd": str(tmp_path),
        "command": [
            "python",
            "-X",
            "dev",
            "train.py",
            "--config-name=demo",
            f"hydra.runtime.output_dir={out}",
            "hydra.job.name=t",
        ],
    }
    assert running["profiler_config"]["integrated"]["profile_step_start"] == 2
    assert running["rank"] == 0 and "captures" not in running
    run_steps(range(1, 6))
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_end(cfg, Ended("COMPLETED"))
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "completed" and m["profiler_failed"] is False and "error" not in m
    assert [c["steps"] for c in m["captures"]] == [[2, 3]]
    assert m["duration_s"] == round(m["end_time"] - m["start_time"], 3) >= 0
    root = out / "profiler_data"
    assert m["triggers"] == [] and m["files"] == [
        {"path": str(Path(f).relative_to(root)), "bytes": Path(f).stat().st_size}
        for f in m["captures"][0]["files"]
    ]
    assert caplog.messages[-1] == (
        "mindspeed-prof: 1 capture in outputs/profiler_data; read "
        "them: mindspeed-prof analyse outputs/profiler_data"
    )
    callback.on_job_end(cfg, Ended("COMPLETED"))  # a second end (atexit) changes nothing
    assert load_json(manifest_path(out / "profiler_data")) == m


def test_a_job_that_raised_is_failed_with_its_error_in_one_line(
    tmp_path: Path, callback: Any
) -> None:
    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=mstx_light")
    callback.on_job_start(cfg)
    run_steps(range(1, 4))  # the demo's window: [2, 4)
    callback.on_job_end(cfg, Ended("FAILED", RuntimeError("\n  boom \x1b[2J here\nmore")))
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "failed" and m["error"] == "RuntimeError: boom \\x1b[2J here"
    assert [c["steps"] for c in m["captures"]] == [[2, 3]]


BARE_FAILED = types.SimpleNamespace(status=types.SimpleNamespace(name="FAILED"))  # no value


@pytest.mark.parametrize(
    "ended, status", [(None, "completed"), (Ended("UNKNOWN"), "failed"), (BARE_FAILED, "failed")]
)
def test_a_job_end_without_a_known_success_is_failed(
    tmp_path: Path, callback: Any, ended: Any, status: str
) -> None:
    cfg = compose_job(tmp_path / "o", "profiler_config=mstx_light")
    callback.on_job_start(cfg)
    callback.on_job_end(cfg, ended)  # None: a launcher that passes no JobReturn
    m = load_json(manifest_path(tmp_path / "o" / "profiler_data"))
    assert m["status"] == status and "error" not in m


def test_error_lines() -> None:
    from mindspeed_prof.hydra.callback import _error_line

    assert _error_line("not an exception") is None and _error_line(None) is None
    assert _error_line(KeyError()) == "KeyError"
    assert _error_line(ValueError("  \n\n")) == "ValueError"
    long = _error_line(ValueError("x" * 400))
    assert long is not None and len(long) == 300 and long == "ValueError: " + "x" * 287 + "…"
    exact = "x" * (300 - len("ValueError: "))
    assert _error_line(ValueError(exact)) == "ValueError: " + exact
    assert _error_line(ValueError(exact + "y")) == "ValueError: " + "x" * 287 + "…"  # 301 long
    assert _error_line(OSError("C:\\tmp 'a'")) == "OSError: C:\\tmp 'a'"  # printable as is


def test_profile_off_sets_a_disabled_profiler_and_writes_nothing(
    tmp_path: Path, callback: Any
) -> None:
    import mindspeed_prof

    out = tmp_path / "outputs"
    cfg = compose_job(
        out,
        "profiler_config=none",  # and the demo's flight recorder off
        "profiler_config.extensions.flight_recorder_steps=0",
    )
    callback.on_job_start(cfg)
    assert not mindspeed_prof.current().enabled
    run_steps(range(1, 3))
    callback.on_job_end(cfg, Ended("COMPLETED"))
    assert not list(tmp_path.rglob("*")), list(tmp_path.rglob("*"))


def test_an_invalid_field_stops_the_job_naming_it(tmp_path: Path, callback: Any) -> None:
    cfg = compose_job(
        tmp_path / "o",
        "profiler_config=mstx_light",
        "profiler_config.integrated.profile_step_end=0",
    )
    with pytest.raises(SystemExit, match=r"^mindspeed-prof: invalid config: .*profile_step_end"):
        callback.on_job_start(cfg)
    assert not list(tmp_path.rglob("manifest*.json"))


def test_only_the_first_profiled_rank_says_where(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    out = tmp_path / "outputs"
    said = []
    monkeypatch.setenv("WORLD_SIZE", "4")  # torchrun's: a job of four ranks
    for rank, ranks in ((2, "[2,3]"), (3, "[2,3]"), (1, "all"), (0, "all")):
        monkeypatch.setenv("RANK", str(rank))
        cfg = compose_job(
            out / str(rank),
            "profiler_config=mstx_light",
            f"profiler_config.integrated.profile_ranks={ranks}",
        )
        callback.on_job_start(cfg)
        run_steps(range(1, 3))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
            callback.on_job_end(cfg, Ended("COMPLETED"))
        said.append(any("read them" in m for m in caplog.messages))
    assert said == [True, False, False, True]


def test_a_job_of_one_process_says_where_whatever_profile_ranks_names(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ray driver (the demo's, MindSpeed-RL's) is rank 0 of no world: it is the job, and
    its workers' ranks are those ``profile_ranks`` names. It says where, and what its
    workers wrote is counted (here: a file a rank-1 worker wrote in its save root)."""
    import logging

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    cfg = compose_job(
        tmp_path / "o",
        "profiler_config=mstx_light",
        "profiler_config.integrated.profile_ranks=[1]",
        "profiler_config.extensions.flight_recorder_steps=3",
    )
    callback.on_job_start(cfg)
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_end(cfg, Ended("COMPLETED"))
    assert caplog.messages[-1] == (
        "mindspeed-prof: nothing captured in o/profiler_data: no "
        "rank of profile_ranks [1] wrote a capture here"
    )


def test_profile_ranks_naming_no_rank_of_the_job_is_said_once(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``profile_ranks: [7]`` in a job of two ranks: rank 0 says so when the job starts and
    in its last line; rank 1 says nothing."""
    import logging

    monkeypatch.setenv("WORLD_SIZE", "2")
    said: dict[int, list[str]] = {}
    for rank in (1, 0):
        monkeypatch.setenv("RANK", str(rank))
        cfg = compose_job(
            tmp_path / str(rank),
            "profiler_config=mstx_light",
            "profiler_config.integrated.profile_ranks=[7]",
            "profiler_config.extensions.flight_recorder_steps=3",
        )
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
            callback.on_job_start(cfg)
            run_steps(range(1, 4))
            callback.on_job_end(cfg, Ended("COMPLETED"))
        said[rank] = [m for m in caplog.messages if "mindspeed-prof" in m]
    assert said[1] == []
    assert said[0] == [
        "mindspeed-prof: profile_ranks [7] names no rank of this job (ranks 0-1): nothing "
        "will be captured",
        "mindspeed-prof: nothing captured in 0/profiler_data: profile_ranks [7] names no rank "
        "of this job (ranks 0-1)",
    ]


def test_nothing_captured_is_said_with_its_reason(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    out = tmp_path / "my outputs"
    cfg = compose_job(
        out, "profiler_config=stage_scoped", "profiler_config.integrated.stage=critic_update"
    )
    callback.on_job_start(cfg)
    run_steps(range(1, 4), stage="actor_update")
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_end(cfg, Ended("COMPLETED"))
    assert caplog.messages[-1] == (
        "mindspeed-prof: nothing captured in my outputs/profiler_data: stage critic_update "
        "never ran in this job (steps 2 to 3)"
    )


def test_a_multirun_summary_is_written_at_exit_when_the_end_hook_never_came(
    tmp_path: Path, callback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered = exit_hooks(monkeypatch)
    sweep = tmp_path / "multirun"
    out = sweep / "0"
    cfg = compose_job(
        out,
        "profiler_config=mstx_light",
        f"hydra.sweep.dir={sweep}",
        "hydra.job.num=0",
        mode="MULTIRUN",
    )
    callback.on_multirun_start(cfg)
    callback.on_job_start(cfg)
    run_steps(range(1, 3))
    assert len(registered) == 2  # the summary, and the job's own end
    callback.on_job_end(cfg, Ended("FAILED", RuntimeError("boom")))
    # Hydra raises past on_multirun_end: the summary comes from the exit hook
    summary_hook = registered[0][0]
    summary_hook()
    rows = load_json(sweep / "sweep_summary.json")
    assert [(r["status"]) for r in (rows if isinstance(rows, list) else rows["jobs"])] == ["failed"]
    (sweep / "sweep_summary.json").unlink()
    summary_hook()  # once only
    assert not (sweep / "sweep_summary.json").exists()


def test_multirun_end_writes_the_summary_and_drops_the_exit_hook(
    tmp_path: Path, callback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered = exit_hooks(monkeypatch)
    sweep = tmp_path / "multirun"
    cfg = compose_job(
        sweep / "0",
        "profiler_config=mstx_light",
        f"hydra.sweep.dir={sweep}",
        "hydra.job.num=0",
        mode="MULTIRUN",
    )
    callback.on_multirun_start(cfg)
    callback.on_job_start(cfg)
    run_steps(range(1, 3))
    callback.on_job_end(cfg, Ended("COMPLETED"))
    callback.on_multirun_end(cfg)
    assert [f.__name__ for f, _ in registered] == ["_finish"]  # the summary's hook dropped
    assert (sweep / "sweep_summary.json").is_file()


@pytest.mark.parametrize("chdir", [False, True])
def test_a_sweep_with_a_relative_save_path_is_summarised_from_where_jobs_wrote(
    tmp_path: Path,
    callback: Any,
    chdir: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``profile_save_path: prof``: each job's captures in ``<launch dir>/prof/<num>/``, or with
    ``hydra.job.chdir`` in its own output dir; the summary finds them there and prints them."""
    exit_hooks(monkeypatch)
    sweep, launch = tmp_path / "multirun", tmp_path / "launch"
    for num, stage in enumerate(("actor_update", "critic_update")):
        cfg = compose_job(
            sweep / str(num),
            "profiler_config=stage_scoped",
            f"profiler_config.integrated.stage={stage}",
            "profiler_config.integrated.profile_save_path=prof",
            f"hydra.sweep.dir={sweep}",
            f"hydra.job.num={num}",
            f"hydra.job.chdir={chdir}",
            mode="MULTIRUN",
            cwd=launch,
        )
        if num == 0:
            callback.on_multirun_start(cfg)
        (sweep / str(num)).mkdir(parents=True)
        callback.on_job_start(cfg)
        run_steps(range(1, 4), stage="actor_update")
        callback.on_job_end(cfg, Ended("COMPLETED"))
    saved = (
        [sweep / "0" / "prof", sweep / "1" / "prof"]
        if chdir
        else [launch / "prof" / "0", launch / "prof" / "1"]
    )
    assert [len(list(p.glob("manifest*.json"))) for p in saved] == [1, 1]
    capsys.readouterr()
    callback.on_multirun_end(cfg)
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [j["status"] for j in jobs] == ["completed", "completed"]
    out = capsys.readouterr().out
    assert "critic_update" in out and "actor_update" in out  # the table, one row per job
    assert f"Sweep {sweep}\n" in out


def test_profiling_with_no_flight_recorder_nor_anomaly_writes_its_manifest(
    tmp_path: Path, callback: Any
) -> None:
    """A planned capture alone (the demo's flight recorder off, no on-demand requests) is a
    profiled job."""
    out = tmp_path / "outputs"
    cfg = compose_job(
        out,
        "profiler_config=mstx_light",
        "profiler_config.extensions.flight_recorder_steps=0",
        "profiler_config.extensions.on_demand=false",
    )
    callback.on_job_start(cfg)
    assert load_json(manifest_path(out / "profiler_data"))["status"] == "running"
    run_steps(range(1, 4))
    callback.on_job_end(cfg, Ended("COMPLETED"))
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "completed" and [c["steps"] for c in m["captures"]] == [[2, 3]]
    assert m["versions"]["hydra-core"].startswith("1.3")


def test_a_flight_recorder_alone_is_a_profiled_job(tmp_path: Path, callback: Any) -> None:
    """Profiling off and no on-demand requests, the demo's flight recorder on: the job gets
    its manifest (a dump on an error would go there), with no capture when nothing failed."""
    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=none", "profiler_config.extensions.on_demand=false")
    callback.on_job_start(cfg)
    assert load_json(manifest_path(out / "profiler_data"))["status"] == "running"
    run_steps(range(1, 4))
    callback.on_job_end(cfg, Ended("COMPLETED"))
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "completed" and m["captures"] == []
    assert m["profiler_config"]["extensions"]["flight_recorder_steps"] == 3


def test_a_sweep_summary_that_fails_at_exit_is_one_warning(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    registered = exit_hooks(monkeypatch)
    sweep = tmp_path / "multirun"  # never made: no job ran
    cfg = compose_job(
        sweep / "0", "profiler_config=mstx_light", f"hydra.sweep.dir={sweep}", mode="MULTIRUN"
    )
    callback.on_multirun_start(cfg)
    ((hook, args),) = registered
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        hook(*args)
    assert caplog.messages == [
        f"mindspeed-prof: could not write the sweep summary: {sweep}: not a multirun directory"
    ]


def test_a_sweep_that_profiled_nothing_prints_and_writes_nothing(
    tmp_path: Path, callback: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "multirun"
    (sweep / "0").mkdir(parents=True)
    cfg = compose_job(
        sweep / "0", "profiler_config=none", f"hydra.sweep.dir={sweep}", mode="MULTIRUN"
    )
    callback.on_multirun_end(cfg)
    assert capsys.readouterr().out == "" and not (sweep / "sweep_summary.json").exists()


def test_a_task_that_exits_is_finished_by_the_exit_hook_as_exited(
    tmp_path: Path, callback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sys.exit`` in the task skips ``on_job_end``: the hook registered at the start ends
    the job with status ``exited``."""
    registered = exit_hooks(monkeypatch)
    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=mstx_light")
    callback.on_job_start(cfg)
    run_steps(range(1, 4))
    ((hook, args),) = registered
    hook(*args)
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "exited" and [c["steps"] for c in m["captures"]] == [[2, 3]]


def test_a_completed_task_whose_profiling_failed_is_failed(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A capture that cannot start (a file where its folder goes): the task completed, the
    job did not profile, so the manifest says failed and the line says why nothing is there."""
    import logging
    import warnings

    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=mstx_light")
    callback.on_job_start(cfg)
    (out / "profiler_data" / "integrated").write_text("not a directory")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the profiler's own warning
        run_steps(range(1, 4))
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_end(cfg, Ended("COMPLETED"))
    m = load_json(manifest_path(out / "profiler_data"))
    assert m["status"] == "failed" and m["profiler_failed"] is True and "error" not in m
    assert caplog.messages[-1] == (
        "mindspeed-prof: nothing captured in outputs/profiler_data: "
        "profiling failed in this job (its log names the cause)"
    )


def test_a_failed_analysis_after_the_job_is_one_warning(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from mindspeed_prof.analysis import summary

    def broken(root: Path, run: str | None = None) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(summary, "write_run_summary", broken)
    out = tmp_path / "outputs"
    cfg = compose_job(
        out, "profiler_config=mstx_light", "profiler_config.integrated.profile_analysis=true"
    )
    callback.on_job_start(cfg)
    run_steps(range(1, 4))
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        callback.on_job_end(cfg, Ended("COMPLETED"))
    assert caplog.messages == ["mindspeed-prof: analysis after the job failed: disk full"]
    # each capture's own summary came before, from the profiler's hook
    assert list((out / "profiler_data" / "integrated").glob("*.summary.json"))
    assert load_json(manifest_path(out / "profiler_data"))["status"] == "completed"


def test_a_manifest_that_cannot_be_written_is_one_warning_naming_it(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    from mindspeed_prof.formats import manifest

    tried: list[Path] = []

    def broken(path: Path, data: Any) -> None:
        tried.append(path)
        raise OSError("read-only file system")

    monkeypatch.setattr(manifest, "write_manifest", broken)
    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=mstx_light")
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        callback.on_job_start(cfg)
    (path,) = tried
    assert path.parent == out / "profiler_data" and path.name.startswith("manifest-")
    assert caplog.messages == [f"mindspeed-prof: could not write {path}: read-only file system"]
    callback.on_job_end(cfg, Ended("COMPLETED"))


def test_jobs_sharing_one_save_root_each_count_their_own_captures(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An absolute save root outside the launch dir, shared by a sweep's jobs: each job's line
    names the root as given and counts its own captures, not the earlier jobs' files there
    (job 2's stage never ran: nothing of its own); the sweep's summary finds them there."""
    import logging
    import shlex

    exit_hooks(monkeypatch)
    sweep, shared = tmp_path / "multirun", tmp_path / "shared"
    jobs = [
        ("stage_scoped", "actor_update"),
        ("mstx_light", "all"),
        ("stage_scoped", "critic_update"),
    ]
    lines = []
    for num, (preset, stage) in enumerate(jobs):
        cfg = compose_job(
            sweep / str(num),
            f"profiler_config={preset}",
            f"profiler_config.integrated.stage={stage}",
            f"profiler_config.integrated.profile_save_path={shared}",
            f"hydra.sweep.dir={sweep}",
            f"hydra.job.num={num}",
            mode="MULTIRUN",
            cwd=tmp_path / "launch",
        )
        (sweep / str(num)).mkdir(parents=True)
        callback.on_job_start(cfg)
        run_steps(range(1, 4))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
            callback.on_job_end(cfg, Ended("COMPLETED"))
        lines.append(caplog.messages[-1])
    written = sorted(shared.glob("manifest*.json"))
    assert len(written) == 3 and all(p.name.startswith("manifest-") for p in written)
    docs = sorted((load_json(p) for p in written), key=lambda m: m["job"]["num"])
    assert len({m["run"] for m in docs}) == 3  # one run per job: never one verdict for two
    second = docs[1]
    # its own files only: job 0's captures, in the same root, are not listed as job 1's
    assert sorted(f["path"] for f in second["files"]) == sorted(
        str(Path(f).relative_to(shared)) for c in second["captures"] for f in c["files"]
    )
    quoted = shlex.quote(str(shared))
    assert lines == [
        f"mindspeed-prof: 2 captures in {shared}; read them: mindspeed-prof analyse {quoted}",
        f"mindspeed-prof: 1 capture in {shared}; read them: mindspeed-prof analyse {quoted}",
        f"mindspeed-prof: nothing captured in {shared}: stage critic_update never ran in this "
        "job (steps 2 to 3)",
    ]
    callback.on_multirun_end(cfg)
    rows = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(r["job"], r["status"], r["captures"]) for r in rows] == [
        (0, "completed", 2),
        (1, "completed", 1),
        (2, "completed", 0),
    ]


def test_a_multirun_config_without_mode_is_not_a_multirun() -> None:
    """A Hydra config from before ``hydra.mode`` existed: a single run."""
    from mindspeed_prof.hydra.callback import _multirun

    assert _multirun(cast(Any, types.SimpleNamespace())) is False
    assert _multirun(cast(Any, types.SimpleNamespace(mode="RunMode.MULTIRUN"))) is True


def test_a_preset_overridden_by_the_config_block_is_named_in_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from omegaconf import OmegaConf

    from mindspeed_prof.hydra.callback import _name_overridden_preset

    composed = OmegaConf.create({"integrated": {"profile": True, "mstx": False}})
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        _name_overridden_preset(composed, ["profiler_config=mstx_light"])
        _name_overridden_preset(
            composed, ["profiler_config=mstx_light", "profiler_config.integrated.mstx=false"]
        )
        _name_overridden_preset(composed, [])  # no preset chosen
    assert caplog.messages == [
        "mindspeed-prof: profiler_config=mstx_light: the app's config overrides the preset's "
        "profiler_config.integrated.mstx=False (the preset's: True), because its defaults list "
        "merges it after the preset (_self_ last, or missing); to let the preset win, delete "
        "these keys from the app's profiler_config block, or list _self_ before the "
        "profiler_config entry"
    ]


@pytest.mark.parametrize("dropped", ["profiler_config", "profiler_config.integrated"])
def test_a_sweep_config_without_a_save_path_is_summarised_from_the_default_one(
    tmp_path: Path, callback: Any, dropped: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's own config sets no save path (no ``profiler_config`` at all: the app turned
    the callback on itself and sweeps ``+profiler_config=...``): the jobs wrote under the
    default ``./profiler_data/<num>/`` of the launch dir, and the summary finds them there."""
    from omegaconf import open_dict

    exit_hooks(monkeypatch)
    sweep, launch = tmp_path / "multirun", tmp_path / "launch"
    overrides = [
        "profiler_config=mstx_light",
        "profiler_config.integrated.profile_save_path=./profiler_data",
        f"hydra.sweep.dir={sweep}",
        "hydra.job.num=0",
        "hydra.job.chdir=false",
    ]
    cfg = compose_job(sweep / "0", *overrides, mode="MULTIRUN", cwd=launch)
    (sweep / "0").mkdir(parents=True)
    callback.on_job_start(cfg)
    run_steps(range(1, 4))
    callback.on_job_end(cfg, Ended("COMPLETED"))
    assert manifest_path(launch / "profiler_data" / "0").is_file()
    with open_dict(cfg):
        if dropped == "profiler_config":
            del cfg["profiler_config"]
        else:
            del cfg.profiler_config.integrated["profile_save_path"]
    callback.on_multirun_end(cfg)
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["job"], j["status"], j["captures"]) for j in jobs] == [(0, "completed", 1)]


def test_a_chdir_sweep_takes_no_stale_manifest_from_the_launch_dir(
    tmp_path: Path, callback: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``hydra.job.chdir`` a job's manifest is in its own dir only: one that an earlier
    sweep without chdir left in ``<launch dir>/prof/1/`` is not job 1's of this sweep."""
    exit_hooks(monkeypatch)
    launch = tmp_path / "launch"
    common = ["profiler_config=mstx_light", "profiler_config.integrated.profile_save_path=prof"]

    def job(sweep: Path, num: int, chdir: bool, *more: str) -> Any:
        cfg = compose_job(
            sweep / str(num),
            *common,
            *more,
            f"hydra.sweep.dir={sweep}",
            f"hydra.job.num={num}",
            f"hydra.job.chdir={chdir}",
            mode="MULTIRUN",
            cwd=launch,
        )
        (sweep / str(num)).mkdir(parents=True)
        callback.on_job_start(cfg)
        run_steps(range(1, 4))
        callback.on_job_end(cfg, Ended("COMPLETED"))
        return cfg

    job(tmp_path / "earlier", 1, False)
    assert manifest_path(launch / "prof" / "1").is_file()
    sweep = tmp_path / "multirun"
    job(sweep, 0, True)
    cfg = job(
        sweep,
        1,
        True,
        "profiler_config.integrated.profile=false",
        "profiler_config.extensions.flight_recorder_steps=0",
    )  # job 1 profiles nothing
    callback.on_multirun_end(cfg)
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["job"], j["status"]) for j in jobs] == [(0, "completed"), (1, "no manifest")]


def test_a_restart_keeps_the_first_runs_manifest_and_each_run_is_answered_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job dies after step 3 (no end hook runs) and is restarted into the same save root:
    the restart writes a manifest of its own, the first run's record (that it never finished)
    stays, and analyse and doctor tell the two runs apart."""
    from mindspeed_prof.analysis.doctor import doctor
    from mindspeed_prof.hydra.callback import ProfilerCallback

    exit_hooks(monkeypatch)
    out = tmp_path / "outputs"
    cfg = compose_job(out, "profiler_config=mstx_light")
    ProfilerCallback().on_job_start(cfg)
    run_steps(range(1, 4))  # killed here
    second = ProfilerCallback()
    second.on_job_start(compose_job(out, "profiler_config=mstx_light"))
    run_steps(range(1, 6))
    second.on_job_end(cfg, Ended("COMPLETED"))
    root = out / "profiler_data"
    docs = sorted(
        (load_json(p) for p in root.glob("manifest-*.json")), key=lambda m: m["start_time"]
    )
    assert [m["status"] for m in docs] == ["running", "completed"]
    assert docs[0]["run"] != docs[1]["run"] and docs[1]["run_how"] == "process"
    result = analyse(root)
    assert result.run is not None and result.run.id == docs[1]["run"]
    assert [r.id for r in result.runs] == [docs[1]["run"], docs[0]["run"]]
    assert [r["id"] for r in doctor(root).runs] == [docs[1]["run"], docs[0]["run"]]


def test_the_jobs_profiler_is_current_and_from_config_builds_another(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """One rule: the task reaches the callback's profiler with ``current()`` (the manifest counts
    what the loop captured); ``from_config`` always builds, and of the job's role says once
    that it built a second profiler beside the job's."""
    import mindspeed_prof
    from mindspeed_prof import Profiler

    out = tmp_path / "outputs"
    cfg = compose_job(
        out, "profiler=stage_scoped", "profiler_config.integrated.stage=actor_generate"
    )
    callback.on_job_start(cfg)
    job = mindspeed_prof.current()
    assert job.plan.enabled and job.cfg.stage.value == "actor_generate"  # the callback's
    from omegaconf import open_dict

    task_cfg = cfg.copy()  # what the task gets: a copy, without the hydra node
    with open_dict(task_cfg):
        del task_cfg["hydra"]
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        second = Profiler.from_config(task_cfg.profiler_config)
        also = Profiler.from_config(task_cfg.profiler_config)
        actor = Profiler.from_config(task_cfg.profiler_config, role="actor")
    assert len({id(job), id(second), id(also), id(actor)}) == 4
    said = [r.getMessage() for r in caplog.records if "second profiler" in r.getMessage()]
    assert len(said) == 1 and "mindspeed_prof.current()" in said[0]  # once; not for "actor"
    for prof in (second, also, actor):
        prof.close()
    for step in (1, 2):
        with job.step(step), job.stage("actor_generate"):
            pass
    callback.on_job_end(cfg, Ended("COMPLETED"))
    (path,) = (out / "profiler_data").glob("manifest-*.json")
    manifest = load_json(path)
    assert [c["stage"] for c in manifest["captures"]] == ["actor_generate"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        Profiler.from_config(task_cfg.profiler_config).close()  # that job is over: no line
    assert not [r for r in caplog.records if "second profiler" in r.getMessage()]


def test_a_sweep_over_interpolated_save_paths_is_summarised(
    app: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Save paths that resolve only inside a job (``${hydra:...}``) or from the environment:
    the multirun's end reads where each job wrote, no config, and summarises every job."""
    import os

    env_root = tmp_path_factory.mktemp("env root")
    os.environ["PROF_ROOT"] = str(env_root)  # run_app passes the environment on
    try:
        proc = run_app(
            app,
            "-m",
            "profiler_config=mstx_light",
            "profiler_config.integrated.profile_save_path="
            "'${hydra:runtime.output_dir}/p','${hydra:sweep.dir}/${hydra:job.num}/q',"
            "'${oc.env:PROF_ROOT}/r'",
            check=True,
        )
    finally:
        del os.environ["PROF_ROOT"]
    assert "Callback ProfilerCallback" not in proc.stderr, proc.stderr
    (sweep,) = app.glob("multirun/*/*")
    jobs = load_json(sweep / "sweep_summary.json")["jobs"]
    assert [(j["job"], j["status"], j["captures"]) for j in jobs] == [
        (0, "completed", 1),
        (1, "completed", 1),
        (2, "completed", 1),
    ]
    roots = [Path(j["save_root"]) for j in jobs]
    assert roots[0] == (sweep / "0" / "p").resolve()
    assert roots[1].resolve().is_relative_to((sweep / "1" / "q").resolve())
    assert roots[2] == env_root / "r" and len(list((env_root / "r").glob("manifest-*.json"))) == 1


# -- what the command line set, under none; a bad RANK; where the live figures go -------------
def test_a_field_typed_under_none_is_checked_and_profiling_off_is_said(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``profile: false`` warns about a stale value of a config file, but a typo just typed
    stops the job; a good one is said once to capture nothing, with how to turn it on."""
    import logging

    bad = compose_job(
        tmp_path / "a", "profiler_config=none", "profiler_config.integrated.stage=actor_generat"
    )
    with pytest.raises(
        SystemExit,
        match=r"^mindspeed-prof: invalid config: profiler_config"
        r"\.integrated\.stage='actor_generat': unknown \(did "
        r"you mean actor_generate\?\)",
    ):
        callback.on_job_start(bad)
    good = compose_job(
        tmp_path / "b", "profiler_config=none", "profiler_config.integrated.stage=actor_generate"
    )
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_start(good)
        callback.on_job_end(good, Ended("COMPLETED"))
        callback.on_job_start(good)  # the next job of a multirun: said already
    said = [m for m in caplog.messages if "profiling is off" in m]
    assert said == [
        "mindspeed-prof: profiling is off (profile: false), so "
        "profiler_config.integrated.stage=actor_generate captures nothing; to profile, pick a "
        "preset: profiler_config=stage_scoped (mindspeed-prof presets lists them), or add "
        "profiler_config.integrated.profile=true"
    ]
    assert caplog.messages[-1] == (
        "mindspeed-prof: nothing captured in b/profiler_data: profiling was off (profile: false)"
    )


@pytest.mark.parametrize("bad", ["abc", "\u0663", "1_0"])
@pytest.mark.parametrize(
    "preset",
    [
        ("profiler_config=mstx_light",),
        ("profiler_config=none", "profiler_config.extensions.flight_recorder_steps=3"),
    ],
    ids=["profiled", "flight-only"],
)
def test_a_rank_that_is_no_rank_stops_a_profiled_job_in_one_line(
    tmp_path: Path,
    callback: Any,
    monkeypatch: pytest.MonkeyPatch,
    bad: str,
    preset: tuple[str, ...],
) -> None:
    """``RANK=\u0663`` (an Arabic-Indic 3) and ``1_0`` were ranks 3 and 10; a flight recorder
    alone took a bad RANK for rank 0. Each stops the job before training, in one line."""
    monkeypatch.setenv("RANK", bad)
    cfg = compose_job(tmp_path / "o", *preset)
    with pytest.raises(SystemExit) as stop:
        callback.on_job_start(cfg)
    assert str(stop.value) == (
        f"mindspeed-prof: cannot profile this job: environment variable RANK={bad!r} is no "
        "rank: a rank is ASCII digits 0-9 only (0, 1, 12)"
    )
    assert not list(tmp_path.rglob("manifest*.json"))  # before anything is written


def test_where_the_live_figures_go_is_said_once_as_the_job_starts(
    tmp_path: Path, callback: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import logging

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cfg = compose_job(
        tmp_path / "o",
        "profiler_config=mstx_light",
        "profiler_config.extensions.telemetry=[metrics,tensorboard]",
    )
    with caplog.at_level(logging.INFO, logger="mindspeed_prof"):
        callback.on_job_start(cfg)
        run_steps(range(1, 3))
        callback.on_job_end(cfg, Ended("COMPLETED"))
    said = [m for m in caplog.messages if "live figures" in m]
    assert said == [
        "mindspeed-prof: live figures, every step: tensorboard --logdir o/profiler_data/telemetry"
    ]
