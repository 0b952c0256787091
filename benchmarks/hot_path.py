"""Hot path: a recorded range, the off path and the per-step hooks, against nullcontext().

Run alone with ``python -m benchmarks.hot_path [--quick]``. Each figure is the median of
per-round ratios, the two sides measured back to back in the same round (this machine's
noise moves both alike).
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["run"]

RANGES_PER_STEP = 10  # a trainer's cadence: ranges between two step-end flushes


def _time(fn: Callable[[int], None], n: int) -> float:
    gc.disable()  # as timeit does
    try:
        t0 = time.perf_counter_ns()
        fn(n)
        return (time.perf_counter_ns() - t0) / n
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


def _row(figure: str, value: tuple[float, float, float], goal: float | None) -> dict[str, Any]:
    ratio, ours, base = value
    return {"figure": figure, "baseline": "contextlib.nullcontext()", "ratio": ratio,
            "goal": f"<= {goal}x" if goal else "report",
            "met": None if goal is None else ratio <= goal,
            "detail": f"{ours:.0f} ns vs {base:.0f} ns"}


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure the hot-path figures, print one line each, and return them as rows."""
    from mindspeed_prof import mstx
    from mindspeed_prof.capture.profiler import Profiler
    from mindspeed_prof.capture.spans import SpanRecorder

    n, rounds = (20_000, 7) if quick else (100_000, 15)
    tmp = Path(tempfile.mkdtemp())
    rows = []

    def ranges(k: int) -> None:  # k ranges, a flush check every RANGES_PER_STEP
        rng = mstx.range
        for _ in range(k // RANGES_PER_STEP):
            for _ in range(RANGES_PER_STEP):
                with rng("forward"):
                    pass
            step_end()

    step_end: Callable[[], None] = lambda: None  # noqa: E731 - set per figure below
    mstx.set_sink(None)
    rows.append(_row("mstx.range, nothing recording", _ratio(ranges, n, rounds), 1.5))

    rec = SpanRecorder(tmp / "hot.mstx.trace.json", {"rank": 0})
    mstx.add_sink(rec)
    step_end = rec.flush_due
    rows.append(_row(f"mstx.range recorded to a range file (flush check every "
                     f"{RANGES_PER_STEP} ranges)", _ratio(ranges, n, rounds), 2.5))
    mstx.remove_sink(rec)
    rec.close()

    prof = Profiler.from_config({"integrated": {"flight_recorder_steps": 5,
                                                "profile_save_path": str(tmp)}}, rank=0)
    step_end = prof._drain
    rows.append(_row(f"mstx.range recorded by the flight recorder (drained every "
                     f"{RANGES_PER_STEP} ranges)", _ratio(ranges, n, rounds), 2.5))
    prof.close()

    off = Profiler.from_config({"integrated": {"profile_save_path": str(tmp)}}, rank=0)

    def hooks(k: int) -> None:
        step, stage = off.step, off.stage
        for i in range(k):
            with step(i):
                pass

    rows.append(_row("prof.step(n) with profiling off (on-demand check included)",
                     _ratio(hooks, n, rounds), 1.5))
    rows.extend(_detector_rows(n // 10, rounds))
    for r in rows:
        print(f"{r['ratio']:6.2f}x  {r['goal']:>8}  {'ok' if r['met'] in (True, None) else 'MISSED'}"
              f"  {r['figure']} ({r['detail']})")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _detector_rows(n: int, rounds: int) -> list[dict[str, Any]]:
    """Per-step cost of the anomaly detector and of the on-demand check (when present)."""
    rows = []
    try:
        from mindspeed_prof.capture.anomaly import AnomalyDetector
    except ImportError:
        return rows
    det = AnomalyDetector(factor=2.0, window=20)
    stages = ("actor_generate", "actor_update", "critic_update")

    def detect(k: int) -> None:
        observe = det.observe
        for i in range(k):
            for s in stages:
                observe(s, 1_000_000 + i % 7)
            observe(None, 3_000_000 + i % 7)

    rows.append(_row("anomaly detector, one step of 3 stages (per step)", _ratio(detect, n, rounds),
                     None))
    return rows


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
