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
  Blocks of steps are interleaved (ours, nullcontext, torch, the order turned each block), each
  after a ``gc.collect()`` (untimed: the cyclic garbage torch's stop leaves, its parsed events,
  was collected inside whichever block came next and charged to it), and
  the figure is the median of the per-block ratios with its order-statistic 95% interval
  (``interval.median_ci``; the verdict uses its upper bound), their range in the detail. Blocks are
  timed with the process's
  CPU time (this machine is shared; see ``step_cost``), which includes the range file's
  writes (its writer thread's): a block ends by writing every range it recorded
  (``flush_ranges``), so the figure holds all of them whatever the flush interval (10 ms)
  and the block's length (before, what was left at the block's end was written untimed at
  the close, a share that varied with the machine's load). The per-step cost is the step hook
  plus the span recorder (``capture/spans.py``): at 10 ranges per step its write is a large
  share.
- Counts (``prof.count``/``mstx.count``, issue 33): with nothing recording, ``mstx.count`` and
  ``prof.count`` on a profiler whose capture window has not begun, each against a disabled
  ``mstx.range()`` (goal 1.0x: no dearer); recording (a capture on, inside a step and a stage),
  one number and a 128-value distribution against a recorded ``mstx.range()`` under the same
  capture (reported). Each figure is the median of per-block ratios, the two loops of a block
  timed back to back, alternating which goes first.
"""

from __future__ import annotations

import contextlib
import gc
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.interval import median_ci
from benchmarks.report import Report
from benchmarks.timing import per_call_ns

__all__ = ["run"]

RANGES_PER_STEP = 10


def _ours(root: Path, steps: int) -> float:
    from mindspeed_prof import Profiler, mstx

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_step_start": 1,
                "profile_step_end": steps + 3,  # [start, end): the stop at the close, untimed
                "profile_save_path": str(root),
            }
        },
        rank=0,
    )
    rng = mstx.range
    with prof.step(1):  # starts the capture, untimed
        pass
    t0 = time.process_time_ns()
    for step in range(2, steps + 2):
        with prof.step(step):
            for _ in range(RANGES_PER_STEP):
                with rng("layer"):
                    pass
    prof.flush_ranges()  # every range of the block written: the writer's share, whole
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
    report.add(
        "one range, capture off",
        "contextlib.nullcontext()",
        t_off / t_null,
        1.5,
        f"{t_off:.0f} ns vs {t_null:.0f} ns",
    )
    report.add(
        "one range, capture off",
        "record_function, no profiler",
        t_off / t_rf,
        None,
        f"{t_off:.0f} ns vs {t_rf:.0f} ns",
    )

    def loop_ids(k: int) -> None:
        start, end = mstx.range_start, mstx.range_end
        for _ in range(k):
            end(start("step"))

    t_ids = per_call_ns(loop_ids, n, reps)
    report.add(
        "one id-based range (range_start/range_end), capture off",
        "mstx.range() context manager, capture off",
        t_ids / t_off,
        1.0,
        f"{t_ids:.0f} ns vs {t_off:.0f} ns",
    )
    report.add(
        "one id-based range (range_start/range_end), capture off",
        "contextlib.nullcontext()",
        t_ids / t_null,
        1.5,
        f"{t_ids:.0f} ns vs {t_null:.0f} ns",
    )
    from mindspeed_prof.capture.buffer import RangeBuffer

    buffer = RangeBuffer()
    mstx.add_sink(buffer)  # recording: the range buffer, as under a capture or the flight recorder
    try:
        t_ids_on = per_call_ns(loop_ids, n, reps)
        buffer.take()
        t_on = per_call_ns(loop_off, n, reps)
    finally:
        mstx.set_sink(None)
    report.add(
        "one id-based range, recording (range buffer)",
        "mstx.range() context manager, recording",
        t_ids_on / t_on,
        None,
        f"{t_ids_on:.0f} ns vs {t_on:.0f} ns; any thread may end it",
    )

    _counts(report, n, reps)
    tmp = Path(tempfile.mkdtemp())
    steps, blocks = (50, 3) if report.quick else (500, 21)
    ours, nulls, torchs = [], [], []
    try:
        _ours(tmp / "warm", steps)  # first-use costs (lazy imports, the first file) untimed
        _torch(steps)
        for i in range(blocks):  # interleaved, the order turned each block
            sides = [
                lambda: ours.append(_ours(tmp / str(i), steps)),
                lambda: nulls.append(_null(steps)),
                lambda: torchs.append(_torch(steps)),
            ]
            for k in range(3):
                # untimed: the block before's garbage collected (torch's stop leaves its events'
                # reference cycles; collected inside the next block, they were charged to it)
                gc.collect()
                sides[(i + k) % 3]()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_step = f"steps of {RANGES_PER_STEP} ranges, step hook and flush included"
    for base, name, goal in (
        (torchs, "record_function under a live torch profiler, per step", 0.25),
        (nulls, "nullcontext() for the step and each range", None),
    ):
        ratios = [o / b for o, b in zip(ours, base)]
        mid, lo, hi = median_ci(ratios)
        report.add(
            f"capture on (mstx_light): one training step's ranges ({per_step})",
            name,
            mid,
            goal,
            ci=(lo, hi),
            detail=f"{statistics.median(ours) / 1e3:.1f} us vs "
            f"{statistics.median(base) / 1e3:.1f} us per step; per-block ratios "
            f"{min(ratios):.3f}..{max(ratios):.3f}, {blocks} interleaved blocks of {steps} "
            "steps",
        )


def _blocks(
    subject: Callable[[int], None], base: Callable[[int], None], n: int, blocks: int
) -> tuple[float, float, float, float, float]:
    """Median per-block ratio subject/base, its range, and each side's median ns per call."""
    ratios, subs, bases = [], [], []
    for i in range(blocks):
        if i % 2:
            s, b = per_call_ns(subject, n, 1), per_call_ns(base, n, 1)
        else:
            b, s = per_call_ns(base, n, 1), per_call_ns(subject, n, 1)
        ratios.append(s / b)
        subs.append(s)
        bases.append(b)
    return (
        statistics.median(ratios),
        min(ratios),
        max(ratios),
        statistics.median(subs),
        statistics.median(bases),
    )


def _counts(report: Report, n: int, reps: int) -> None:
    from mindspeed_prof import Profiler, mstx

    blocks = 4 if report.quick else 21
    rng, count = mstx.range, mstx.count

    def loop_range(k: int) -> None:
        for _ in range(k):
            with rng("decode"):
                pass

    def loop_mstx_count(k: int) -> None:
        for _ in range(k):
            count("tokens_generated", 128)

    mstx.set_sink(None)
    assert not mstx._counters
    figure = "one count (mstx.count), nothing recording"
    ratio, lo, hi, t_c, t_r = _blocks(loop_mstx_count, loop_range, n, blocks)
    report.add(
        figure,
        "mstx.range() context manager, nothing recording",
        ratio,
        1.0,
        f"{t_c:.0f} ns vs {t_r:.0f} ns; per-block ratios {lo:.3f}..{hi:.3f}, "
        f"{blocks} blocks of {n:,}",
    )
    tmp = Path(tempfile.mkdtemp())
    try:
        prof = Profiler.from_config(
            {
                "integrated": {
                    "profile": True,
                    "mstx": True,
                    "profile_level": "level_none",
                    "profile_with_cpu": False,
                    "profile_step_start": 3,
                    "profile_step_end": 4,
                    "profile_save_path": str(tmp),
                }
            },
            rank=0,
        )

        def loop_prof_count(k: int) -> None:
            c = prof.count
            for _ in range(k):
                c("tokens_generated", 128)

        with prof.step(1), prof.stage("actor_generate"):  # before the window: nothing records
            ratio, lo, hi, t_c, t_r = _blocks(loop_prof_count, loop_range, n, blocks)
        report.add(
            "one count (prof.count), its profiler recording nothing (before the window)",
            "mstx.range() context manager, nothing recording",
            ratio,
            1.0,
            f"{t_c:.0f} ns vs {t_r:.0f} ns; per-block ratios {lo:.3f}..{hi:.3f}, "
            f"{blocks} blocks of {n:,}",
        )
        with prof.step(2):
            pass
        values = [float(i) for i in range(128)]

        def loop_dist(k: int) -> None:
            c = prof.count
            for _ in range(k):
                c("response_length", values)

        m = max(n // 10, 500)
        with prof.step(3), prof.stage("actor_generate"):  # the capture records
            buffer = prof._tap.buffer
            assert buffer is not None and mstx._counters
            for name, loop, what in (
                ("one count (prof.count), recording", loop_prof_count, "a number"),
                ("one count of a 128-value distribution, recording", loop_dist, "128 floats"),
            ):
                ratio, lo, hi, t_c, t_r = _blocks(loop, loop_range, m, blocks)
                buffer.take()  # nothing of the timed loops is written
                report.add(
                    name,
                    "mstx.range() recorded by the same capture",
                    ratio,
                    None,
                    f"{t_c:.0f} ns vs {t_r:.0f} ns ({what}, checked, with its step "
                    f"and stage); per-block ratios {lo:.3f}..{hi:.3f}, {blocks} "
                    f"blocks of {m:,}",
                )
        prof.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
