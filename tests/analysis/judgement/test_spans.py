"""``judgement.spans``: each stage's time per step and rank as columns gives the floats the
dict path (``where``'s) gives, run for run: one run or several (overlapping, cut by the step),
several ranks, steps without a step range, stages of a step that starts before its step."""

from __future__ import annotations

import random

import pytest

from mindspeed_prof.analysis.judgement import where
from mindspeed_prof.analysis.judgement.cells import Who
from mindspeed_prof.analysis.judgement.spans import stage_cols
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_table import RangeTable


def _ranges(seed: int) -> RangeTable:
    rng = random.Random(seed)
    out = []
    t0 = 1_700_000_000_000_000.0 + rng.random() * 1e6
    for rank in range(rng.randint(1, 3)):
        for step in range(rng.randint(1, 6)):
            at = t0 + step * 1e5 + rng.random() * 1e3
            if rng.random() < 0.8:
                out.append(Range(rank, "step", "step", step, at + rng.random() * 50, 9e4))
            for _ in range(rng.randint(0, 6)):
                name = rng.choice(["gen", "train", "sync"])
                ts = at + rng.uniform(-2e3, 9.5e4)
                out.append(Range(rank, "stage", name, step, ts, rng.uniform(0, 3e4)))
            if rng.random() < 0.5:
                out.append(Range(rank, "range", "r", step, at - rng.random() * 10, 5.0))
    rng.shuffle(out)
    return RangeTable.of(out)


def _dicts(ranges: RangeTable) -> dict[str, dict[int, dict[Who, float]]]:
    """The dict path: ``stage_cells`` without the columns."""
    first, boxes = where._boxes(ranges)
    out = where._StageCells(boxes)
    for r in ranges:
        if r.kind == "stage":
            key = (r.rank, r.source, r.step)
            lo = r.ts - first[key]
            out.add(r.name, key, lo, lo + r.dur)
    return {name: {s: dict(by) for s, by in out[name].items()} for name in out}


@pytest.mark.parametrize("seed", range(60))
def test_the_columns_give_the_dict_paths_floats_in_its_order(seed):
    ranges = _ranges(seed)
    cols = stage_cols(ranges)
    assert cols is not None
    got = {name: {s: dict(by) for s, by in cols[name].items()} for name in cols}
    want = _dicts(ranges)
    assert list(got) == list(want)
    for name in want:
        assert list(got[name].items()) == list(want[name].items())  # values and order


def test_a_time_not_finite_takes_the_dict_path():
    ranges = _ranges(1)
    ranges.append(Range(0, "stage", "gen", 0, float("nan"), 1.0))
    assert stage_cols(ranges) is None
