"""Hot path: a recorded range, the off path and the per-step hooks, against nullcontext().

- ``mstx.range()`` with nothing recording (goal 1.5x), recorded by the flight recorder with
  the buffer drained every 10 ranges as a trainer's step end does (goal 2.5x), and recorded into
  a range file with the time-gated flush check every 10 ranges (reported: the file's JSON is
  formatted per range, which a tight loop of tiny steps pays in full).
- A whole step recorded by the flight recorder: ``with prof.step(n):`` around 10
  ``mstx.range()``, the step hooks included, against the same loop with ``nullcontext()`` for
  the step and each range (goal 2.5x). Stable on a loaded machine: blocks of steps interleaved
  with blocks of the baseline (each subject block between two baseline blocks, its ratio to
  their mean), each block timed on the thread's CPU clock (a preempted block is not charged
  its wait), the median of the block ratios and its distribution-free 95% interval
  (``interval.median_ci``); the verdict uses the interval's upper bound.
- ``prof.step(n)`` with profiling off, its on-demand check (a clock read) included (goal 1.5x).
- The anomaly detector's cost per step (3 stages and the step), reported.
- The on-demand check through Ray (not with ``--quick``: it starts a Ray cluster): the same
  ``prof.step(n)`` with a link to a job's capture board (the 1 s gate: a clock read per step),
  and one check that is due at every step (asking the board without waiting, taking the
  previous answer), reported.
Each figure is the median of per-round ratios, both sides timed back to back in each round.
Alone: ``python -m benchmarks --only hot_path``.
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
from typing import Any

from benchmarks.interval import median_ci
from benchmarks.report import Report

__all__ = ["run"]

RANGES_PER_STEP = 10  # a trainer's cadence: ranges between two step-end flushes
STEPS_PER_BLOCK = 300  # a block of steps: about 1-5 ms, shorter than most load swings


def _time(fn: Callable[[int], None], n: int) -> float:
    gc.disable()  # as timeit does
    try:
        t0 = time.perf_counter_ns()
        fn(n)
        return (time.perf_counter_ns() - t0) / n
    finally:
        gc.enable()


def _cpu_time(fn: Callable[[int], None], n: int) -> float:
    """ns per call of ``fn(n)``'s loop on this thread's CPU clock: a block that another process
    preempts is not charged for the time it waited (wall time is, by whole time slices)."""
    gc.disable()
    try:
        t0 = time.thread_time_ns()
        fn(n)
        return (time.thread_time_ns() - t0) / n
    finally:
        gc.enable()


def _null(n: int) -> None:
    null = contextlib.nullcontext
    for _ in range(n):
        with null():
            pass


def _ratio(fn: Callable[[int], None], n: int, rounds: int) -> tuple[float, float, float]:
    """Median per-round ratio of ``fn`` to nullcontext, and the median ns of each side."""
    ratios, ours, base = [], [], []
    for _ in range(rounds):
        b = _time(_null, n)
        o = _time(fn, n)
        ratios.append(o / b)
        ours.append(o)
        base.append(b)
    return statistics.median(ratios), statistics.median(ours), statistics.median(base)


def _step_blocks(prof: Any, blocks: int) -> tuple[float, float, float, float, float]:
    """Median ratio of a recorded step to the same loop of nullcontexts, its 95% interval, and
    the median ns per step of each side: each block of recorded steps is timed between two
    blocks of the baseline, and its ratio is to their mean (a load change within the three
    moves both sides)."""
    from mindspeed_prof import mstx

    null = contextlib.nullcontext

    def baseline(k: int) -> None:
        for _ in range(k):
            with null():
                for _ in range(RANGES_PER_STEP):
                    with null():
                        pass

    def steps(k: int) -> None:
        step, rng = prof.step, mstx.range
        for i in range(k):
            with step(i):
                for _ in range(RANGES_PER_STEP):
                    with rng("forward"):
                        pass

    steps(STEPS_PER_BLOCK)  # warm: the ring full, the names cached
    ratios, ours, base = [], [], []
    for _ in range(blocks):
        b1 = _cpu_time(baseline, STEPS_PER_BLOCK)
        o = _cpu_time(steps, STEPS_PER_BLOCK)
        b2 = _cpu_time(baseline, STEPS_PER_BLOCK)
        ratios.append(2 * o / (b1 + b2))
        ours.append(o)
        base.append((b1 + b2) / 2)
    ratio, lo, hi = median_ci(ratios)
    return ratio, lo, hi, statistics.median(ours), statistics.median(base)


def run(report: Report) -> None:
    """Measure the hot-path figures into ``report``."""
    from mindspeed_prof import mstx
    from mindspeed_prof.capture.anomaly import AnomalyDetector
    from mindspeed_prof.capture.profiler import Profiler
    from mindspeed_prof.capture.spans import SpanRecorder
    from mindspeed_prof.formats.header import CaptureHeader

    n, rounds = (20_000, 7) if report.quick else (100_000, 15)
    tmp = Path(tempfile.mkdtemp())

    def add(figure: str, value: tuple[float, float, float], goal: float | None) -> None:
        ratio, ours, base = value
        report.add(
            figure, "contextlib.nullcontext()", ratio, goal, f"{ours:.0f} ns vs {base:.0f} ns"
        )

    step_end: Callable[[], None] = lambda: None  # noqa: E731 - set per figure below

    def ranges(k: int) -> None:  # k ranges, a step end every RANGES_PER_STEP
        rng = mstx.range
        for _ in range(k // RANGES_PER_STEP):
            for _ in range(RANGES_PER_STEP):
                with rng("forward"):
                    pass
            step_end()

    mstx.set_sink(None)
    add("mstx.range, nothing recording", _ratio(ranges, n, rounds), 1.5)

    prof = Profiler.from_config({"flight_recorder_steps": 5, "profile_save_path": str(tmp)}, rank=0)
    tap = prof._tap
    step_end = lambda: tap.drain(0)  # noqa: E731 - what a step end does with the buffer
    add(
        f"mstx.range recorded by the flight recorder (drained every {RANGES_PER_STEP} ranges)",
        _ratio(ranges, n, rounds),
        2.5,
    )
    blocks = 21 if report.quick else 101
    ratio, lo, hi, ours, base = _step_blocks(prof, blocks)
    report.add(
        f"a step of {RANGES_PER_STEP} ranges recorded by the flight recorder "
        "(`with prof.step(n)`, step hooks included)",
        "the same loop of nullcontext()",
        ratio,
        2.5,
        f"{ours / 1000:.2f} us vs {base / 1000:.2f} us per step (medians); {blocks} "
        f"blocks of {STEPS_PER_BLOCK} steps, each between two baseline blocks",
        ci=(lo, hi),
    )
    prof.close()

    rec = SpanRecorder(tmp / "hot.mstx.trace.json", CaptureHeader(rank=0))
    mstx.add_sink(rec)
    step_end = rec.flush_due
    add(
        f"mstx.range recorded to a range file (flush check every {RANGES_PER_STEP} ranges)",
        _ratio(ranges, n, rounds),
        None,
    )
    mstx.remove_sink(rec)
    rec.close()

    off = Profiler.from_config({"integrated": {"profile_save_path": str(tmp)}}, rank=0)

    def hooks(k: int) -> None:
        step = off.step
        for i in range(k):
            with step(i):
                pass

    add("prof.step(n), profiling off, on-demand check included", _ratio(hooks, n, rounds), 1.5)
    off.close()

    det = AnomalyDetector(factor=2.0, window=20)
    stages = ("actor_generate", "actor_update", "critic_update")

    def detect(k: int) -> None:
        observe = det.observe
        for i in range(k):
            for s in stages:
                observe(s, 1_000_000 + i % 7)
            observe(None, 3_000_000 + i % 7)

    add("anomaly detector, one step of 3 stages (per step)", _ratio(detect, n // 10, rounds), None)
    if not report.quick:
        _ray_check(tmp, add, n, rounds)
    shutil.rmtree(tmp, ignore_errors=True)


def _ray_check(tmp: Path, add: Callable[..., None], n: int, rounds: int) -> None:
    """``prof.step(n)`` whose on-demand check also asks a Ray job's capture board."""
    import ray

    from mindspeed_prof.capture.profiler import Profiler
    from mindspeed_prof.ray import open_board
    from mindspeed_prof.ray.board import Board, board_name

    ray.init(num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        board = open_board()
        ray.get(board.logged.remote())  # started
        off = Profiler.from_config({"integrated": {"profile_save_path": str(tmp)}}, rank=0)
        control = off._ondemand
        assert control is not None
        control.sources.append(Board(board_name(ray.get_runtime_context().get_job_id())))

        def hooks(k: int) -> None:
            step = off.step
            for i in range(k):
                with step(i):
                    pass

        add(
            "prof.step(n), profiling off, on-demand check through Ray included",
            _ratio(hooks, n, rounds),
            1.5,
        )
        control.interval_ns = control.due_ns = 0
        add(
            "prof.step(n) with the check (folder and Ray board) due at every step",
            _ratio(hooks, n // 100, rounds),
            None,
        )
        off.close()
    finally:
        ray.shutdown()
