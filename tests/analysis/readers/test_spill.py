"""Rows spilled a block at a time come back merged in order, whatever order they came in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.spill import Spilled, merged

_ROW = st.tuples(st.integers(0, 40).map(float), st.integers(0, 9).map(float))


def _fill(rows: list[tuple[float, float]], block: int, every: int) -> Spilled:
    run = Spilled("dd", block=block)
    for k, (key, value) in enumerate(rows):
        run.cols[0].append(key)
        run.cols[1].append(value)
        if (k + 1) % every == 0:
            run.settle()
    run.settle()
    return run


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(_ROW, max_size=40), max_size=4),
    st.integers(1, 5),
    st.integers(1, 7),
    st.booleans(),
)
def test_merged_gives_every_row_sorted(runs, block, every, presort) -> None:
    if presort:
        runs = [sorted(rows) for rows in runs]
    spilled = [_fill(rows, block, every) for rows in runs]
    for run, rows in zip(spilled, runs):
        assert len(run) == len(rows)
        if run.in_order:  # in order: memory keeps less than a block
            assert len(run.cols[0]) < block
    out = [tuple(row) for cols in merged(spilled) for row in zip(*(c.tolist() for c in cols))]
    assert out == sorted(row for rows in runs for row in rows)
    for run in spilled:
        run.close()


def test_a_run_out_of_order_is_kept_in_memory_from_then_on() -> None:
    run = _fill([(3.0, 0.0), (4.0, 0.0), (5.0, 0.0), (1.0, 0.0), (6.0, 0.0)], block=2, every=1)
    assert not run.in_order
    assert run.spilled == 1 and list(run.cols[0]) == [5.0, 1.0, 6.0]
    assert [c.tolist() for c in next(merged([run]))] == [[1.0, 3.0, 4.0, 5.0, 6.0], [0.0] * 5]
