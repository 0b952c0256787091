"""How the ranks of one job agree on its run id: given, the launcher's variable, torchrun's
rendezvous, the process group's store, else this process's own (exported to its children)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture import run
from mindspeed_prof.formats.run import RUN_ENV, valid_run_id


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (RUN_ENV, "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)


def test_given_first_then_the_launchers_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUN_ENV, "slurm-4242")
    assert run.resolve("from-driver") == ("from-driver", "given")
    assert run.resolve() == ("slurm-4242", "env")
    monkeypatch.setenv(RUN_ENV, "../not a name")  # hostile: not used
    made, how = run.resolve()
    assert how == "process" and valid_run_id(made) and made != "../not a name"


def test_torchrun_standalone_gives_each_launch_and_restart_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "0A1B2C3D-4E5F-4a7b-8c9d-0e1f2a3b4c5d")
    assert run.resolve() == ("torchrun-0a1b2c3d4e5f", "torchrun")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    assert run.resolve() == ("torchrun-0a1b2c3d4e5f-r2", "torchrun")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "100")  # a --rdzv-id the next job may reuse
    assert run.resolve()[1] == "process"


def test_a_made_id_is_exported_to_the_processes_this_one_starts() -> None:
    made, how = run.resolve()
    assert how == "process" and os.environ[RUN_ENV] == made
    assert run.resolve() == (made, "env")  # every later profiler of this process
    child = subprocess.run(
        [sys.executable, "-c", "from mindspeed_prof.capture import run; print(run.resolve()[0])"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert child.stdout.strip() == made


def test_each_hydra_job_of_a_process_is_a_run_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = run.start_job()
    second, _ = run.start_job()
    assert first != second and os.environ[RUN_ENV] == second
    run.new_job()
    assert RUN_ENV not in os.environ  # as before the jobs
    monkeypatch.setenv(RUN_ENV, "outer")  # set by the launcher for a whole sweep
    assert [run.start_job(n)[0] for n in (0, 1)] == ["outer-job0", "outer-job1"]
    run.new_job()
    assert os.environ[RUN_ENV] == "outer"
    assert run.start_job() == ("outer", "env")  # a single run keeps the launcher's id


def test_the_process_groups_store_gives_every_rank_the_first_ranks_id(tmp_path: Path) -> None:
    """Two ranks of a real gloo process group, neither given an id: the one that asks first
    puts its id in the store, the other reads it; both profilers' captures carry it."""
    code = f"""
import json, sys, torch.distributed as dist
from pathlib import Path
from mindspeed_prof import Profiler
rank = int(sys.argv[1])
store = dist.FileStore({str(tmp_path / "store")!r}, 2)
dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
prof = Profiler.from_config({{"profile": True, "mstx": True, "profile_level": "level_none",
                              "profile_save_path": {str(tmp_path / "out")!r}}}, rank=rank)
with prof.step(1):
    pass
prof.close()
print(json.dumps(prof.run))
dist.destroy_process_group()
"""
    env = {k: v for k, v in os.environ.items() if k != RUN_ENV}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(r)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for r in (0, 1)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e for _, e in outs]
    runs = {tuple(__import__("json").loads(o.strip().splitlines()[-1])) for o, _ in outs}
    ((made, how),) = runs
    assert how == "process group" and valid_run_id(made)
    import json

    headers = [
        json.loads(p.read_text())["mindspeed_prof"]["run"]
        for p in (tmp_path / "out").rglob("*.mstx.trace.json")
    ]
    assert headers == [made, made]


def test_a_profiler_given_a_bad_id_says_so() -> None:
    with pytest.raises(ValueError, match=r"run='a/b': a run id is 1-64 letters"):
        Profiler.from_config({"profile": True}, run="a/b")


def test_a_workers_config_carries_its_drivers_run(tmp_path: Path) -> None:
    from mindspeed_prof.ray import worker_config

    cfg = worker_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_save_path": str(tmp_path),
            }
        }
    )
    driver = run.resolve()[0]
    assert cfg["run"] == driver
    os.environ.pop(RUN_ENV)  # a worker process: nothing inherited from the driver
    prof = Profiler.from_config(cfg, rank=3)
    assert prof.run == (driver, "given")
