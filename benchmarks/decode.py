"""Analysis near the decode limit: ``analyse --json`` against a typed decode of what it reads.

One generated CUDA-format Kineto trace (``mindspeed_prof.testing.kineto``, as ``stream`` makes
them: host ops, launches with correlation ids, kernels on three streams, about 164 bytes an
event) at two sizes, 100 MB and 400 MB (``--quick``: 4 MB and 16 MB). On each, interleaved,
the median of the repeats:

- **decode alone**: the file read once into one buffer and the ``traceEvents`` array decoded
  4 MiB at a time, each slice from a view of the buffer with its ends made ``[`` and ``]``
  in place (no copy, as ``readers.stream`` reads since it stopped copying slices), by
  msgspec into typed Structs of only the fields the analysis reads (``ph``, ``cat``, ``name``,
  ``ts``, ``dur``, ``pid``, ``tid`` and ``args``' ``correlation``, ``External id``,
  ``stream``, ``device``), with GC-untracked Structs; nothing kept. A lower bound: no
  folding, no fallback for a malformed slice. In this process, its CPU time (``getrusage``).
- **analyse**: ``mindspeed-prof analyse --json FILE`` (cache entry removed first) as a whole
  process from a small launcher: wall time, CPU time (user + system of the child) and peak
  RSS (``ru_maxrss`` of ``RUSAGE_CHILDREN``). "Per core" is CPU time: the machine is shared,
  so wall time varies with the others' load; both are given. The process's start (imports,
  the report on a 0.1 MB trace) is given too, and the figure with it taken off.

Figures: the CPU time per MB of analyse (start included) against the decode's (goal 2.5x);
100 MB/s per core against analyse's MB/s per core (goal 1x: the ratio is 100 over ours, so
at most 1 means met); peak RSS of the large trace against the small (goal 1.3x: flat).

The NPU path the same way: torch_npu's text export (the real capture
``tests/fixtures/torch_npu/text/rank0_ascend_pt`` with its ``trace_view.json`` events repeated
6 and 60 times, as ``stream`` makes it; ``--quick``: 1 and 4), ``analyse --json`` on each,
and ``msprof-analyze cluster -m all`` on the smaller (CPU time of its whole process tree;
goal 0.2x; not in ``--quick``: it takes half a minute). The db export is compared in
``references`` (the corpus' small sets only: no generator of large torch_npu databases here).

What each path reads: Kineto JSON and our range files go through ``readers.stream`` (2 MiB
slices, each decoded by msgspec into the typed records of ``readers.events``: the fields
above, odd types such as string times or ids kept as they are and turned into numbers per
column) and ``readers.fold``; torch_npu's ``trace_view.json`` the same, in two passes (process
names, then events); its CSV and db exports and our db export are read by the csv and sqlite3
modules. There is no columnar (Polars or Arrow) path: on the same 4 MiB slices of a 32 MB trace
of this generator, with the same fields as a schema, Polars' ``read_json`` decoded 99 MB/s of
CPU (its threads included), ``read_ndjson`` 109 MB/s and pyarrow's ``json.read_json`` 95 MB/s
(the slice's separators made newlines first), against 275 MB/s for msgspec into typed records
(Polars 2.1.0, pyarrow 26.0.1, load 10 on the 2-core machine): the decode alone would spend the
whole 100 MB/s budget. Perfetto's trace processor could not be run: its Python package
(``perfetto``, in the ``perfetto`` extra for the timeline's protos) downloads the
``trace_processor_shell`` binary on first use, and this machine reaches no network but the
package registries.
"""

from __future__ import annotations

import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Union

import msgspec

from benchmarks.report import Report

__all__ = ["decode_alone", "run"]

MB = 1e6
_EVENT_BYTES = 164  # cuda_trace's bytes per event, about
_PER_STEP = 6 * 280 * 3  # events per step at kernels_per_stage=280
_SLICE = 4 << 20
_GOAL_MBS = 100.0


class _Args(msgspec.Struct, gc=False):
    correlation: Union[int, str, None] = None
    external: Union[int, str, None] = msgspec.field(default=None, name="External id")
    stream: Union[int, str, None] = None
    device: Union[int, str, None] = None


class _Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: Union[int, float, str, None] = None
    dur: Union[int, float, str, None] = None
    pid: Union[int, str, None] = None
    tid: Union[int, str, None] = None
    args: Union[_Args, None] = None


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def decode_alone(path: Path) -> tuple[float, int]:
    """CPU seconds to decode ``path``'s events a slice at a time into typed Structs (a file
    whose events ``", "`` separates, as ``write_cuda_trace`` writes), and how many. The file
    is read once into one buffer and each slice decoded from a view of it, its ends made
    ``[`` and ``]`` in place: no copy of a slice (as ``readers.stream`` reads)."""
    decoder = msgspec.json.Decoder(list[_Event])
    count = 0
    t0 = _cpu()
    buf = bytearray(path.stat().st_size)
    with open(path, "rb") as f:
        f.readinto(buf)
    view = memoryview(buf)
    start = buf.index(b'"traceEvents": [') + 16
    end = buf.rindex(b"]")
    while start < end:
        cut = buf.rfind(b"}, {", start, min(start + _SLICE, end))
        cut = end - 1 if cut < 0 or start + _SLICE >= end else cut
        before, after = buf[start - 1], buf[cut + 1]
        buf[start - 1], buf[cut + 1] = ord("["), ord("]")
        count += len(decoder.decode(view[start - 1 : cut + 2]))
        buf[start - 1], buf[cut + 1] = before, after
        start = cut + 3
    view.release()
    return _cpu() - t0, count


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("mindspeed-prof")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mindspeed_prof.cli"]


_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([time.perf_counter() - t0, use.ru_utime + use.ru_stime, use.ru_maxrss]))
"""


def _launch(cmd: list[str]) -> tuple[float, float, float]:
    """Wall and CPU seconds (the whole process tree's, as reaped) and peak RSS (MB: the
    largest process's) of ``cmd``."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *cmd],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    wall, cpu, rss_kb = json.loads(out.stdout)
    return wall, cpu, rss_kb / 1024


def analyse(path: Path) -> tuple[float, float, float]:
    """``_launch`` of ``analyse --json`` on ``path``, uncached."""
    from mindspeed_prof.analysis.cache import cache_path

    cache_path(path).unlink(missing_ok=True)
    got = _launch([*_cli(), "analyse", "--json", str(path)])
    cache_path(path).unlink(missing_ok=True)
    return got


def _msprof(folder: Path, work: Path) -> tuple[float, float, float] | None:
    """``_launch`` of ``msprof-analyze cluster -m all`` on a copy of ``folder`` (it writes into
    its input); None when it is not installed."""
    exe = Path(sys.executable).with_name("msprof-analyze")
    if not exe.is_file():
        return None
    shutil.rmtree(work, ignore_errors=True)
    data = work / "in" / folder.name
    shutil.copytree(folder, data)
    got = _launch(
        [
            str(exe),
            "cluster",
            "-d",
            str(data.parent),
            "-m",
            "all",
            "-o",
            str(work / "out"),
            "--force",
        ]
    )
    shutil.rmtree(work, ignore_errors=True)
    return got


def _npu(folder: Path, report: Report, start: float) -> None:
    """torch_npu's text export (``stream``'s scaled fixture: ``trace_view.json`` events
    repeated): ``analyse`` at two sizes, msprof-analyze on the smaller (minutes on the larger)."""
    from benchmarks.stream import _npu_folder

    rows = []
    for k, repeat in enumerate((1, 4) if report.quick else (6, 60)):
        npu = _npu_folder(folder, repeat)
        mb = (npu / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").stat().st_size / MB
        wall, cpu, rss = analyse(npu)
        theirs = _msprof(npu, folder / "msprof") if k == 0 and not report.quick else None
        rows.append((mb, wall, cpu, rss, theirs))
        shutil.rmtree(npu)
    for mb, wall, cpu, rss, theirs in rows:
        detail = (
            f"{mb / cpu:.0f} MB/s per core ({mb / (cpu - start):.0f} with the start "
            f"taken off), wall {wall:.1f} s, peak RSS {rss:.0f} MB"
        )
        if theirs is None:
            report.add(
                f"analyse --json, torch_npu text export: {mb:.0f} MB trace_view",
                f"{_GOAL_MBS:.0f} MB/s per core",
                _GOAL_MBS / (mb / cpu),
                None,
                detail,
            )
        else:
            report.add(
                f"analyse --json, torch_npu text export: {mb:.0f} MB trace_view, CPU time",
                "msprof-analyze cluster -m all, CPU time",
                cpu / theirs[1],
                0.2,
                f"{detail}; msprof-analyze: {mb / theirs[1]:.1f} MB/s per core, wall "
                f"{theirs[0]:.1f} s, largest process {theirs[2]:.0f} MB",
            )


def _trace(folder: Path, size: float) -> Path:
    from mindspeed_prof.testing.kineto import write_cuda_trace

    steps = max(1, round(size / (_EVENT_BYTES * _PER_STEP)))
    return write_cuda_trace(
        folder / f"rank0_{size / MB:.0f}MB.pt.trace.json",
        steps=steps,
        kernels_per_stage=280 if size > 1e6 else 10,
    )


def run(report: Report) -> None:
    sizes = [4 * MB, 16 * MB] if report.quick else [100 * MB, 400 * MB]
    repeats = 1 if report.quick else 3
    folder = Path(tempfile.mkdtemp(prefix="mindspeed-prof-decode-"))
    try:
        tiny = _trace(folder, 0.1 * MB)
        start = statistics.median(analyse(tiny)[1] for _ in range(3))
        rows = []
        for size in sizes:
            trace = _trace(folder, size)
            mb = trace.stat().st_size / MB
            dec: list[float] = []
            ours: list[tuple[float, float, float]] = []
            for i in range(repeats):
                for first in (0, 1) if i % 2 == 0 else (1, 0):
                    if first == 0:
                        dec.append(decode_alone(trace)[0])
                    else:
                        ours.append(analyse(trace))
            d = statistics.median(dec)
            wall = statistics.median(o[0] for o in ours)
            cpu = statistics.median(o[1] for o in ours)
            rss = max(o[2] for o in ours)
            rows.append((mb, d, wall, cpu, rss))
            trace.unlink()
        for mb, d, wall, cpu, rss in rows:
            report.add(
                f"analyse --json, CPU time per MB: {mb:.0f} MB Kineto trace",
                "typed msgspec decode of its fields, alone",
                cpu / d,
                2.5,
                f"{mb / cpu:.0f} vs {mb / d:.0f} MB/s per core; "
                f"{mb / (cpu - start):.0f} MB/s with the start ({start:.2f} s) taken off;"
                f" wall {wall:.1f} s ({mb / wall:.0f} MB/s), peak RSS {rss:.0f} MB",
            )
        _npu(folder, report, start)
        mb, d, wall, cpu, rss = rows[-1]
        report.add(
            f"{_GOAL_MBS:.0f} MB/s per core: {mb:.0f} MB Kineto trace",
            "analyse --json, MB/s per core (CPU time, start included)",
            _GOAL_MBS / (mb / cpu),
            1.0,
            f"{mb / cpu:.0f} MB/s per core",
        )
        (mb0, *_, r0), (mb1, *_, r1) = rows[0], rows[-1]
        report.add(
            f"analyse --json, peak RSS: {mb1:.0f} MB trace",
            f"{mb0:.0f} MB trace",
            r1 / r0,
            1.3,
            f"{r1:.0f} MB vs {r0:.0f} MB",
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
