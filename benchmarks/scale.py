"""Scale: ``analyse --jobs``, the per-capture cache and ``timeline`` on 16 rank files.

Rank files are 16 copies of the level1 torch trace of ``workload`` (one per rank). ``--jobs 2``
vs ``--jobs 1``: ``analyse(root, jobs=N, cache=False)`` in this process, medians over repeats,
alternating (goal 0.75x: two processes on two cores; a busy machine shows less). Cache: the
second ``analyse`` of a fresh copy (every entry a hit) against the first (which reads every file
and writes the entries); goal 0.1x. Timeline: a light capture (step, four stages and four custom
ranges per step, written by the span recorder) copied to 16 ranks; its merged size per rank-step
scaled to 64 ranks x 1,000 steps, against the 200 MB a browser still opens (goal 0.5x), and the
time to build it for 16 ranks against the time to read those 16 range files (reported).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.report import Report
from benchmarks.workload import level1_trace

__all__ = ["run"]

RANKS = 16


def _seconds(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _ranks(source: Path, root: Path) -> Path:
    """``RANKS`` copies of ``source``, one per rank, under ``root/integrated``."""
    folder = root / "integrated"
    folder.mkdir(parents=True)
    for rank in range(RANKS):
        shutil.copy(source, folder / source.name.replace("rank0_", f"rank{rank}_"))
    return root


def _light_capture(root: Path, steps: int) -> Path:
    from mindspeed_prof import Profiler, mstx
    from mindspeed_prof.config.schema import STAGES

    cfg = {
        "integrated": {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "profile_step_start": 1,
            "profile_step_end": steps + 1,
            "profile_save_path": str(root),
        }
    }
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, steps + 1):
            with prof.step(step):
                for stage in STAGES[:4]:
                    with prof.stage(stage), mstx.range("loss"):
                        pass
    (out,) = (root / "integrated").glob("*.mstx.trace.json")
    return out


def run(report: Report) -> None:
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.timeline import write_timeline

    tmp = Path(tempfile.mkdtemp(prefix="mindspeed-prof-scale-"))
    reps = 1 if report.quick else 3
    try:
        trace = level1_trace(20 if report.quick else 300)
        root = _ranks(trace, tmp / "jobs")
        mb = RANKS * trace.stat().st_size / 1e6
        one, two = [], []
        for _ in range(reps):
            one.append(_seconds(lambda: analyse(root, jobs=1, cache=False)))
            two.append(_seconds(lambda: analyse(root, jobs=2, cache=False)))
        t1, t2 = statistics.median(one), statistics.median(two)
        report.add(
            "analyse --jobs 2: time",
            "--jobs 1 on the same 16 rank files",
            t2 / t1,
            0.75,
            f"{t2:.2f} s vs {t1:.2f} s; {RANKS} files, {mb:.0f} MB",
        )

        first, second = [], []
        for i in range(reps):
            fresh = _ranks(trace, tmp / f"cache{i}")
            first.append(_seconds(lambda: analyse(fresh, jobs=1)))
            second.append(_seconds(lambda: analyse(fresh, jobs=1)))
        f, s = statistics.median(first), statistics.median(second)
        report.add(
            "analyse, second run (cache hits): time",
            "first run (reads, writes entries)",
            s / f,
            0.1,
            f"{s * 1e3:.0f} ms vs {f * 1e3:.0f} ms; {RANKS} files, {mb:.0f} MB",
        )

        steps = 100 if report.quick else 1000
        light = _ranks(_light_capture(tmp / "light-src", steps), tmp / "light")
        traces = analyse(light, jobs=1, cache=False).traces
        out = tmp / "timeline.json"
        read_s = statistics.median(
            _seconds(lambda: analyse(light, jobs=1, cache=False)) for _ in range(reps)
        )
        build_s = statistics.median(
            _seconds(lambda: write_timeline(traces, out)) for _ in range(reps)
        )
        per = out.stat().st_size / (RANKS * steps)
        projected = per * 64 * 1000
        report.add(
            "timeline, light capture: size of 64 ranks x 1,000 steps",
            "200 MB",
            projected / 200e6,
            0.5,
            f"{per:.0f} B per rank-step ({RANKS} ranks x {steps} steps: "
            f"{out.stat().st_size / 1e6:.1f} MB) -> {projected / 1e6:.0f} MB",
        )
        report.add(
            "timeline, light capture: time to build for 16 ranks",
            "reading the 16 range files",
            build_s / read_s,
            None,
            f"{build_s:.2f} s vs {read_s:.2f} s; {RANKS} ranks x {steps} steps",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
