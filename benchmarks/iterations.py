"""Decode-iteration marks (``mstx.iteration(i)``, ``prof.iteration(i)``), as a rollout pays for
them: one per generated token, so they must cost about what a ``nullcontext()`` costs when no
window captures.

- No profiler in the process: ``mstx.iteration(i)`` against ``contextlib.nullcontext()``
  (goal 1.5x).
- A profiler with profiling off: ``mstx.iteration(i)`` against ``nullcontext()`` (goal 1.5x).
- A live profiler with an iteration window, the marks outside it (the stage armed, the window
  not reached): against ``mstx.range()`` recorded to a range file (reported), the cost of
  telling the scheduler about each iteration.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from benchmarks.report import Report
from benchmarks.timing import per_call_ns

__all__ = ["run"]


def run(report: Report) -> None:
    from mindspeed_prof import Profiler, mstx

    n, reps = (5_000, 3) if report.quick else (200_000, 9)
    null, mark = contextlib.nullcontext, mstx.iteration

    def loop_null(k: int) -> None:
        for _ in range(k):
            with null():
                pass

    def loop_mark(k: int) -> None:
        for i in range(k):
            with mark(i):
                pass

    t_null = per_call_ns(loop_null, n, reps)
    t_none = per_call_ns(loop_mark, n, reps)
    report.add(
        "mstx.iteration(i), no profiler",
        "contextlib.nullcontext()",
        t_none / t_null,
        1.5,
        f"{t_none:.0f} ns vs {t_null:.0f} ns",
    )
    off = Profiler.from_config({"integrated": {"profile": False}}, rank=0)
    t_off = per_call_ns(loop_mark, n, reps)
    off.close()
    report.add(
        "mstx.iteration(i), profiling off",
        "contextlib.nullcontext()",
        t_off / t_null,
        1.5,
        f"{t_off:.0f} ns vs {t_null:.0f} ns",
    )

    root = Path(tempfile.mkdtemp(prefix="bench_iterations_"))
    try:
        prof = Profiler.from_config(
            {
                "integrated": {
                    "profile": True,
                    "mstx": True,
                    "profile_level": "level_none",
                    "profile_step_start": 1,
                    "profile_step_end": 3,
                    "profile_save_path": str(root / "window"),
                },
                "extensions": {"backend": "none", "iteration_start": 10**9, "iteration_count": 1},
            },
            rank=0,
        )
        with prof.step(1), prof.stage("actor_generate"):  # armed, the window never reached
            t_armed = per_call_ns(loop_mark, n, reps)
        prof.close()
        ranges = Profiler.from_config(
            {
                "integrated": {
                    "profile": True,
                    "mstx": True,
                    "profile_level": "level_none",
                    "profile_step_start": 1,
                    "profile_step_end": 3,
                    "profile_save_path": str(root / "ranges"),
                },
                "extensions": {"backend": "none"},
            },
            rank=0,
        )
        rng = mstx.range

        def loop_range(k: int) -> None:
            for _ in range(k):
                with rng("token"):
                    pass

        with ranges.step(1):
            t_range = per_call_ns(loop_range, n, reps)
        ranges.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report.add(
        "mstx.iteration(i), a window armed, outside it",
        "mstx.range recorded to a range file",
        t_armed / t_range,
        None,
        f"{t_armed:.0f} ns vs {t_range:.0f} ns",
    )
