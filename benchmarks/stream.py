"""Streaming analysis: peak memory and time per MB of ``analyse`` as traces grow, per event mix.

Four mixes, each written an event at a time at 40 MB and 400 MB (``--quick``: 2 MB and 8 MB;
with ``MINDSPEED_PROF_BENCH_BIG=1`` also 1.5 GiB, which takes some minutes and as much free
disk):

- **kernel-heavy**: ``mindspeed_prof.testing.kineto.cuda_trace`` (torch's Kineto format: host
  ops, launches, kernels on three streams, about 160 bytes an event);
- **host-only**: ``host_events`` of the same module (``cpu_op`` events only, nested, on two
  threads, as a CPU training step writes them; about 140 bytes an event);
- **torch_npu text**: torch_npu's ``trace_view.json`` (read in two streamed passes: process
  names, then events): the real capture ``tests/fixtures/torch_npu/text/rank0_ascend_pt`` with
  its events repeated to the size and the process names at the end, where a single pass could
  not place the host's events;
- **range file**: a range file as the span recorder writes it (steps, the six stages and four
  custom ranges per step, one event a line).

Each is analysed by the command users run, ``mindspeed-prof analyse --json`` (cache entry
removed first), as a whole process: its peak RSS as a small launcher sees it, its wall and CPU
time. Figures per mix: peak RSS of the largest against the smallest (goal 1.3x: memory does not
grow with the file), and time: the process's CPU seconds (user and system: wall time on this
shared 2-core machine varies with the others' load), less those of the same command on a 0.1 MB
trace (its start), over those of reading the same file's events with a typed msgspec decode
alone (``decode``'s records, in this process, once before and once after ``analyse``), at the
largest against the smallest (goal 1.3x: flat). CPU time per MB moves with the machine's load
too (a busy sibling core slows every instruction: profiled at load 12, a 400 MB run spent 1.6x
the CPU per MB of a 40 MB run in msgspec's decode alone); the decode, linear by construction,
measured around the same run takes that out. Time per MB is in the detail.

The reader's own cost on the 100k-event trace of ``analysis_depth``: reading it a slice at a
time (what ``analyse`` does) against decoding the file whole and folding the same events in (what
it did before streaming), in this process, medians of interleaved repeats (goal 1.2x).
"""

from __future__ import annotations

import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.report import Report

__all__ = ["run"]

MB = 1e6
_EVENT_BYTES = 164  # cuda_trace's bytes per event, about
_PER_STEP = 6 * 280 * 3  # events per step at kernels_per_stage=280


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("mindspeed-prof")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mindspeed_prof.cli"]


def _trace(folder: Path, size: float) -> Path:
    from mindspeed_prof.testing.kineto import write_cuda_trace

    steps = max(1, round(size / (_EVENT_BYTES * _PER_STEP)))
    return write_cuda_trace(
        folder / f"rank0_{size / MB:.0f}MB.pt.trace.json",
        steps=steps,
        kernels_per_stage=280 if size > 1e6 else 10,
    )


# The child's wall and CPU seconds and peak RSS, from a small launcher process (so the peak
# is the child's own; see ``timing.timed_run``). CPU time, not wall time, makes time per MB:
# this machine's two cores are shared, and a long run's share of them varies.
_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([time.perf_counter() - t0, use.ru_utime + use.ru_stime, use.ru_maxrss]))
"""


def _analyse(trace: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds and peak RSS (MB) of ``analyse --json`` on ``trace``, uncached."""
    from mindspeed_prof.analysis.cache import cache_path

    cache_path(trace).unlink(missing_ok=True)
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *_cli(), "analyse", "--json", str(trace)],
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    )
    wall, cpu, rss_kb = json.loads(out.stdout)
    return wall, cpu, rss_kb / 1024


def _read_cost(folder: Path, report: Report) -> None:
    from mindspeed_prof.analysis.readers.events import decode_events
    from mindspeed_prof.analysis.readers.fold import collect
    from mindspeed_prof.analysis.readers.kineto.chrome import read_json
    from mindspeed_prof.analysis.readers.model import TraceData
    from mindspeed_prof.testing.kineto import write_cuda_trace

    trace = write_cuda_trace(
        folder / "hta" / "rank0.json", steps=4 if report.quick else 20, kernels_per_stage=280
    )

    def streamed() -> float:
        t0 = time.perf_counter()
        read_json(trace, "", trace.stat().st_size)
        return time.perf_counter() - t0

    def whole() -> float:
        t0 = time.perf_counter()
        data = TraceData(trace, "torch", 0, "", trace.stat().st_size)
        collect(data, decode_events(trace.read_bytes()), None)
        return time.perf_counter() - t0

    a: list[float] = []
    b: list[float] = []
    for i in range(3 if report.quick else 9):
        for fn, out in ((whole, a), (streamed, b)) if i % 2 else ((streamed, b), (whole, a)):
            out.append(fn())
    t_a, t_b = statistics.median(a), statistics.median(b)
    report.add(
        "reading the 100k-event trace a slice at a time: time",
        "decoding it whole, the same fold",
        t_b / t_a,
        1.2,
        f"{t_b:.3f} s vs {t_a:.3f} s; {trace.stat().st_size / MB:.0f} MB",
    )


def _npu_folder(folder: Path, repeat: int) -> Path:
    """The fixture capture with its trace_view.json events ``repeat`` times, names last."""
    fixture = Path(__file__).resolve().parents[1] / "tests/fixtures/torch_npu/text/rank0_ascend_pt"
    dest = folder / f"x{repeat}_ascend_pt"
    shutil.copytree(fixture, dest)
    for packed in dest.rglob("*.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    view = dest / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = json.loads(view.read_bytes())
    names = [e for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M" and "ts" in e]
    span = max(float(e["ts"]) for e in timed) - min(float(e["ts"]) for e in timed) + 1e4
    with open(view, "w") as f:
        f.write("[")
        for k in range(repeat):
            for e in timed:
                f.write(json.dumps({**e, "ts": str(float(e["ts"]) + k * span)}) + ",")
        f.write(",".join(json.dumps(e) for e in names) + "]")
    return dest


_NPU_REPEAT_BYTES = 2.18e6  # the fixture's trace_view events, once


def _npu_trace(folder: Path, size: float) -> Path:
    return _npu_folder(folder, max(1, round(size / _NPU_REPEAT_BYTES)))


def _host_trace(folder: Path, size: float) -> Path:
    from mindspeed_prof.testing.kineto import write_host_trace

    # host_events: about 140 bytes an event, 6 stages x 200 ops x 1.8 events a step
    steps = max(1, round(size / (140 * 6 * 200 * 1.8)))
    return write_host_trace(
        folder / f"rank0_host_{size / MB:.0f}MB.pt.trace.json", steps=steps, ops_per_stage=200
    )


def _range_file(folder: Path, size: float) -> Path:
    """A range file as the span recorder writes it: a step, the six stages and four custom
    ranges per step, one event a line, closed (``testing.ranges``)."""
    from mindspeed_prof.testing.ranges import write_range_file

    return write_range_file(folder / f"rank0_bench_1_abcdef_step1_{size / MB:.0f}MB.json", size)


#: Each mix: its name and how a trace of about a size is made in a folder.
MIXES: list[tuple[str, Callable[[Path, float], Path]]] = [
    ("kernel-heavy Kineto", _trace),
    ("host-only Kineto (cpu_op)", _host_trace),
    ("torch_npu text export", _npu_trace),
    ("range file", _range_file),
]


def _size(trace: Path) -> float:
    view = trace / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    return (view if trace.is_dir() else trace).stat().st_size / MB


def _json_of(trace: Path) -> Path:
    return trace / "ASCEND_PROFILER_OUTPUT" / "trace_view.json" if trace.is_dir() else trace


def _decode(trace: Path) -> float:
    """CPU seconds of reading ``trace``'s events as ``analyse`` does (4 MiB slices, cut after
    the last whole event) and decoding them into typed records of the fields it reads (the
    ``decode`` group's), nothing kept: a baseline linear in the file by construction."""
    import resource

    from benchmarks.decode import _Event
    from mindspeed_prof.analysis.readers.events import TraceTop
    from mindspeed_prof.analysis.readers.stream import TraceStream

    use = resource.getrusage(resource.RUSAGE_SELF)
    t0 = use.ru_utime + use.ru_stime
    for _ in TraceStream(_json_of(trace), _Event, TraceTop).batches():
        pass
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime - t0


def _mix(
    folder: Path,
    report: Report,
    name: str,
    make: Callable[[Path, float], Path],
    sizes: list[float],
    t0: float,
) -> None:
    rows = []
    for size in sizes:
        trace = make(folder, size)
        mb = _size(trace)
        dec = _decode(trace)  # around analyse: the same load on both sides
        wall, cpu, rss = _analyse(trace)
        dec = (dec + _decode(trace)) / 2
        busy = max(cpu - t0, 1e-3)  # the process start taken off: it is no part of the file's
        rows.append((mb, wall, rss, busy / mb, busy / dec))
        shutil.rmtree(trace) if trace.is_dir() else trace.unlink()
    (mb0, _, r0, _, x0), (mb1, _, r1, _, x1) = rows[0], rows[-1]
    report.add(
        f"analyse, peak RSS, {name}: {mb1:.0f} MB",
        f"{mb0:.0f} MB",
        r1 / r0,
        1.3,
        ", ".join(f"{mb:.0f} MB: {rss:.0f} MB RSS" for mb, _, rss, _, _ in rows),
    )
    report.add(
        f"analyse, CPU time over a typed decode of the same file, {name}: {mb1:.0f} MB",
        f"the same at {mb0:.0f} MB",
        x1 / x0,
        1.3,
        "; ".join(
            f"{mb:.0f} MB: {x:.2f}x the decode, {1e3 * per:.1f} ms/MB ({wall:.0f} s wall)"
            for mb, wall, _, per, x in rows
        )
        + f" (analyse's CPU less the same command's on a 0.1 MB trace, {t0:.2f} s)",
    )


def run(report: Report) -> None:
    sizes = [2 * MB, 8 * MB] if report.quick else [40 * MB, 400 * MB]
    if os.environ.get("MINDSPEED_PROF_BENCH_BIG") == "1":
        sizes.append(1.5 * 2**30)
    folder = Path(tempfile.mkdtemp(prefix="mindspeed-prof-stream-"))
    try:
        _read_cost(folder, report)
        tiny = _trace(folder, 0.1 * MB)
        t0 = statistics.median(_analyse(tiny)[1] for _ in range(3))
        for name, make in MIXES:
            _mix(folder, report, name, make, sizes, t0)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
