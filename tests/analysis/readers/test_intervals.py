"""Intervals: how much of a span a union covers, against a count on a fine grid."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.intervals import covered, length, merge

ints = st.integers(0, 60)
spans = st.lists(st.tuples(ints, ints).map(lambda t: (float(min(t)), float(max(t)))), max_size=12)


@given(spans, ints, ints)
def test_covered_is_the_count_of_covered_unit_cells(
    ops: list[tuple[float, float]], a: int, b: int
) -> None:
    lo, hi = float(min(a, b)), float(max(a, b))
    cells = sum(
        1 for x in range(int(lo), int(hi)) if any(s <= x and x + 1 <= e for s, e in ops)
    )  # integer ends: whole cells
    merged = merge(ops)
    assert covered(merged, lo, hi) == cells
    assert covered(merged, lo, hi, [s for s, _ in merged]) == cells
    assert 0.0 <= covered(merged, lo, hi) <= hi - lo
    assert length(merged) == covered(merged, 0.0, 60.0)


def test_nothing_covers_an_empty_span_or_with_no_intervals() -> None:
    assert covered([(0.0, 10.0)], 5.0, 5.0) == 0.0
    assert covered([], 0.0, 10.0) == 0.0
    assert covered([(0.0, 2.0), (4.0, 6.0), (8.0, 20.0)], 1.0, 9.0) == 1.0 + 2.0 + 1.0
