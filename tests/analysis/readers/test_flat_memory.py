"""Reading a trace 8 times the size takes no more memory, for each mix of events.

The readers' bounds (bytes read at a time, rows a spilled block holds, device ops a stream keeps,
launches waiting, the host ops' reorder heap) are made small here, so that a trace of 1 MB
already fills them and one of 8 MB shows whatever still grows with the events. The peak is
Python's own allocations (``tracemalloc``: numpy's arrays and ``array``'s buffers included),
which the machine's load does not move, measured in a process of its own (another test's
thread allocating meanwhile would count). A reader that kept something per event (the host ops'
spans, before they went to disk a block at a time, doubled the peak here) fails.

A range file is all ranges, and the analysis keeps each one (its tables are per step), as columns
(``readers.range_table``): there the memory must not grow by more than a few dozen bytes a range,
through the cache too.
"""

from __future__ import annotations

import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_prof.testing.kineto import write_cuda_trace, write_host_trace
from mindspeed_prof.testing.ranges import write_range_file

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures/torch_npu/text/rank0_ascend_pt"
#: Peak of the large trace over the small one's; 8 times the events.
GROWTH = 1.3


def _host(folder: Path, mb: int) -> Path:
    return write_host_trace(folder / "rank0.pt.trace.json", steps=4 * mb, ops_per_stage=200)


def _kernels(folder: Path, mb: int) -> Path:
    return write_cuda_trace(folder / "rank0.pt.trace.json", steps=mb, kernels_per_stage=280)


def _npu(folder: Path, mb: int) -> Path:
    """The torch_npu fixture with its trace_view's timed events repeated, names at the end."""
    dest = folder / "rank0_ascend_pt"
    shutil.copytree(FIXTURE, dest)
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
        for k in range(max(1, round(mb / 2.2))):
            for e in timed:
                f.write(json.dumps({**e, "ts": str(float(e["ts"]) + k * span)}) + ",")
        f.write(",".join(json.dumps(e) for e in names) + "]")
    return dest


#: Reads the trace named by its argument with the readers' bounds made small; prints the peak.
_MEASURE = """
import sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.readers.fold import device as fold_device
from mindspeed_prof.analysis.readers import host_ops, read, spill, stream
from mindspeed_prof.analysis.readers.device import ops
stream.CHUNK, spill.BLOCK, ops.SLICE = 1 << 17, 1 << 11, 1 << 10
fold_device.PENDING, host_ops.REORDER = 1 << 10, 256
tracemalloc.start()
read(Path(sys.argv[1]))
print(tracemalloc.get_traced_memory()[1])
"""


def _probe(script: str, *args: str) -> list[str]:
    """``python -c SCRIPT ARGS`` (a measurement in a fresh process): its output's words."""
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _peak(path: Path) -> float:
    out = _probe(_MEASURE, str(path))
    return float(out[-1])


@pytest.mark.parametrize(
    ("make", "small", "large"),
    [(_host, 1, 8), (_kernels, 1, 8), (_npu, 2, 16)],
    ids=["host-only", "kernel-heavy", "torch_npu-text"],
)
def test_peak_memory_does_not_grow_with_the_trace(make, small, large, tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "l").mkdir()
    a, b = make(tmp_path / "s", small), make(tmp_path / "l", large)

    def size(p: Path) -> int:
        return sum(f.stat().st_size for f in p.rglob("*")) if p.is_dir() else p.stat().st_size

    assert size(b) > 6 * size(a) - 2e6  # (the npu folder's other files do not grow)
    peak_a, peak_b = _peak(a), _peak(b)
    assert peak_b <= GROWTH * peak_a, f"{peak_b / 1e6:.2f} MB vs {peak_a / 1e6:.2f} MB"


#: Reads each range file named; prints per file the peak of the read and what its ranges hold
#: after it, then how many ranges it has.
_READ = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.readers import read
read(Path(sys.argv[1]))  # the readers' imports, not counted
for name in sys.argv[1:]:
    gc.collect()
    tracemalloc.start()
    data = read(Path(name))
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(peak, held, len(data.ranges))
    del data
"""


def test_reading_a_range_file_peaks_at_what_its_ranges_hold(tmp_path):
    """A range file's ranges are taken in as they will be held (24 bytes a range, each name
    and thread, and each step, once): reading 4 times the ranges peaks higher by about what the
    added ranges hold once read (their columns, and each step's own range and label), not
    more (the ranges waited in lists and were copied into the table: 50 bytes a range at the
    peak against 34 held). Both files fill the reader's slices, so only the ranges grow."""
    small = write_range_file(tmp_path / "rank0_s.mstx.trace.json", 8e6)
    large = write_range_file(tmp_path / "rank0_l.mstx.trace.json", 32e6)
    out = [float(v) for v in _probe(_READ, str(small), str(large))]
    (peak_s, held_s, n_s), (peak_l, held_l, n_l) = out[:3], out[3:]
    assert n_l > 3.5 * n_s > 150_000
    peak, held = (peak_l - peak_s) / (n_l - n_s), (held_l - held_s) / (n_l - n_s)
    assert held < 48, f"the ranges hold {held:.1f} bytes a range"
    assert peak <= held + 4, f"the read peaked at {peak:.1f} bytes a range, {held:.1f} held"


#: Reads a range file, stores its cache entry and loads it back; prints the memory the ranges
#: hold as read, the most the store took beyond them, the entry's size and what the ranges hold
#: as loaded.
_CACHED = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.readers import read
path = Path(sys.argv[1])
key = cache.fingerprint(path)
read(path)  # the readers' imports, not counted
gc.collect()
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
data = read(path)
held = tracemalloc.get_traced_memory()[0] - base
tracemalloc.reset_peak()
cache.store(path, key, data)
store = tracemalloc.get_traced_memory()[1] - base - held
ranges = len(data.ranges)
del data
gc.collect()
base = tracemalloc.get_traced_memory()[0]
again = cache.load(path, key)
assert again is not None and len(again.ranges) == ranges
loaded = tracemalloc.get_traced_memory()[0] - base
print(held, store, cache.cache_path(path).stat().st_size, loaded)
"""


def test_a_range_files_cache_entry_is_written_and_read_without_copies(tmp_path):
    """Storing the entry takes one buffer of its size (its encoding was copied twice more, and
    the peak of a 400 MB range file's analysis grew by 360 MB); ranges loaded from it take
    no more than as read (each had its own copy of its name, kind, thread and step: 150
    bytes more a range)."""
    trace = write_range_file(tmp_path / "rank0.mstx.trace.json", 8e6)
    out = _probe(_CACHED, str(trace))
    held, store, entry, loaded = (float(v) for v in out)
    assert entry > 1e6  # the ranges are in it
    # (one buffer, made the entry's size before the encoding fills it: grown as it filled, it
    # was copied and over-allocated, 1.5x the entry)
    assert store <= 1.15 * entry, f"store took {store / entry:.2f}x its entry's size"
    assert loaded <= 1.1 * held, f"loaded: {loaded / 1e6:.1f} MB vs {held / 1e6:.1f} MB as read"


#: Analyses a range file (read, then every table, the verdict and the findings); prints the
#: memory the capture holds as read and the most the report took beyond it.
_REPORT = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.cli import output
class Sink:
    def write(self, text):
        return len(text)
path = Path(sys.argv[1])
output.write_json(report(analyse(path, cache=False)).json(lazy=True), Sink())  # the imports
output.JSON_CHUNK = 4096  # (the writer's own chunk, not counted)
gc.collect()
tracemalloc.start()
captures = analyse(path, cache=False)
held = tracemalloc.get_traced_memory()[0]
tracemalloc.reset_peak()
found = report(captures)
took = tracemalloc.get_traced_memory()[1] - held
gc.collect()
kept = tracemalloc.get_traced_memory()[0]
tracemalloc.reset_peak()
output.write_json(found.json(lazy=True), Sink())
wrote = tracemalloc.get_traced_memory()[1] - kept
print(held, took, wrote, len(captures.traces[0].ranges))
"""


def test_a_range_files_report_takes_less_than_a_range_tuple_a_range(tmp_path):
    """A range file's tables are per step (about 35 ranges each), so the report grows with it;
    but by less than a ``Range`` tuple (160 bytes) a range: its tables and judgements read the
    ranges' columns, a row's cells at a time (they held a dict per step for every row at once,
    and lists of every range of a kind)."""
    trace = write_range_file(tmp_path / "rank0.mstx.trace.json", 8e6)
    out = _probe(_REPORT, str(trace))
    held, took, wrote, ranges = (float(v) for v in out)
    assert held > 24 * ranges > 1e6  # the ranges, as columns (24 bytes a range, no bare times)
    assert took <= 160 * ranges, f"the report took {took / ranges:.0f} bytes a range"
    # ``--json`` makes its rows as it writes them (a dict a row for the whole per-step table
    # and phases was 47 bytes a range)
    assert wrote <= 4 * ranges, f"writing --json took {wrote / ranges:.1f} bytes a range"


#: Writes ``analyse --json``'s document of a per-step table of as many rows as its argument to
#: a sink that keeps nothing; prints the most the writing took beyond the document.
_WRITE = """
import sys, tracemalloc
from mindspeed_prof.cli.output import write_json
doc = {"per_step": [
    {"rank": 0, "step": i, "step_ms": i / 7, "stages": {"train": i / 3, "rollout": i / 9}}
    for i in range(int(sys.argv[1]))
]}
class Sink:
    def write(self, text):
        return len(text)
write_json({"warm": [1.5]}, Sink())  # the encoder's imports, not counted
tracemalloc.start()
write_json(doc, Sink())
print(tracemalloc.get_traced_memory()[1])
"""


def _write_peak(rows: int) -> float:
    out = _probe(_WRITE, str(rows))
    return float(out[-1])


def test_the_json_answer_is_written_without_its_text_whole():
    """``analyse --json`` of a range file is a table per step: its writer holds a chunk of the
    text at a time, not the document's text (``json.dumps`` of a 400 MB range file's answer
    is 55 MB), so 8 times the rows take no more memory to write."""
    small, large = _write_peak(5_000), _write_peak(40_000)
    assert large <= GROWTH * small, f"{large / 1e6:.2f} MB vs {small / 1e6:.2f} MB"


#: Reads a range file and makes its throughput rows (it has no counters); prints the most that
#: took.
_THROUGHPUT = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.counts import Model
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.throughput import throughput_rows
ranges = read(Path(sys.argv[1])).ranges
gc.collect()
tracemalloc.start()
assert throughput_rows(ranges, [], Model()) == []
print(tracemalloc.get_traced_memory()[1])
"""


def test_a_range_files_throughput_rows_take_nothing_per_stage_run(tmp_path):
    """Without counters a range file has no throughput rows, and finding that out holds
    nothing per stage run (it held a dict of every run: 8 MB at 40 MB)."""
    peaks = []
    for mb in (1, 8):
        trace = write_range_file(tmp_path / f"rank0_{mb}.mstx.trace.json", mb * 1e6)
        out = _probe(_THROUGHPUT, str(trace))
        peaks.append(float(out[-1]))
    small, large = peaks
    assert large <= GROWTH * small + 16e3, f"{large / 1e3:.1f} kB vs {small / 1e3:.1f} kB"


#: Reads a range file and analyses it (every table, the verdict and the findings); prints its
#: ranges and the peak of the whole.
_ANALYSE = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers import stream
from mindspeed_prof.analysis.report.report import report
stream.CHUNK = 1 << 17  # (filled by the small file already)
path = Path(sys.argv[1])
report(analyse(path.with_name("tiny.mstx.trace.json"), cache=False))  # the imports
gc.collect()
tracemalloc.start()
report(analyse(path, cache=False))
print(len(read(path).ranges), tracemalloc.get_traced_memory()[1])
"""

#: Bytes the analysis of a range file may take per range beyond a small file's peak: the
#: ranges are held to the end, as columns (``RangeTable``: about 50 bytes a range, with the
#: columns' spare room), and the tables read them a kind at a time (173 bytes in all); as
#: ``Range`` tuples, with the report's lists of them, they took 279.
PER_RANGE = 200


def test_a_range_files_analysis_grows_by_its_columns_only(tmp_path):
    """Eight times the ranges add no more than ``PER_RANGE`` bytes a range to the peak of
    reading and analysing a range file: the reader hands its ranges over as columns, and the
    report reads them without a list of ``Range`` tuples."""
    write_range_file(tmp_path / "tiny.mstx.trace.json", 1e4)
    runs = []
    for mb in (1, 8):
        trace = write_range_file(tmp_path / f"rank0_{mb}.mstx.trace.json", mb * 1e6)
        out = _probe(_ANALYSE, str(trace))
        runs.append([float(v) for v in out[-2:]])
    (n_small, small), (n_large, large) = runs
    per_range = (large - small) / (n_large - n_small)
    assert per_range <= PER_RANGE, f"{per_range:.0f} bytes a range ({small / 1e6:.1f} MB at 1 MB)"
