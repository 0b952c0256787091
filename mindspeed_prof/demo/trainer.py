"""The demo's driver: integrated workers as Ray actors, a reward log, the stage-by-rank table."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, TypedDict

import msgspec
from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from mindspeed_prof.analysis.rows import StageRow
from mindspeed_prof.config import validate
from mindspeed_prof.demo.worker import DemoConfig, IntegratedWorker, Timings
from mindspeed_prof.formats.cluster import WorkerSummary
from mindspeed_prof.ray import (
    collect,
    open_board,
    save_root,
    worker_config,
    write_cluster_summary,
)
from mindspeed_prof.raylink import without_token_notice
from mindspeed_prof.views.text import count, print_stage_rank

if TYPE_CHECKING:
    from ray.actor import ActorHandle

__all__ = ["DemoResult", "train"]


class DemoResult(TypedDict):
    """The mean reward per step, every worker's profiler summary, and where they wrote."""

    rewards: list[float]
    summaries: list[WorkerSummary]
    save_root: str


def train(cfg: DictConfig, console: Console | None = None) -> DemoResult:
    """Run the demo; return the mean reward per step and every worker's profiler summary."""
    console = console or Console()
    demo = DemoConfig.parse(OmegaConf.to_container(cfg.demo, resolve=True))
    prof_cfg = worker_config(cfg.profiler_config)
    n = demo.workers
    started = time.perf_counter()
    if n > 0:
        import ray

        owns_ray = not ray.is_initialized()
        if owns_ray:
            with without_token_notice():
                # address="local": the demo's own cluster, even where `ray start` runs one
                ray.init(
                    address="local",
                    num_cpus=max(n, 1),
                    include_dashboard=False,
                    log_to_driver=True,
                    configure_logging=False,
                )
            if validate(prof_cfg).on_demand:
                open_board()  # lives with this driver: `capture --ray` reaches the workers
                token = (
                    "RAY_AUTH_MODE=token " if os.environ.get("RAY_AUTH_MODE") == "token" else ""
                )  # Ray asks for it with an explicit address
                console.print(
                    f"capture while it runs: {token}mindspeed-prof capture --ray "
                    f"{ray.get_runtime_context().gcs_address}",
                    highlight=False,
                    soft_wrap=True,
                )
        remote = ray.remote(num_cpus=1)(IntegratedWorker)
        workers = [remote.remote(rank, demo, prof_cfg) for rank in range(n)]
    else:
        owns_ray = False
        local = [IntegratedWorker(0, demo, prof_cfg)]
    rewards: list[float] = []
    summaries: list[WorkerSummary]
    timings: list[Timings]
    try:
        for step in range(1, demo.steps + 1):
            stats: list[dict[str, float]] = _on_all(workers if n > 0 else local, "train_step", step)
            mean = sum(s["reward"] for s in stats) / len(stats)
            rewards.append(mean)
            console.print(
                f"step {step:3d}  reward {mean:.3f}  "
                f"kl {stats[0]['kl']:.4f}  value_loss {stats[0]['value_loss']:.4f}"
            )
        summaries = collect(workers) if n > 0 else [local[0].profiler_summary()]
        timings = _on_all(workers if n > 0 else local, "timings")
    finally:
        if owns_ray:
            import ray

            ray.shutdown()
    root = save_root(prof_cfg)
    rows = [msgspec.convert(row, StageRow) for s in summaries for row in s["stage_rank"]]
    if rows:
        print_stage_rank(rows, console, title="Captured stage time per rank: total ms (executions)")
        path = write_cluster_summary(root, summaries)
        captures = sum(len(s["captures"]) for s in summaries)
        console.print(
            f"{count(captures, 'capture')} from ranks {[s['rank'] for s in summaries]} "
            f"under {root}\ncluster summary: {path}",
            soft_wrap=True,
            highlight=False,
        )
    else:
        steps = max(demo.steps, 1)  # the clock gives totals: the mean stands for max
        rows = [
            StageRow(
                stage=stage,
                rank=t["rank"],
                count=steps,
                total_ms=sec * 1000,
                mean_ms=sec * 1000 / steps,
                max_ms=sec * 1000 / steps,
            )
            for t in timings
            for stage, sec in t["stage_seconds"].items()
        ]
        print_stage_rank(
            rows,
            console,
            title="Stage time per rank (demo clock, nothing captured): total ms (steps)",
        )
    console.print(
        f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} in {len(rewards)} steps, "
        f"{time.perf_counter() - started:.1f} s"
    )
    return {"rewards": rewards, "summaries": summaries, "save_root": str(root)}


def _on_all(
    workers: list[IntegratedWorker] | list[ActorHandle], method: str, *args: object
) -> list[Any]:
    """Every worker's answer to ``method(*args)``: called here, or through Ray when they are
    actors."""
    if workers and not isinstance(workers[0], IntegratedWorker):
        import ray

        return list(ray.get([getattr(w, method).remote(*args) for w in workers]))
    return [getattr(w, method)(*args) for w in workers]
