"""The demo's driver: integrated workers as Ray actors, a reward log, the stage-by-rank table."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, TypedDict, cast

import msgspec
from omegaconf import DictConfig, OmegaConf
from rich.console import Console

from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.analysis.rows import StageRow
from mindspeed_prof.config import validate
from mindspeed_prof.demo import knobs
from mindspeed_prof.demo.cluster import Cluster, endpoints, start
from mindspeed_prof.demo.knobs import DemoConfig
from mindspeed_prof.demo.local import ProcessWorker
from mindspeed_prof.demo.worker import IntegratedWorker, Timings
from mindspeed_prof.formats.cluster import Worker
from mindspeed_prof.ray import (
    collect,
    open_board,
    save_root,
    worker_config,
    write_cluster_summary,
)
from mindspeed_prof.views.text import count, print_stage_rank

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ray.actor import ActorHandle

__all__ = ["DemoResult", "train"]


class DemoResult(TypedDict):
    """The mean reward per step, every worker's profiler summary, and where they wrote."""

    rewards: list[float]
    summaries: list[Worker]
    save_root: str


def train(cfg: DictConfig, console: Console | None = None) -> DemoResult:
    """Run the demo; return the mean reward per step and every worker's profiler summary."""
    console = console or Console()
    demo = knobs.checked(OmegaConf.to_container(cfg.demo, resolve=True))  # type: ignore[arg-type]
    prof_cfg = worker_config(cfg.profiler_config)
    checked = validate(prof_cfg)
    started = time.perf_counter()
    cluster, workers = _start_workers(demo, prof_cfg, console)
    if cluster is not None:
        for line in _live_lines(checked.telemetry):
            _say(console, line)
        if checked.on_demand:
            open_board()  # lives with this driver: `capture --ray` reaches the workers
    _say(console, _ranks_note(checked.profile_ranks, len(workers)))
    rewards: list[float] = []
    summaries: list[Worker]
    timings: list[Timings]
    try:
        for step in range(1, demo.steps + 1):
            begun = time.perf_counter()
            stats: list[dict[str, float]] = _on_all(workers, "train_step", step)
            mean = sum(s["reward"] for s in stats) / len(stats)
            rewards.append(mean)
            console.print(
                f"step {step:3d}  reward {mean:.3f}  "
                f"kl {stats[0]['kl']:.4f}  value_loss {stats[0]['value_loss']:.4f}"
            )
            if step == 2 and cluster is not None and checked.on_demand:
                left = (time.perf_counter() - begun) * (demo.steps - step)
                _say(console, _capture_line(left, demo.steps))
        summaries = collect(workers) if cluster else _on_all(workers, "profiler_summary")
        timings = _on_all(workers, "timings")
    finally:
        for w in workers:
            if isinstance(w, ProcessWorker):
                w.close()
        if cluster is not None and cluster.connected:
            import ray

            ray.shutdown()  # the demo's own cluster stops; a joined one only loses this driver
    root = save_root(prof_cfg)
    rows = [msgspec.convert(row, StageRow) for s in summaries for row in s.stage_rank]
    if rows:
        print_stage_rank(rows, console, title="Captured stage time per rank: total ms (executions)")
        path = write_cluster_summary(root, summaries)
        captures = sum(len(s.captures) for s in summaries)
        wrote = [s.rank for s in summaries if s.files]  # not those left out
        console.print(
            f"{count(captures, 'capture')} from rank{'s' * (len(wrote) != 1)} "
            f"{', '.join(map(str, wrote))} "
            f"under {root}\ncluster summary: {path}",
            soft_wrap=True,
            highlight=False,
        )
        for line in _anomaly_lines(summaries, root):
            _say(console, line)
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


Workers = list[IntegratedWorker] | list[ProcessWorker] | list["ActorHandle"]


def _start_workers(
    demo: DemoConfig, prof_cfg: Mapping[str, object], console: Console
) -> tuple[Cluster | None, Workers]:
    """The cluster (None: none) and the workers: one in this process (``demo.workers=0``),
    Ray actors, or, where Ray did not start, child processes."""
    n = demo.workers
    if n == 0:
        return None, [IntegratedWorker(0, demo, prof_cfg)]
    cluster = start(n, demo.ray_address, lambda line: _say(console, line))
    if cluster is None:
        return None, [ProcessWorker(rank, demo, prof_cfg) for rank in range(n)]
    import ray

    remote = ray.remote(num_cpus=1)(IntegratedWorker)
    return cluster, [remote.remote(rank, demo, prof_cfg) for rank in range(n)]


#: How long a run must have left for the live-capture line to be worth printing: time to
#: paste it, for ``capture`` to reach the workers and for them to capture their steps.
LIVE_MIN_S = 60.0


def _anomaly_lines(summaries: list[Worker], root: Path) -> list[str]:
    """A line per capture the anomaly trigger took, from the workers' own records: a worker's
    warning crosses Ray's log forwarding, which may not deliver a line logged just before the
    job ends."""
    out = []
    for s in summaries:
        seen = [c.trigger_step for c in s.captures if c.trigger == "flight" and c.trigger_step]
        for c in s.captures:
            if c.trigger != "anomaly" or not c.steps:
                continue
            at = max((k for k in seen if k < c.steps[0]), default=None)
            out.append(
                f"rank {c.rank}: an anomaly{f' at step {at}' if at is not None else ''} "
                f"captured step{'s' * (len(c.steps) > 1)} {ranks_text(c.steps)} under "
                f"{root / 'triggered'}"
            )
    return out


def _say(console: Console, line: str | None) -> None:
    if line:
        console.print(line, highlight=False, soft_wrap=True, markup=False)


def _capture_line(left_s: float, steps: int) -> str | None:
    """``capture --ray`` for this run, with how long it stays valid, where the run is long
    enough to use it (``left_s``: about the time left); None otherwise."""
    if left_s < LIVE_MIN_S:
        return None
    import ray

    token = "RAY_AUTH_MODE=token " if os.environ.get("RAY_AUTH_MODE") == "token" else ""
    return (
        f"capture while it runs (valid until the demo ends, about {left_s:.0f} s from now, "
        f"at step {steps}): {token}mindspeed-prof capture --ray "
        f"{ray.get_runtime_context().gcs_address}"
    )


def _live_lines(sinks: tuple[str, ...]) -> list[str]:
    """Where Ray's metrics are (``telemetry: [ray]``): each node's Prometheus endpoint."""
    if "ray" not in sinks:
        return []
    import ray

    return [
        f"live figures: Prometheus at {url} (gauges ray_mindspeed_prof_*, some seconds behind)"
        for url in endpoints(ray.nodes())
    ]


def _ranks_note(profile_ranks: object, workers: int) -> str | None:
    """The ranks ``profile_ranks`` names that the demo's workers do not have, where any."""
    if not isinstance(profile_ranks, list):
        return None
    absent = [r for r in profile_ranks if r >= workers]
    if not absent:
        return None
    tail = ": nothing will be captured" if len(absent) == len(profile_ranks) else ""
    return (
        f"mindspeed-prof demo: profile_ranks {profile_ranks}: no worker of the demo's "
        f"{workers} (ranks 0-{workers - 1}) has rank {', '.join(map(str, absent))}{tail}"
    )


def _on_all(workers: Workers, method: str, *args: object) -> list[Any]:
    """Every worker's answer to ``method(*args)``: called here, in their processes (all asked
    first, so they run at once), or through Ray when they are actors."""
    if workers and isinstance(workers[0], IntegratedWorker):
        return [getattr(w, method)(*args) for w in workers]
    if workers and isinstance(workers[0], ProcessWorker):
        local = cast("list[ProcessWorker]", workers)
        for w in local:
            w.call(method, *args)
        return [w.result() for w in local]
    import ray

    return list(ray.get([getattr(w, method).remote(*args) for w in workers]))
