"""``mindspeed-prof analyse`` against HTA (Holistic Trace Analysis) on the same trace.

Ours is the command users run, ``mindspeed-prof analyse --json DIR``, timed as a whole
process (interpreter start, imports, reading, every table, JSON out), each repeat a first
analysis (the per-capture cache entries deleted before it). HTA's figure is a
process that imports HTA, loads the trace with ``TraceAnalysis`` and sums the user
annotations (a smaller job than ours: one table); timed twice: the whole process (import
included) and from after its import (excluded). Goal 0.2x on both. Peak RSS of each process
is its ``ru_maxrss`` as seen by a small launcher process (goal 0.5x). HTA is called with
``include_last_profiler_step=True``; otherwise it drops the last ``ProfilerStep``. The trace
is the level1 capture of ``db_size`` (about 65k events); medians over repeats.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from benchmarks.report import Report
from benchmarks.timing import first_analysis, timed_run
from benchmarks.workload import level1_trace

__all__ = ["run"]

HTA = textwrap.dedent("""
    import json, logging, sys, time
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis
    t0 = time.perf_counter()
    a = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
    df = a.t.get_trace(0)
    ids = a.t.symbol_table.get_sym_id_map()
    table = a.t.symbol_table.get_sym_table()
    out = df[df["cat"] == ids["user_annotation"]].groupby("name")["dur"].sum()
    names = {table[i]: v for i, v in out.items()}
    print(json.dumps({"s": time.perf_counter() - t0, "n": len(names)}))
""")


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("mindspeed-prof")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mindspeed_prof.cli"]


def run(report: Report) -> None:
    trace = level1_trace(20 if report.quick else 300)
    tmp = Path(tempfile.mkdtemp())
    reps = 1 if report.quick else 3
    try:
        ours_dir = tmp / "run" / "integrated"
        ours_dir.mkdir(parents=True)
        shutil.copy(trace, ours_dir / trace.name)
        hta_dir = tmp / "hta"
        hta_dir.mkdir()
        shutil.copy(trace, hta_dir / "rank0.json")
        ours = [
            first_analysis([*_cli(), "analyse", "--json", str(tmp / "run")], tmp / "run")
            for _ in range(reps)
        ]
        stages = {r["stage"] for r in json.loads(str(ours[0]["stdout"]))["stage_rank"]}
        idle = timed_run([sys.executable, "-c", "pass"])
        try:
            hta = [timed_run([sys.executable, "-c", HTA, str(hta_dir)]) for _ in range(reps)]
        except Exception as err:  # not installed, or failing on this trace
            why = str(getattr(err, "stderr", "") or err).strip().splitlines()[-1][:100]
            for fig in ("time, HTA import included", "time, HTA import excluded", "peak RSS"):
                report.add(
                    f"analyse vs HTA: {fig}",
                    "HTA",
                    float("nan"),
                    0.2,
                    f"HTA not runnable here (pip install HolisticTraceAnalysis): {why}",
                )
            return
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    t_ours = statistics.median(float(o["wall_s"]) for o in ours)  # type: ignore[arg-type]
    t_hta = statistics.median(float(h["wall_s"]) for h in hta)  # type: ignore[arg-type]
    t_hta_in = statistics.median(json.loads(str(h["stdout"]))["s"] for h in hta)
    rss_ours = max(int(o["rss_kb"]) for o in ours)  # type: ignore[call-overload]
    rss_hta = max(int(h["rss_kb"]) for h in hta)  # type: ignore[call-overload]
    what = (
        f"{trace.stat().st_size / 1e6:.0f} MB trace; ours: every table of {len(stages)} "
        f"stages, HTA: the user-annotation sums"
    )
    report.add(
        "`mindspeed-prof analyse --json`, whole process: time",
        "HTA, whole process (import included)",
        t_ours / t_hta,
        0.2,
        f"{t_ours:.2f} s vs {t_hta:.2f} s; {what}",
    )
    report.add(
        "`mindspeed-prof analyse --json`, whole process: time",
        "HTA after its import (import excluded)",
        t_ours / t_hta_in,
        0.2,
        f"{t_ours:.2f} s vs {t_hta_in:.2f} s",
    )
    report.add(
        "`mindspeed-prof analyse --json`: peak RSS",
        "HTA, whole process",
        rss_ours / rss_hta,
        0.5,
        f"{rss_ours / 1024:.0f} MB vs {rss_hta / 1024:.0f} MB "
        f"(bare interpreter {int(idle['rss_kb']) / 1024:.0f} MB)",  # type: ignore[call-overload]
    )
