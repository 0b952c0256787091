"""Live telemetry's cost per step: one training step's hooks (a step of the 6 RL stages, empty
bodies, so the hooks are all there is) with telemetry on, against the same steps without it.

Each side is a block of steps timed with the process's CPU time (``time.process_time_ns``, gc
off in the loop: wall time on a shared machine scatters with other processes' load); blocks of
the two sides alternate (``Paired``: A,B then B,A) until the 95% interval of the geometric-mean
ratio is within +-3% or the time budget is spent. Baselines:

- profiling off (``prof.step`` a shared nullcontext, no clock read): what telemetry costs a
  trainer that profiles nothing; reported (telemetry takes the step and stage clock reads this
  baseline never does).
- the same profiler with the telemetry part taken out of its parts (the hooks still live, the
  same clock reads taken): the part's own bookkeeping, goal 1.5x.
- ``telemetry: [metrics]`` against ``[metrics, tensorboard]``: the TensorBoard writer's event
  of 8 scalars at every step (``telemetry_every: 1``), its writer thread included; reported.

The absolute microseconds per step are in each row: against a 38 ms demo step (``step_cost``)
they are the share of a real step.
"""

from __future__ import annotations

import gc
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.report import Report
from benchmarks.timing import Paired

__all__ = ["run"]

#: The 95% interval's half-width these figures are resolved to.
RESOLVE = 0.03


def _profiler(root: Path, name: str, telemetry: list[str]) -> Any:
    from mindspeed_prof import Profiler

    return Profiler.from_config(
        {
            "integrated": {"profile_save_path": str(root / name)},
            "extensions": {"telemetry": telemetry, "on_demand": False},
        },
        rank=0,
    )


def _steps(prof: Any) -> Callable[[int], None]:
    from mindspeed_prof.config.schema import STAGES

    counter = [0]

    def steps(k: int) -> None:
        step, stage = prof.step, prof.stage
        start = counter[0]
        for i in range(start + 1, start + k + 1):
            with step(i):
                for s in STAGES:
                    with stage(s):
                        pass
        counter[0] = start + k

    return steps


def _cpu_ns_per_step(steps: Callable[[int], None], n: int) -> float:
    gc.disable()
    try:
        t0 = time.process_time_ns()
        steps(n)
        return (time.process_time_ns() - t0) / n
    finally:
        gc.enable()


def _pair(report: Report, a: Callable[[int], None], b: Callable[[int], None]) -> Paired:
    n, budget = (50, 1.0) if report.quick else (500, 30.0)
    return Paired().run(
        lambda: _cpu_ns_per_step(a, n),
        lambda: _cpu_ns_per_step(b, n),
        min_pairs=5 if report.quick else 30,
        resolve=RESOLVE,
        budget_s=budget,
    )


def _add(
    report: Report, figure: str, baseline: str, pairs: Paired, goal: float | None, note: str = ""
) -> None:
    import statistics

    ok = (
        "resolved"
        if pairs.half_width() <= RESOLVE
        else f"NOT resolved to +-{RESOLVE:.0%} in the time budget"
    )
    b_us, a_us = statistics.median(pairs.b) / 1e3, statistics.median(pairs.a) / 1e3
    report.add(
        figure,
        baseline,
        pairs.ratio,
        goal,
        f"{b_us:.1f} us vs {a_us:.1f} us per step (medians, CPU time), "
        f"{len(pairs.a)} interleaved blocks; {ok}{note}",
        ci=pairs.ci,
    )


def run(report: Report) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        off = _profiler(root, "off", [])
        on = _profiler(root, "on", ["metrics"])
        bare = _profiler(root, "bare", ["metrics"])
        bare.parts = [p for p in bare.parts if p is not bare._telemetry]  # hooks live, no part
        step_on = _steps(on)
        for warm in (_steps(off), step_on, _steps(bare)):
            warm(20)
        _add(
            report,
            "telemetry: [metrics], one step of 6 stages (per step)",
            "the same step, profiling off (hooks a nullcontext)",
            _pair(report, _steps(off), step_on),
            None,
        )
        _add(
            report,
            "telemetry: [metrics], one step of 6 stages (per step)",
            "the same live hooks without the telemetry part",
            _pair(report, _steps(bare), step_on),
            1.5,
        )
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            report.add(
                "telemetry: [metrics, tensorboard], one step of 6 stages (per step)",
                "telemetry: [metrics]",
                float("nan"),
                None,
                "tensorboard not installed (pip install 'mindspeed-prof[tensorboard]')",
            )
        else:
            tb = _profiler(root, "tb", ["metrics", "tensorboard"])
            step_tb = _steps(tb)
            step_tb(20)
            _add(
                report,
                "telemetry: [metrics, tensorboard], one step of 6 stages (per step)",
                "telemetry: [metrics]",
                _pair(report, step_on, step_tb),
                None,
                "; 8 scalars written per step (telemetry_every: 1)",
            )
            tb.close()
        for prof in (off, on, bare):
            prof.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
