"""``phase_rows`` groups the ranges by rank and step in numpy: the rows are those of a pass a
range at a time (the longest step range, the first of equal ones, a NaN one as read; each
step's stages in the ranges' order; rank, source, then step order), whatever the mix."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from unittest import mock

import pytest

from mindspeed_prof.analysis import phases
from mindspeed_prof.analysis.phases import PhaseRow, phase_rows, split_step
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_table import RangeTable
from mindspeed_prof.config.schema import STAGE_ORDER, TRANSITIONS


def _reference(ranges: list[Range], warmup: set[tuple[int | None, str, int]]) -> list[PhaseRow]:
    """A range at a time, with a dict per step."""
    steps: dict[tuple[int | None, str, int], Range] = {}
    stages: dict[tuple[int | None, str, int], list[Range]] = defaultdict(list)
    for r in ranges:
        if r.step is None or r.dur < 0 or r.kind not in ("step", "stage"):
            continue
        key = (r.rank, r.source, r.step)
        if r.kind == "step":
            if key not in steps or r.dur > steps[key].dur:
                steps[key] = r
        else:
            stages[key].append(r)
    out = []
    for key in sorted(steps, key=lambda k: (rank_order(k[0]), k[1], k[2])):
        step = steps[key]
        us = split_step(step, stages.get(key, []))
        out.append(
            PhaseRow(
                rank=key[0],
                source=key[1],
                step=key[2],
                step_ms=step.dur / 1000.0,
                generation_ms=us["generation"] / 1000.0,
                training_ms=us["training"] / 1000.0,
                transition_ms=us["transition"] / 1000.0,
                other_ms=us["other"] / 1000.0,
                uncovered_ms=us["uncovered"] / 1000.0,
                transitions={n: us[f"t:{n}"] / 1000.0 for n in TRANSITIONS if f"t:{n}" in us},
                warmup=key in warmup,
            )
        )
    return out


def _ranges(seed: int) -> list[Range]:
    rng = random.Random(seed)
    out = []
    for _ in range(rng.randint(0, 80)):
        rank = rng.choice([None, 0, 1, 3])
        source = rng.choice(["", "", "hostB"])
        step = rng.choice([None, 1, 2, 7, 2**70])
        kind = rng.choice(["step", "stage", "stage", "range"])
        dur = rng.choice([100.0, 100.0, 50.0, -1.0, math.nan, rng.uniform(0, 200)])
        name = rng.choice([*STAGE_ORDER, "other"]) if kind != "step" else "step"
        out.append(Range(rank, kind, name, step, 1.7e15 + rng.uniform(0, 300), dur, source))
    return out


@pytest.mark.parametrize("seed", range(80))
def test_the_rows_are_a_range_at_a_times(seed):
    ranges = _ranges(seed)
    warmup = {(r.rank, r.source, r.step) for r in ranges[:3] if r.step is not None}
    want = _reference(ranges, warmup)
    with mock.patch.object(phases, "CHUNK", 2):  # several chunks of steps
        got = phase_rows(RangeTable.of(ranges), warmup)
    assert repr(list(got)) == repr(want)  # (NaN compares unequal to itself: its text does not)
