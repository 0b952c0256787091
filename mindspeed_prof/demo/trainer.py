"""The demo's driver: integrated workers as Ray actors, a reward log, the stage-by-rank table."""

from __future__ import annotations

import os
import time
from typing import Any, cast

import msgspec
from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from mindspeed_prof.analysis.rows import StageRow
from mindspeed_prof.demo.worker import IntegratedWorker
from mindspeed_prof.ray import (
    collect,
    open_board,
    save_root,
    worker_config,
    write_cluster_summary,
)
from mindspeed_prof.raylink import without_token_notice
from mindspeed_prof.views.text import count, print_stage_rank

__all__ = ["train"]


def train(cfg: DictConfig, console: Console | None = None) -> dict[str, Any]:
    """Run the demo; return the mean reward per step and every worker's profiler summary."""
    console = console or Console()
    demo = cast("dict[str, Any]", OmegaConf.to_container(cfg.demo, resolve=True))
    prof_cfg = worker_config(cfg.profiler_config)
    n = int(demo["workers"])
    started = time.perf_counter()
    if n > 0:
        import ray

        owns_ray = not ray.is_initialized()
        if owns_ray:
            with without_token_notice():
                # address="local": the demo's own cluster, even where `ray start` runs one
                ray.init(address="local", num_cpus=max(n, 1), include_dashboard=False,
                         log_to_driver=True, configure_logging=False)
            if prof_cfg["integrated"].get("on_demand", True):
                open_board()  # lives with this driver: `capture --ray` reaches the workers
                token = "RAY_AUTH_MODE=token " if os.environ.get("RAY_AUTH_MODE") == "token" \
                    else ""  # Ray asks for it with an explicit address
                console.print(f"capture while it runs: {token}mindspeed-prof capture --ray "
                              f"{ray.get_runtime_context().gcs_address}", highlight=False,
                              soft_wrap=True)
        remote = ray.remote(num_cpus=1)(IntegratedWorker)
        workers = [remote.remote(rank, demo, prof_cfg) for rank in range(n)]
        call = lambda method, *a: ray.get([getattr(w, method).remote(*a) for w in workers])  # noqa: E731
    else:
        owns_ray = False
        local = [IntegratedWorker(0, demo, prof_cfg)]
        call = lambda method, *a: [getattr(w, method)(*a) for w in local]  # noqa: E731
    rewards = []
    try:
        for step in range(1, int(demo["steps"]) + 1):
            stats = call("train_step", step)
            mean = sum(s["reward"] for s in stats) / len(stats)
            rewards.append(mean)
            console.print(f"step {step:3d}  reward {mean:.3f}  "
                          f"kl {stats[0]['kl']:.4f}  value_loss {stats[0]['value_loss']:.4f}")
        summaries = collect(workers) if n > 0 else [local[0].profiler_summary()]
        timings = call("timings")
    finally:
        if owns_ray:
            import ray

            ray.shutdown()
    root = save_root(prof_cfg)
    rows = [msgspec.convert(row, StageRow) for s in summaries for row in s["stage_rank"]]
    if rows:
        print_stage_rank(rows, console, title="Captured stage time per rank: total ms "
                                              "(executions)")
        path = write_cluster_summary(root, summaries)
        captures = sum(len(s["captures"]) for s in summaries)
        console.print(f"{count(captures, 'capture')} from ranks {[s['rank'] for s in summaries]} "
                      f"under {root}\ncluster summary: {path}", soft_wrap=True, highlight=False)
    else:
        steps = max(int(demo["steps"]), 1)  # the clock gives totals: the mean stands for max
        rows = [StageRow(stage=stage, rank=t["rank"], count=steps, total_ms=sec * 1000,
                         mean_ms=sec * 1000 / steps, max_ms=sec * 1000 / steps)
                for t in timings for stage, sec in t["stage_seconds"].items()]
        print_stage_rank(rows, console, title="Stage time per rank (demo clock, nothing "
                                              "captured): total ms (steps)")
    console.print(f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} in {len(rewards)} steps, "
                  f"{time.perf_counter() - started:.1f} s")
    return {"rewards": rewards, "summaries": summaries, "save_root": str(root)}
