"""``mindspeed_prof.ray.worker`` and ``.summary``: workers profile themselves by role; failures keep
their captures; the driver collects every summary, or why there is none."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.formats.cluster import LostWorker, WorkerSummary
from mindspeed_prof.ray import ProfilerMixin, collect, worker_config, write_cluster_summary


class Flaky(ProfilerMixin):
    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank)

    def step(self, step: int) -> None:
        with self.profiler.step(step), self.profiler.stage("actor_update"):
            if step == 2 and self.profiler.rank == 1:
                raise RuntimeError("worker 1 fails in actor_update")


def test_failing_worker_keeps_captures(ray_cluster: Any, tmp_path: Path) -> None:
    ray = ray_cluster
    cfg = worker_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_start": 1,
                "profile_step_end": 4,
                "profile_save_path": str(tmp_path),
            }
        }
    )
    workers = [ray.remote(Flaky).remote(r, cfg) for r in range(2)]
    ray.get([w.step.remote(1) for w in workers])
    with pytest.raises(ray.exceptions.RayTaskError, match="fails in actor_update"):
        ray.get([w.step.remote(2) for w in workers])
    summaries = collect(workers)
    failed = summaries[1]
    assert failed.captures[-1].reason == "error"
    for f in failed.files:
        data = json.loads(Path(f.path).read_text())
        assert "ProfilerStep#2" in {e["name"] for e in data["traceEvents"]}
    path = write_cluster_summary(tmp_path, summaries)
    assert [w["rank"] for w in json.loads(path.read_text())["workers"]] == [0, 1]


def test_worker_config_is_plain_resolved_and_absolute() -> None:
    from omegaconf import OmegaConf

    node = OmegaConf.create(
        {
            "base": "rel_dir",
            "profiler_config": {"integrated": {"profile": True, "profile_save_path": "${base}/x"}},
        }
    )
    cfg = worker_config(node.profiler_config)
    path = str(cfg["integrated"]["profile_save_path"])
    assert isinstance(cfg, dict) and Path(path).is_absolute() and path.endswith("rel_dir/x")


class ActorWorker(ProfilerMixin):
    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank, role="actor")

    def update_actor(self, step: int) -> None:
        with self.profiler.step(step):
            with self.profiler.stage("actor_compute_log_prob"):
                pass
            with self.profiler.stage("actor_update"):
                pass


class RolloutWorker(ProfilerMixin):
    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank, role="rollout")

    def generate(self, step: int) -> None:
        with self.profiler.step(step), self.profiler.stage("actor_generate"):
            pass


def test_verl_style_roles_on_separate_workers(ray_cluster: Any, tmp_path: Path) -> None:
    ray = ray_cluster
    cfg = worker_config(
        {
            "integrated": {"profile": True, "profile_save_path": str(tmp_path)},
            "extensions": {"backend": "none"},
            "actor": {"stage": ["actor_compute_log_prob", "actor_update"]},
            "rollout": {"profile_ranks": [0]},
        }
    )
    actors = [ray.remote(ActorWorker).remote(r, cfg) for r in range(2)]
    rollouts = [ray.remote(RolloutWorker).remote(r, cfg) for r in range(2)]
    ray.get([w.update_actor.remote(1) for w in actors] + [w.generate.remote(1) for w in rollouts])
    summaries = collect(actors) + collect(rollouts)
    files = {
        (s.role, s.rank): sorted(
            Path(f.path).relative_to(tmp_path).parent.as_posix() for f in s.files
        )
        for s in summaries
        if isinstance(s, WorkerSummary)
    }  # a lost worker: a key missing
    assert files == {
        ("actor", 0): ["actor/actor_compute_log_prob", "actor/actor_update"],
        ("actor", 1): ["actor/actor_compute_log_prob", "actor/actor_update"],
        ("rollout", 0): ["rollout"],
        ("rollout", 1): [],
    }


def test_worker_config_keeps_role_sections_and_checks_them() -> None:
    from omegaconf import OmegaConf

    from mindspeed_prof.config import ConfigError, ProfilerConfig

    node = OmegaConf.structured(
        ProfilerConfig(actor={"stage": "actor_update"}, rollout={"profile_save_path": "roll"})
    )
    cfg = worker_config(node)
    assert sorted(cfg) == ["actor", "integrated", "rollout", "run"]  # run: the driver's id
    assert cfg["actor"] == {"stage": "actor_update"}
    assert Path(str(cfg["rollout"]["profile_save_path"])).is_absolute()
    node.critic = {"profile": True, "profile_step_start": 0}  # (profile off: a warning)
    with pytest.raises(ConfigError, match=r"profiler_config\.critic\.profile_step_start=0"):
        worker_config(node)


class Stoppable(ProfilerMixin):
    """A worker that captures one step, and tells its pid (to be killed or stopped)."""

    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank)

    def step(self, step: int) -> int:
        with self.profiler.step(step), self.profiler.stage("actor_update"):
            pass
        return os.getpid()


def _until_dead(ray: Any, worker: Any, pid: int, timeout_s: float = 120.0) -> None:
    """Wait (bounded) until Ray itself knows the SIGKILLed actor ``worker`` is gone."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get(worker.step.remote(99), timeout=5)
        except ray.exceptions.RayActorError:
            return
        except ray.exceptions.GetTimeoutError:
            continue
    raise AssertionError(f"Ray did not see worker pid {pid} die in {timeout_s:g} s")


def test_collect_keeps_every_summary_when_a_worker_is_killed_or_stopped(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """The probe: one of three workers SIGKILLed, one SIGSTOPped. ``collect`` returns the
    healthy worker's summary whole, a ``died`` and a ``timeout`` entry for the others, within
    its timeout; the cluster summary lists them and doctor names both."""
    from mindspeed_prof.analysis.doctor import doctor

    ray = ray_cluster
    cfg = worker_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            }
        }
    )
    workers = [ray.remote(Stoppable).remote(r, cfg) for r in range(3)]
    pids = ray.get([w.step.remote(1) for w in workers], timeout=180)
    os.kill(pids[1], signal.SIGKILL)
    _until_dead(ray, workers[1], pids[1])
    os.kill(pids[2], signal.SIGSTOP)
    try:
        started = time.monotonic()
        summaries = collect(workers, timeout_s=20.0, ranks=[0, 1, 2])
        took = time.monotonic() - started
    finally:
        os.kill(pids[2], signal.SIGCONT)
        ray.kill(workers[2])
    assert 20.0 <= took < 60.0
    assert [(s.rank, s.status) for s in summaries] == [(0, "ok"), (1, "died"), (2, "timeout")]
    healthy, died, stopped = summaries
    assert healthy.files and all(Path(f.path).is_file() for f in healthy.files)
    assert [row["rank"] for row in healthy.stage_rank] == [0]
    assert isinstance(died, LostWorker) and isinstance(stopped, LostWorker)
    assert died.worker == 1 and str(died.error).startswith("ActorDiedError: ")
    assert died.actor == workers[1]._actor_id.hex() and died.captures == []
    assert stopped.error == "no answer within 20 s (stopped, hung or still exporting)"
    path = write_cluster_summary(tmp_path, summaries)
    doc = json.loads(path.read_text())
    assert [(m["rank"], m["status"]) for m in doc["missing"]] == [(1, "died"), (2, "timeout")]
    assert [row["rank"] for row in doc["stage_rank"]] == [0]
    found = {f.kind: f.message for f in doctor(tmp_path).findings}
    assert found["worker_died"].startswith(
        f"rank 1 (actor {str(died.actor)[:12]}): died before "
        "its summary was collected (ActorDiedError: "
    )
    assert found["worker_timeout"] == (
        f"rank 2 (actor {str(stopped.actor)[:12]}): gave no summary in time (no answer within "
        "20 s (stopped, hung or still exporting)); whatever it wrote stays on its node's disk"
    )


class Restartable(ProfilerMixin):
    def __init__(self, rank: int, cfg: Mapping[str, Any]) -> None:
        self.init_profiler(cfg, rank=rank)

    def step(self, step: int) -> int:
        with self.profiler.step(step), self.profiler.stage("actor_update"):
            time.sleep(0.02)
        self.profiler.flush_ranges()
        return os.getpid()


def test_a_restarted_actor_is_named_restarted_with_its_earlier_files(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """Ray restarts a killed actor (``max_restarts``): its new process profiles the same rank
    into the same folder. ``collect`` says ``restarted``, not ``ok``, and the summary lists the
    range file the earlier process left; doctor names the restart."""
    from mindspeed_prof.analysis.doctor import doctor

    ray = ray_cluster
    cfg = worker_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            }
        }
    )
    worker = ray.remote(max_restarts=1, max_task_retries=0)(Restartable).remote(1, cfg)
    first = ray.get(worker.step.remote(1), timeout=180)
    ray.kill(worker, no_restart=False)
    deadline = time.monotonic() + 240
    call = worker.step.remote(1)
    while True:  # the restarted process answers (its start under load: a minute and more)
        try:
            second = ray.get(call, timeout=30)
            break
        except ray.exceptions.GetTimeoutError:
            assert time.monotonic() < deadline, "the restarted actor did not answer"
        except ray.exceptions.RayActorError:
            assert time.monotonic() < deadline, "Ray did not restart the actor"
            time.sleep(0.5)
            call = worker.step.remote(1)
    assert second != first
    ray.get(worker.step.remote(2), timeout=60)
    (summary,) = collect([worker], ranks=[1])
    assert isinstance(summary, WorkerSummary)
    assert summary.status == "restarted" and summary.restarted is True
    earlier = [Path(f.path).name for f in summary.earlier_files or []]
    assert earlier and all(f"_{first}_" in name for name in earlier)
    assert all(f"_{second}_" in Path(f.path).name for f in summary.files)
    assert summary.worker == 0 and summary.actor == worker._actor_id.hex()
    written = json.loads(write_cluster_summary(tmp_path, [summary]).read_text())
    (missing,) = written["missing"]
    assert missing["worker"] == 0 and missing["actor"] == summary.actor  # no null fields
    assert missing["error"] == f"restarted by Ray; its earlier processes left {len(earlier)} " + (
        "file (earlier_files)" if len(earlier) == 1 else "files (earlier_files)"
    )
    (restart,) = [f for f in doctor(tmp_path).findings if f.kind == "worker_restarted"]
    assert restart.where == "rank 1" and earlier[0] in restart.message


class _Context:
    """Ray's runtime context in a restarted actor, as ``profiler_summary`` asks it."""

    was_current_actor_reconstructed = True

    def get_node_id(self) -> str:
        return "c3" * 28


class _Ray:
    """The ``ray`` module of a worker process (initialised), as far as the summary uses it."""

    @staticmethod
    def is_initialized() -> bool:
        return True

    @staticmethod
    def get_runtime_context() -> _Context:
        return _Context()


def test_a_restarted_workers_summary_lists_its_earlier_files_of_this_run_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a Ray cluster: the earlier process's range file (this run, this rank) is listed;
    another run's file and another rank's in the same folder are not."""
    base = {
        "integrated": {
            "profile": True,
            "mstx": True,
            "profile_step_start": 1,
            "profile_step_end": 3,
            "profile_save_path": str(tmp_path),
        }
    }
    cfg = worker_config(base)

    def train(rank: int, config: Mapping[str, Any]) -> list[str]:
        worker = Restartable.__new__(Restartable)
        Restartable.__init__(worker, rank, config)
        for step in (1, 2):
            worker.step(step)
        worker.profiler.close()
        return [f for c in worker.profiler.captures for f in c.files]

    earlier = train(1, cfg)  # the process Ray restarted
    other_run = train(1, {**cfg, "run": "an-earlier-run"})
    other_rank = train(0, cfg)
    monkeypatch.setitem(sys.modules, "ray", _Ray())
    worker = Restartable.__new__(Restartable)
    Restartable.__init__(worker, 1, cfg)
    worker.step(1)
    summary = worker.profiler_summary()
    assert summary.restarted is True and summary.node == "c3" * 28
    listed = {f.path for f in summary.earlier_files or []}
    assert listed == set(earlier) and not listed & set(other_run + other_rank)
    assert not listed & {f.path for f in summary.files}
