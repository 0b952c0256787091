"""The judgements' passes over a range file take memory that does not grow per step beyond
the ranges' own: each pass's peak (``tracemalloc``, beyond what the capture holds), in bytes
a range, is no larger on ten times the steps, and under a bound the passes that made objects
per step exceeded. A pass that built a dict per step per row (``Cells`` for every row, the step
cells rebuilt by each pass: 70-170 MB on a 400 MB file) fails. Measured in a process of its
own (another test's thread allocating meanwhile would count), on two ranks (the passes compare
them a step at a time) and on one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_prof.testing.ranges import write_range_file

pytestmark = pytest.mark.slow

#: A pass's peak per range, on ten times the steps against the smaller one.
GROWTH = 1.3
#: The most a pass may take beyond what is held, in bytes a range, on ten times the steps (two
#: ranks). Before the passes read columns (600 steps): ``step_time`` 15 (the step cells as a dict
#: per step), ``slowest`` 46, ``phase_rows`` 40, ``uncovered`` 55 (a Range and a dict per step),
#: ``stage_growths`` 38; on one rank, where no rank is compared, the stragglers 33 and 65,
#: ``rank_lags`` 64, ``step_time`` 23, ``stage_growths`` 67 (now 5, 64, 32, 23, 31.5, 22, 32;
#: on one rank 0, 0, 6, 6, 58). Two ranks' lags and stragglers still build a dict a step the
#: ranks share (64 and 60): bounded, not yet made smaller.
BOUND = {
    "step_time": 10,
    "rank_lags": 70,
    "stage_growths": 36,
    "stragglers_stage": 25,
    "stragglers_range": 66,
    "slowest": 35,
    "phase_rows": 36,
    "uncovered": 35,
}
BOUND_ONE_RANK = {
    "stragglers_stage": 1,
    "stragglers_range": 1,
    "rank_lags": 10,
    "step_time": 10,
    "stage_growths": 62,
}
#: Bytes a generated step takes in the file (``write_range_file``).
STEP_BYTES = 4.4e3

#: Analyses the folder named by its argument, then prints, per pass, the most it took beyond
#: what is held, and the memory the ranges hold as read.
_PASSES = """
import gc, sys, tracemalloc
from pathlib import Path
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.judgement import judge
from mindspeed_prof.analysis.judgement.where import slowest
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.stragglers import find_stragglers
from mindspeed_prof.analysis.phases import phase_rows
from mindspeed_prof.analysis.findings.rl.coverage import uncovered
from mindspeed_prof.analysis.report.settings import Settings
path = Path(sys.argv[1])
captures = analyse(path, cache=False)
t = tables(captures)
passes = {
    "step_time": lambda: judge.step_time(t.counted, t.counted_device),
    "rank_lags": lambda: judge.rank_lags(t.counted, t.counted_device, 0.05, 1.0),
    "stage_growths": lambda: judge.stage_growths(t.counted, t.counted_device, 1.0),
    "stragglers_stage": lambda: find_stragglers(t.counted, "stage", 0.05, 1.0),
    "stragglers_range": lambda: find_stragglers(t.counted, "range", 0.05, 1.0),
    "slowest": lambda: slowest(t.counted, t.lags),
    "phase_rows": lambda: phase_rows(t.ranges, t.warmup_steps),
    "uncovered": lambda: uncovered(captures, t, Settings()),
}
for f in passes.values():
    f()  # the imports, not counted
gc.collect()
tracemalloc.start()
held = analyse(path, cache=False)
ranges = tracemalloc.get_traced_memory()[0]
count = sum(len(c.ranges) for c in held.traces)
del held
gc.collect()
for name, f in passes.items():
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    f()
    print(name, tracemalloc.get_traced_memory()[1] - base)
print("ranges", ranges)
print("count", count)
"""


def _peaks(folder: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", _PASSES, str(folder)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    return {k: float(v) for k, v in (line.split() for line in proc.stdout.splitlines())}


@pytest.mark.parametrize("ranks", [1, 2])
def test_a_judgement_pass_takes_no_more_per_step_on_ten_times_the_steps(ranks, tmp_path):
    peaks = []
    for steps in (60, 600):
        folder = tmp_path / str(steps)
        folder.mkdir()
        for rank in range(ranks):
            write_range_file(folder / f"rank{rank}.mstx.trace.json", steps * STEP_BYTES, rank)
        peaks.append(_peaks(folder))
    small, large = peaks
    assert large["count"] > 9 * small["count"]  # ten times the steps held
    for name in small:
        if name in ("ranges", "count"):
            continue
        a, b = small[name] / small["count"], large[name] / large["count"]
        assert b <= GROWTH * a or b <= 1, f"{name}: {b:.1f} vs {a:.1f} bytes a range"
        bound = (BOUND_ONE_RANK if ranks == 1 else {}).get(name, BOUND[name])
        assert b <= bound, f"{name}: {b:.1f} bytes a range (at most {bound})"
