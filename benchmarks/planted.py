"""Planted causes for the judgement benchmark: captures with a known cause, and healthy ones.

- ``synthetic``: captures built in memory (``TraceData`` of step, stage and range ranges) with
  a noise model: each stage's time jitters (3% normal) and now and then stalls (2% of cells,
  1-3x the stage), and now and then the rank stops outside every stage (2% of steps, 25-200%
  of the step: descheduled, a collector's pause), as steps on a shared machine do; planted:
  a rank +25% of the step at one stage, one stage +100% of the step on every rank, one stage
  +0.5 ms a step, a stall of 2 steps once, a rank 3 ms longer in a range while the others
  wait for it in a collective.
  Timing is not the point; many seeds are cheap.
- ``Demo``: the demo trainer's integrated worker, one process per rank, every step behind a
  barrier (synchronous RL waits for its slowest rank), with the cause planted as sleeps inside
  its stages or through the demo's own knobs (reward-constant groups, dynamic sampling, a long
  tail of responses). Timing is the point: the machine's own noise, quiet or under load.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Demo", "Truth", "load", "synthetic", "SYNTHETIC", "DEMO"]

STAGES = (
    "actor_generate",
    "actor_compute_log_prob",
    "reference_compute_log_prob",
    "critic_compute_values",
    "actor_update",
    "critic_update",
)
#: Each stage's typical ms in the synthetic captures.
BASE = dict(zip(STAGES, (8.0, 2.0, 2.0, 1.0, 6.0, 2.0)))
#: Their step, about (stages and 0.5 ms outside them).
STEP = sum(BASE.values()) + 0.5
#: The synthetic scenarios and the demo's.
SYNTHETIC = ("healthy", "straggler", "stage", "growth", "stall", "victim")
DEMO = ("healthy", "straggler", "stage", "growth", "stall", "zero_variance", "dropped", "long_tail")


@dataclass(frozen=True)
class Truth:
    """What was planted: the ``scenario``, and where (``rank``, ``stage`` or range name,
    ``step``) and how much (``slope_ms`` per step of a growth)."""

    scenario: str
    rank: int | None = None
    stage: str | None = None
    step: int | None = None
    slope_ms: float | None = None


def synthetic(scenario: str, ranks: int, steps: int, seed: int) -> tuple[Any, Truth]:
    """``Captures`` of ``ranks`` captures of ``steps`` steps with ``scenario`` planted."""
    from mindspeed_prof.analysis.readers import Range, TraceData
    from mindspeed_prof.analysis.report.captures import Captures

    rng = random.Random(seed)
    slow_rank, stage = rng.randrange(ranks), rng.choice(STAGES)
    stall_step = rng.randrange(1, steps + 1)
    truth = {
        "healthy": Truth("healthy"),
        "straggler": Truth("straggler", slow_rank, stage),
        "stage": Truth("stage", None, stage),
        "growth": Truth("growth", None, stage, None, 0.5),
        "stall": Truth("stall", slow_rank, stage, stall_step),
        "victim": Truth("victim", slow_rank, "forward"),
    }[scenario]
    traces = []
    for rank in range(ranks):
        t = TraceData(Path(f"run/rank{rank}.mstx.trace.json"), "spans", rank, "integrated", 1)
        ts = 0.0
        for step in range(1, steps + 1):
            start = ts
            for name in STAGES:
                ms = BASE[name] * (1 + rng.gauss(0, 0.03))
                if rng.random() < 0.02:
                    ms += BASE[name] * rng.uniform(1, 3)  # a stall: noise too
                if name == truth.stage:
                    if scenario == "straggler" and rank == slow_rank:
                        ms += STEP / 4
                    elif scenario == "stage":
                        ms += STEP
                    elif scenario == "growth":
                        ms += (truth.slope_ms or 0.0) * (step - 1)
                    elif scenario == "stall" and rank == slow_rank and step == stall_step:
                        ms += 2 * STEP
                if scenario == "victim" and name == "actor_update":
                    # inside it: rank slow_rank computes 3 ms longer, the others wait for it
                    fwd = 3.0 * (1 + rng.gauss(0, 0.03)) + 3.0 * (rank == slow_rank)
                    wait = 0.5 + 3.0 * (rank != slow_rank)
                    t.ranges.append(Range(rank, "range", "forward", step, 1e3 * ts, 1e3 * fwd))
                    t.ranges.append(
                        Range(rank, "range", "allreduce", step, 1e3 * (ts + fwd), 1e3 * wait)
                    )
                    ms = max(ms, fwd + wait + 0.1)
                t.ranges.append(Range(rank, "stage", name, step, 1e3 * ts, 1e3 * ms))
                ts += ms
            ts += 0.5  # outside every stage
            if rng.random() < 0.02:
                ts += STEP * rng.uniform(0.25, 2)  # descheduled between steps' stages: noise
            t.ranges.append(
                Range(rank, "step", f"ProfilerStep#{step}", step, 1e3 * start, 1e3 * (ts - start))
            )
        traces.append(t)
    return Captures(root=Path("run"), traces=traces), truth


# -- the demo trainer, one process per rank --------------------------------------------------

#: The real runs' window: 12 captured steps (2 to 13), enough for a trend through noise.
WINDOW = (2, 14)


def _plan(scenario: str) -> tuple[dict[str, Any], Truth]:
    """The demo knobs and the sleeps (rank, stage, step or None, ms, per step growth) of
    ``scenario``."""
    knobs: dict[str, Any] = {}
    if scenario == "zero_variance":
        knobs = {"constant_reward_groups": 0.4}
    elif scenario == "dropped":
        knobs = {"constant_reward_groups": 0.4, "filter_groups": True}
    elif scenario == "long_tail":
        knobs = {"long_tail": 0.05, "long_tail_length": 256}
    truth = {
        "straggler": Truth("straggler", 1, "actor_generate"),
        "stage": Truth("stage", None, "critic_compute_values"),
        "growth": Truth("growth", None, "critic_update", None, 8.0),
        "stall": Truth("stall", 0, "reference_compute_log_prob", 5),
    }.get(scenario, Truth(scenario, None, "actor_generate" if knobs else None))
    return knobs, truth


def _sleep_ms(truth: Truth, rank: int, stage: str, step: int) -> float:
    if stage != truth.stage:
        return 0.0
    if truth.scenario == "straggler" and rank == truth.rank:
        return 30.0
    if truth.scenario == "stage":
        return 80.0
    if truth.scenario == "growth":
        return (truth.slope_ms or 0.0) * (step - 1)
    if truth.scenario == "stall" and rank == truth.rank and step == truth.step:
        return 300.0
    if truth.scenario in ("zero_variance", "dropped", "long_tail"):
        return 40.0  # generation takes most of an RL step: what it wastes is worth naming
    return 0.0


def _rank_main(rank: int, ranks: int, jobs: Any, done: Any, barrier: Any) -> None:
    """A rank's process: runs each job (scenario, seed, save root) to its last step, the
    steps in step with the other ranks."""
    from omegaconf import OmegaConf

    from mindspeed_prof.demo.knobs import DemoConfig
    from mindspeed_prof.demo.worker import IntegratedWorker

    conf = OmegaConf.to_container(
        OmegaConf.load(Path(__file__).resolve().parents[1] / "conf" / "demo.yaml")
    )
    assert isinstance(conf, dict)
    while True:
        job = jobs.get()
        if job is None:
            return
        scenario, seed, root = job
        knobs, truth = _plan(scenario)
        demo = DemoConfig.parse({**conf["demo"], "seed": seed, **knobs, "workers": ranks})

        class Planted(IntegratedWorker):
            def _stage(self, name: str) -> Any:
                timed = super()._stage(name)
                extra = _sleep_ms(truth, self.rank, name, self._step) / 1000.0

                class Sleeps:
                    def __enter__(self) -> None:
                        timed.__enter__()
                        if extra:
                            time.sleep(extra)

                    def __exit__(self, *exc: Any) -> None:
                        timed.__exit__(*exc)

                return Sleeps()

            def train_step(self, step: int) -> dict[str, float]:
                self._step = step
                return super().train_step(step)

        prof = {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_save_path": root,
                "profile_step_start": WINDOW[0],
                "profile_step_end": WINDOW[1],
            },
            "extensions": {"backend": "none", "on_demand": False},
        }
        os.environ["MINDSPEED_PROF_RUN"] = f"bench-{scenario}-{seed}"  # one run, every rank
        worker = Planted(rank, demo, prof)
        for step in range(1, WINDOW[1] + 1):
            barrier.wait()
            worker.train_step(step)
        barrier.wait()
        worker.profiler.close()
        done.put(rank)


class Demo:
    """``ranks`` processes running the demo's worker; ``run`` plants a scenario and returns
    the save root it wrote."""

    def __init__(self, ranks: int) -> None:
        ctx = mp.get_context("spawn")
        self.ranks = ranks
        self.jobs = [ctx.Queue() for _ in range(ranks)]
        self.done = ctx.Queue()
        self.barrier = ctx.Barrier(ranks)  # kept: the children open it after it is pickled
        self.procs = [
            ctx.Process(
                target=_rank_main,
                args=(r, ranks, self.jobs[r], self.done, self.barrier),
                daemon=True,
            )
            for r in range(ranks)
        ]
        for p in self.procs:
            p.start()

    def run(self, scenario: str, seed: int, root: Path) -> Truth:
        for q in self.jobs:
            q.put((scenario, seed, str(root)))
        left, deadline = self.ranks, time.monotonic() + 600
        while left:
            try:
                self.done.get(timeout=1)
                left -= 1
            except queue.Empty:
                dead = [p.exitcode for p in self.procs if not p.is_alive()]
                if dead or time.monotonic() > deadline:
                    raise RuntimeError(f"a rank's process ended ({dead}) or hung") from None
        return _plan(scenario)[1]

    def close(self) -> None:
        for q in self.jobs:
            q.put(None)
        for p in self.procs:
            p.join(timeout=30)


def _busy() -> None:
    while True:
        pass


class load:
    """Busy processes on every core while the block runs (``n`` of them; 0: none)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[Any] = []

    def __enter__(self) -> load:
        ctx = mp.get_context("spawn")
        self.procs = [ctx.Process(target=_busy, daemon=True) for _ in range(self.n)]
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.terminate()
            p.join(timeout=10)
