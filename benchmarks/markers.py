"""Range markers, as a trainer pays for them.

- Capture off: ``mstx.range()`` in a tight loop against ``contextlib.nullcontext()`` (goal
  1.5x) and against ``record_function`` with no profiler (reported). Id-based ranges
  (``mstx.range_start``/``range_end``) against the context manager (goal 1.0x: no dearer) and
  ``nullcontext()`` (goal 1.5x), and recording into the range buffer against the context
  manager recording (reported).
- Capture on: what a trainer pays per step. One step is ``prof.step(n)`` around 10
  ``mstx.range()`` calls, with the step hook and the per-step flush of the span recorder
  included (``mstx_light`` settings: ranges only). Baselines: the same loop with
  ``nullcontext()`` for the step and every range (reported), and the same loop of
  ``record_function`` ranges under a live ``torch.profiler`` on CPU with ``prof.step()`` at each
  step end (goal 0.25x). Capture start and stop are outside the timed steps on both sides.
  Blocks of steps are interleaved (ours, nullcontext, torch) and the figure is the median of
  the per-block ratios, with their range in the detail. Blocks are timed with the process's
  CPU time (this machine is shared; see ``step_cost``), which includes the flush's writes.
  The per-step cost is the step hook plus the span recorder (``capture/spans.py``): at 10
  ranges per step its per-step write is a large share, unlike the old figure's flush per 100
  ranges.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.report import Report
from benchmarks.timing import per_call_ns

__all__ = ["run"]

RANGES_PER_STEP = 10


def _ours(root: Path, steps: int) -> float:
    from mindspeed_prof import Profiler, mstx

    prof = Profiler.from_config({"integrated": {
        "profile": True, "mstx": True, "profile_level": "level_none", "profile_with_cpu": False,
        "profile_step_start": 1, "profile_step_end": steps + 2,
        "profile_save_path": str(root)}}, rank=0)
    rng = mstx.range
    with prof.step(1):  # starts the capture, untimed
        pass
    t0 = time.process_time_ns()
    for step in range(2, steps + 2):
        with prof.step(step):
            for _ in range(RANGES_PER_STEP):
                with rng("layer"):
                    pass
    dt = time.process_time_ns() - t0
    prof.close()
    return dt / steps


def _null(steps: int) -> float:
    null = contextlib.nullcontext
    t0 = time.process_time_ns()
    for _ in range(steps):
        with null():
            for _ in range(RANGES_PER_STEP):
                with null():
                    pass
    return (time.process_time_ns() - t0) / steps


def _torch(steps: int) -> float:
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        prof.step()
        t0 = time.process_time_ns()
        for _ in range(steps):
            for _ in range(RANGES_PER_STEP):
                with record_function("layer"):
                    pass
            prof.step()
        dt = time.process_time_ns() - t0
    return dt / steps


def run(report: Report) -> None:
    from torch.profiler import record_function

    from mindspeed_prof import mstx

    n, reps = (5_000, 3) if report.quick else (200_000, 9)
    null = contextlib.nullcontext

    def loop_null(k: int) -> None:
        for _ in range(k):
            with null():
                pass

    def loop_off(k: int) -> None:
        rng = mstx.range
        for _ in range(k):
            with rng("step"):
                pass

    def loop_rf(k: int) -> None:
        for _ in range(k):
            with record_function("step"):
                pass

    mstx.set_sink(None)
    t_null = per_call_ns(loop_null, n, reps)
    t_off = per_call_ns(loop_off, n, reps)
    t_rf = per_call_ns(loop_rf, n // 4, reps)
    report.add("one range, capture off", "contextlib.nullcontext()", t_off / t_null, 1.5,
               f"{t_off:.0f} ns vs {t_null:.0f} ns")
    report.add("one range, capture off", "record_function, no profiler", t_off / t_rf, None,
               f"{t_off:.0f} ns vs {t_rf:.0f} ns")

    def loop_ids(k: int) -> None:
        start, end = mstx.range_start, mstx.range_end
        for _ in range(k):
            end(start("step"))

    t_ids = per_call_ns(loop_ids, n, reps)
    report.add("one id-based range (range_start/range_end), capture off",
               "mstx.range() context manager, capture off", t_ids / t_off, 1.0,
               f"{t_ids:.0f} ns vs {t_off:.0f} ns")
    report.add("one id-based range (range_start/range_end), capture off",
               "contextlib.nullcontext()", t_ids / t_null, 1.5,
               f"{t_ids:.0f} ns vs {t_null:.0f} ns")
    from mindspeed_prof.capture.spans import RangeBuffer

    buffer = RangeBuffer()
    mstx.add_sink(buffer)  # recording: the range buffer, as under a capture or the flight recorder
    try:
        t_ids_on = per_call_ns(loop_ids, n, reps)
        buffer.take()
        t_on = per_call_ns(loop_off, n, reps)
    finally:
        mstx.set_sink(None)
    report.add("one id-based range, recording (range buffer)",
               "mstx.range() context manager, recording", t_ids_on / t_on, None,
               f"{t_ids_on:.0f} ns vs {t_on:.0f} ns; any thread may end it")

    tmp = Path(tempfile.mkdtemp())
    steps, blocks = (50, 2) if report.quick else (500, 15)
    ours, nulls, torchs = [], [], []
    try:
        for i in range(blocks):
            ours.append(_ours(tmp / str(i), steps))
            nulls.append(_null(steps))
            torchs.append(_torch(steps))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_step = f"steps of {RANGES_PER_STEP} ranges, step hook and flush included"
    for base, name, goal in ((torchs, "record_function under a live torch profiler, per step",
                              0.25),
                             (nulls, "nullcontext() for the step and each range", None)):
        ratios = [o / b for o, b in zip(ours, base)]
        report.add(f"capture on (mstx_light): one training step's ranges ({per_step})", name,
                   statistics.median(ratios), goal,
                   f"{statistics.median(ours) / 1e3:.1f} us vs "
                   f"{statistics.median(base) / 1e3:.1f} us per step; per-block ratios "
                   f"{min(ratios):.3f}..{max(ratios):.3f}, {blocks} blocks of {steps} steps")
