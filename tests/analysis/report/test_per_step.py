"""``per_step``: the per-step table held as columns gives, row for row and key for key, what a
pass over the ranges as tuples gives (what it was), and holds far less than a ``StepRow`` a
row."""

from __future__ import annotations

import gc
import json
import tracemalloc
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers import range_cols
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_table import RangeTable
from mindspeed_prof.analysis.report.per_step import StepTable, per_step
from mindspeed_prof.analysis.rows import StepRow

_TIMES = st.floats(-1e6, 1e6) | st.just(float("nan")) | st.just(-0.0)
_RANGES = st.lists(
    st.builds(
        Range,
        st.none() | st.integers(0, 3),
        st.sampled_from(["step", "stage", "range"]),
        st.sampled_from(["a", "b", "actor_generate", "total", "warmup"]),
        st.none() | st.integers(0, 4) | st.just(2**70),
        _TIMES,
        _TIMES,
        st.sampled_from(["", "host-a"]),
        st.sampled_from(["", "7"]),
    ),
    max_size=60,
)


def _per_step(ranges: list[Range], warmup: set[tuple[int | None, str, int]]) -> list[StepRow]:
    """The per-step table as a pass over the tuples (what it was)."""
    table: dict[tuple[int | None, str, int], StepRow] = {}
    for r in ranges:
        if r.kind not in ("step", "stage") or r.step is None:
            continue
        row = table.get((r.rank, r.source, r.step))
        if row is None:
            row = table[(r.rank, r.source, r.step)] = StepRow(
                rank=r.rank, source=r.source, step=r.step, stages={}
            )
        if r.kind == "step":
            row.total = (row.total or 0.0) + r.dur / 1000.0
        else:
            row.stages[r.name] = row.stages.get(r.name, 0.0) + r.dur / 1000.0
    for key, row in table.items():
        row.warmup = key in warmup
    return [
        row for _, row in sorted(table.items(), key=lambda kv: (rank_order(kv[0][0]), *kv[0][1:]))
    ]


def _text(rows: list[StepRow]) -> str:
    return json.dumps([r.json() for r in rows])  # key order and NaN too


@given(_RANGES, st.data())
def test_the_table_is_the_rows_a_pass_over_the_ranges_makes(
    ranges: list[Range], data: st.DataObject
) -> None:
    keys = sorted({(r.rank, r.source, r.step) for r in ranges if r.step is not None}, key=str)
    warmup = set(data.draw(st.lists(st.sampled_from(keys), unique=True))) if keys else set()
    want = _per_step(ranges, warmup)
    with mock.patch.object(range_cols, "CHUNK", 3):
        got = per_step(RangeTable.of(ranges), warmup)
    assert len(got) == len(want)
    assert _text(list(got)) == _text(want)
    assert _text(got[1:-1]) == _text(want[1:-1]) and _text(got[::-1]) == _text(want[::-1])
    if want:
        assert _text([got[-1], got[0]]) == _text([want[-1], want[0]])


def test_no_ranges_no_rows() -> None:
    assert len(per_step(RangeTable(), set())) == 0
    assert list(StepTable()) == []


def test_a_row_is_held_in_a_fraction_of_a_step_row() -> None:
    """At 91,000 steps (a 400 MB range file) a list of ``StepRow`` held 46 MB; the columns
    hold under 160 bytes a row (six stages each; a ``StepRow`` is about 530)."""
    steps = 20_000
    table = RangeTable()
    for s in range(steps):
        table.add(0, "step", "step", s, s * 100.0, 90.0)
        for k, name in enumerate(("g", "lp", "ref", "val", "upd", "cu")):
            table.add(0, "stage", name, s, s * 100.0 + k * 10, 9.5)
    per_step(RangeTable.of(table[:7]), set())  # numpy's imports, not counted
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = per_step(table, set())
        gc.collect()
        size = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(held) == steps and held[-1].stages["cu"] == 9.5 / 1000.0
    assert size < 160 * steps, f"{size / steps:.0f} bytes a row"


def test_a_capture_without_steps_writes_an_empty_per_step_table() -> None:
    """(an empty table is written ``[]``, as the list it replaced, not the object's name)"""
    import io

    from mindspeed_prof.analysis.report.tables import _json
    from mindspeed_prof.cli.output import write_json

    for lazy in (False, True):
        out = io.StringIO()
        write_json({"per_step": _json(StepTable(), lazy)}, out)
        assert json.loads(out.getvalue()) == {"per_step": []}
