"""Stragglers: each rank against the median of the other ranks, in one sort per stage-step."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.judgement.cells import per_step
from mindspeed_prof.analysis.judgement.lag import lags
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.stragglers import find_stragglers, medians_of_others


@given(
    st.dictionaries(
        st.integers(0, 2000), st.floats(0, 1e6) | st.integers(0, 50), min_size=2, max_size=40
    )
)
def test_median_of_the_others_is_the_median_without_that_rank(values: dict[int, float]) -> None:
    got = medians_of_others(values)
    assert got == {k: statistics.median(v for j, v in values.items() if j != k) for k in values}


def test_a_thousand_ranks_name_the_one_slow_rank() -> None:
    """1,024 ranks, one 30% slower in every step: the only straggler, consistent; ranks that
    differ by less than the margin are not."""
    ranges = [
        Range(
            rank,
            "stage",
            "actor_update",
            step,
            0.0,
            100_000.0 * (1.3 if rank == 617 else 1.0 + (rank % 7) / 100),
        )
        for rank in range(1024)
        for step in (1, 2, 3)
    ]
    rows = find_stragglers(ranges, "stage", 0.2)
    assert {(r.rank, r.step) for r in rows} == {(617, 1), (617, 2), (617, 3)}
    assert rows[0].median_ms == statistics.median(
        100 * (1.0 + (r % 7) / 100) for r in range(1024) if r != 617
    )
    named = [
        g
        for g in lags(
            {("stage", "actor_update"): per_step(ranges, "stage")["actor_update"]}, None, 0.2, 1.0
        )
        if g.consistent
    ]
    assert [(g.rank, g.behind, g.compared) for g in named] == [(617, 3, 3)]
