"""Full analysis (ranges, device breakdown, memory, every table) on a CUDA-format trace.

The trace is ``mindspeed_prof.testing.kineto.cuda_trace``: about 100k events (20 steps of the six
stages; kernels on three streams, NCCL overlapping compute, copies, launches with correlation
ids). Three figures, each from whole processes (medians over repeats, each a first analysis:
the cache entry deleted before; peak RSS as the launcher sees it): the full
``analysis_json(analyse(path))`` against decoding the same file with msgspec alone (what any
analysis pays: reported); against ``analyse`` with the stage tables only (the same read, fewer
tables: what the new tables cost; reported); and against HTA's ``get_temporal_breakdown`` on the
same trace (the same device question; goals 0.2x time, 0.5x memory). The device figures agree
with HTA's exactly on this trace (``tests/analysis/readers/device/test_breakdown.py`` checks 1%).
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.report import Report
from benchmarks.timing import first_analysis, timed_run

__all__ = ["run"]

OURS = textwrap.dedent("""
    import sys
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.ranges import stage_rows
    from mindspeed_prof.analysis.report import compute
    from mindspeed_prof.analysis.report.per_step import per_step
    from mindspeed_prof.analysis.report.report import analysis_json
    from mindspeed_prof.analysis.stragglers import find_stragglers
    a = analyse(sys.argv[1])
    if sys.argv[2] == "full":
        analysis_json(a)
    else:  # the stage tables only, from the functions ``tables`` calls
        ranges, warmup = compute.merged_ranges(a.traces), compute.warmup_of(a.traces)
        stage_rows(ranges), per_step(ranges, warmup)
        find_stragglers(compute.counted(ranges, warmup, False), "stage", 0.2, 1.0)
""")

DECODE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from mindspeed_prof.analysis.readers.events import decode_events
    decode_events(Path(sys.argv[1]).read_bytes())
""")

HTA = textwrap.dedent("""
    import logging, sys
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    a = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
    a.get_temporal_breakdown(visualize=False)
""")


def _median(runs: list[dict[str, object]], key: str) -> float:
    return statistics.median(float(r[key]) for r in runs)  # type: ignore[arg-type]


def run(report: Report) -> None:
    from mindspeed_prof.testing.kineto import write_cuda_trace

    tmp = Path(tempfile.mkdtemp())
    reps = 1 if report.quick else 3
    try:
        trace = write_cuda_trace(
            tmp / "hta" / "rank0.json", steps=4 if report.quick else 20, kernels_per_stage=280
        )
        py = sys.executable
        full = [first_analysis([py, "-c", OURS, str(trace), "full"], trace) for _ in range(reps)]
        stage = [first_analysis([py, "-c", OURS, str(trace), "stage"], trace) for _ in range(reps)]
        decode = [timed_run([py, "-c", DECODE, str(trace)]) for _ in range(reps)]
        size = f"{trace.stat().st_size / 1e6:.0f} MB CUDA-format trace"
        t_full = _median(full, "wall_s")
        report.add(
            "full analysis: time",
            "msgspec decode of the same trace",
            t_full / _median(decode, "wall_s"),
            None,
            f"{t_full:.2f} s vs {_median(decode, 'wall_s'):.2f} s; {size}",
        )
        report.add(
            "full analysis: time",
            "stage tables only (same read)",
            t_full / _median(stage, "wall_s"),
            None,
            f"{t_full:.2f} s vs {_median(stage, 'wall_s'):.2f} s",
        )
        try:
            hta = [timed_run([py, "-c", HTA, str(trace.parent)]) for _ in range(reps)]
        except Exception as err:  # not installed, or failing on this trace
            why = str(getattr(err, "stderr", "") or err).strip().splitlines()[-1][:100]
            report.add(
                "full analysis vs HTA temporal breakdown",
                "HTA",
                float("nan"),
                0.2,
                f"HTA not runnable here (pip install holistictraceanalysis): {why}",
            )
            return
        t_hta = _median(hta, "wall_s")
        report.add(
            "full analysis: time",
            "HTA temporal breakdown, whole process",
            t_full / t_hta,
            0.2,
            f"{t_full:.2f} s vs {t_hta:.2f} s",
        )
        rss = max(int(r["rss_kb"]) for r in full)  # type: ignore[call-overload]
        rss_hta = max(int(r["rss_kb"]) for r in hta)  # type: ignore[call-overload]
        report.add(
            "full analysis: peak RSS",
            "HTA temporal breakdown, whole process",
            rss / rss_hta,
            0.5,
            f"{rss / 1024:.0f} MB vs {rss_hta / 1024:.0f} MB",
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
