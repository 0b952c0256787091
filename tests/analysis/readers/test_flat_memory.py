"""Reading a trace 8 times the size takes no more memory, for each mix of events.

The readers' bounds (bytes read at a time, rows a spilled block holds, device ops a stream keeps,
launches waiting, the host ops' reorder heap) are made small here, so that a trace of 1 MB
already fills them and one of 8 MB shows whatever still grows with the events. The peak is
Python's own allocations (``tracemalloc``: numpy's arrays and ``array``'s buffers included),
which the machine's load does not move, measured in a process of its own (another test's
thread allocating meanwhile would count). A reader that kept something per event (the host ops'
spans, before they went to disk a block at a time, doubled the peak here) fails.
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


def _peak(path: Path) -> float:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return float(proc.stdout.split()[-1])


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
