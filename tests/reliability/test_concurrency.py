"""4 Ray workers and 3 parallel multirun jobs write under one save root at the same time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mindspeed_prof.ray import ProfilerMixin, collect, worker_config

STAGES = "actor_generate,actor_update,critic_update"
#: Ray workers writing beside the multirun's jobs (each a process importing torch).
WORKERS = 4


class Worker(ProfilerMixin):
    def __init__(self, rank: int, cfg: dict[str, Any]) -> None:
        import torch

        torch.set_num_threads(1)
        self.init_profiler(cfg, rank=rank)

    def run(self, steps: int) -> None:
        import torch

        for step in range(1, steps + 1):
            with self.profiler.step(step):
                for stage in STAGES.split(","):
                    with self.profiler.stage(stage):
                        torch.randn(16, 16) @ torch.randn(16, 16)


def test_ray_workers_and_joblib_jobs_share_a_save_root(
    ray_cluster: Any, app: Path, tmp_path: Path
) -> None:
    from helpers import count  # here, not at the top: Ray workers import this module too

    ray = ray_cluster
    root = tmp_path / "shared"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYDRA_", "RANK"))}
    sweep = subprocess.Popen(
        [
            sys.executable,
            "app.py",
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=3",
            "profiler_config=stage_scoped",
            f"profiler_config.integrated.stage={STAGES}",
            "profiler_config.integrated.profile_step_end=3",
            f"profiler_config.integrated.profile_save_path={root}",
        ],
        cwd=app,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cfg = worker_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(root),
            }
        }
    )
    workers = [ray.remote(num_cpus=0.1)(Worker).remote(r, cfg) for r in range(WORKERS)]
    ray.get([w.run.remote(3) for w in workers])
    summaries = collect(workers)
    out, err = sweep.communicate(timeout=600)
    assert sweep.returncode == 0, err
    count("concurrent writers", len(workers) + 3)

    on_disk = {p for p in root.rglob("*") if p.is_file() and not p.name.startswith("manifest")}
    records = [json.loads(m.read_text()) for m in sorted(root.glob("manifest-*.json"))]
    jobs = [r for r in records if r["job"].get("num") is not None]  # the multirun's
    assert sorted(r["job"]["num"] for r in jobs) == [0, 1, 2]
    assert len({r["run"] for r in records}) == len(records)  # a run id each, one file each
    from_jobs = [Path(f) for r in jobs for c in r["captures"] for f in c["files"]]
    from_ray = [Path(f.path) for s in summaries for f in s.files]
    listed = from_jobs + from_ray
    assert len(listed) == len(set(listed))  # no two writers produced the same file
    assert set(listed) == on_disk  # nothing missing from the manifests and summaries
    for f in on_disk:
        json.loads(f.read_text())
    assert {s.rank for s in summaries} == set(range(WORKERS))
    assert len(from_ray) == WORKERS * 2  # op trace + ranges, one capture each
    # three jobs, one step (stage_scoped's window starts at step 2, ends before 3), op trace
    # + ranges
    assert len(from_jobs) == 3 * 1 * 2
