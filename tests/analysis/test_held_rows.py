"""``held_rows``: rows held as columns read back as the rows they were, in order, slices and
negative places as a list's, each row's named cells in their own key order."""

from __future__ import annotations

import gc
import tracemalloc

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.held_rows import NamedCells
from mindspeed_prof.analysis.phases import PhaseRow, PhaseTable

_MS = st.floats(allow_nan=False) | st.just(-0.0)
_ROWS = st.lists(
    st.builds(
        PhaseRow,
        rank=st.none() | st.integers(0, 3),
        source=st.sampled_from(["", "host-a"]),
        step=st.integers(0, 2**70),
        step_ms=_MS,
        generation_ms=_MS,
        training_ms=_MS,
        transition_ms=_MS,
        other_ms=_MS,
        uncovered_ms=_MS,
        transitions=st.dictionaries(st.sampled_from(["sync", "reshard", "offload"]), _MS),
        warmup=st.booleans(),
    ),
    max_size=12,
)


@given(_ROWS, st.integers(-15, 15), st.integers(-15, 15), st.sampled_from([1, 2, -1]))
def test_a_phase_table_reads_back_its_rows(
    rows: list[PhaseRow], lo: int, hi: int, stride: int
) -> None:
    table = PhaseTable()
    for row in rows:
        table.append(row)
    assert len(table) == len(rows) and list(table) == rows
    assert table[lo:hi:stride] == rows[lo:hi:stride]
    for i in range(-len(rows), len(rows)):
        got = table[i]
        assert got == rows[i] and list(got.transitions) == list(rows[i].transitions)
    for i in (len(rows), -len(rows) - 1):
        with pytest.raises(IndexError):
            table[i]


@given(st.lists(st.dictionaries(st.text(max_size=3), _MS, max_size=4), max_size=8))
def test_named_cells_keep_each_rows_keys_in_order(rows: list[dict[str, float]]) -> None:
    cells = NamedCells()
    for row in rows:
        cells.append(row)
    assert [list(cells.row(i).items()) for i in range(len(rows))] == [list(r.items()) for r in rows]


def test_a_phase_row_is_held_in_a_fraction_of_its_object() -> None:
    """A range file has a ``PhaseRow`` a step (at 400 MB, 91,000 held 39 MB): held as columns
    they take under 140 bytes a row (a ``PhaseRow`` with its dict is about 400)."""
    row = PhaseRow(
        rank=0,
        step=0,
        step_ms=1.5,
        generation_ms=0.25,
        training_ms=0.5,
        transition_ms=0.125,
        other_ms=0.0,
        uncovered_ms=0.625,
        transitions={"sync": 0.125},
    )
    n = 20_000
    PhaseTable().append(row)  # (what is made once)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        table = PhaseTable()
        for step in range(1000, 1000 + n):
            table.append(msgspec.structs.replace(row, step=step))
        gc.collect()
        size = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(table) == n and table[-1].step == 1000 + n - 1
    assert size < 140 * n, f"{size / n:.0f} bytes a row"
