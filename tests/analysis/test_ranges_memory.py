"""The range passes take no memory a range beyond a few columns of the ranges' own.

A range file is all ranges (millions), and ``ranges.range_rows``, ``stage_rows`` and
``no_op_rows`` read each one: they read the table a chunk at a time (``range_cols.CHUNK``, made
small here, so that a file of 1 MB already fills it), summing per group as they go. What stays
per range is the nesting's (each custom range's place on its thread and its self time) and
the stages' runs to place ranges in. The peak is Python's own allocations (``tracemalloc``:
numpy's arrays and ``array``'s buffers included), measured in a process of its own. A pass that
held a Python object per range (a list of each range's stage name, ``.tolist()`` of a group's
times) or a copy of the table's columns per kind took about 75 bytes a range here, and fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_prof.testing.ranges import write_range_file

pytestmark = pytest.mark.slow

#: Bytes each added range may take in a pass at its peak, beyond the ranges as read (which hold
#: 32 a range); the stage and no-op passes keep nothing a range.
PER_RANGE = {"range_rows": 24.0, "stage_rows": 0.5, "no_op_rows": 0.5}

#: Reads the range file named by its argument; prints per pass the most it took beyond the
#: ranges, then how many ranges there are.
_MEASURE = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis import ranges
from mindspeed_prof.analysis.readers import range_cols, read
range_cols.CHUNK = 1 << 10
table = read(Path(sys.argv[1])).ranges
passes = sys.argv[2:]
for name in passes:
    getattr(ranges, name)(table[:3000])  # the imports, not counted
tracemalloc.start()
for name in passes:
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    getattr(ranges, name)(table)
    print(tracemalloc.get_traced_memory()[1] - base)
print(len(table))
"""


def _peaks(path: Path) -> tuple[dict[str, float], int]:
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), *PER_RANGE],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    *peaks, count = proc.stdout.split()
    return dict(zip(PER_RANGE, map(float, peaks))), int(count)


def test_range_passes_take_a_few_bytes_a_range_at_most(tmp_path: Path) -> None:
    small, n_small = _peaks(write_range_file(tmp_path / "s.mstx.trace.json", 1e6))
    large, n_large = _peaks(write_range_file(tmp_path / "l.mstx.trace.json", 8e6))
    assert n_large > 6 * n_small > 30_000
    for name, most in PER_RANGE.items():
        grew = (large[name] - small[name]) / (n_large - n_small)
        assert grew <= most, f"{name} took {grew:.1f} bytes more a range ({most} allowed)"
