"""``compare``'s gate: the rank test by hand against exact counts, its properties on random
steps, and the shift it reads."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mindspeed_prof.analysis.gate import (
    ALPHA,
    EXACT_SPLITS,
    asked,
    hodges_lehmann,
    mann_whitney_greater,
    shift,
    slower,
)


@pytest.mark.parametrize(
    ("a", "b", "p"),
    [
        ([1.0, 2.0], [3.0, 4.0], 1 / 6),  # the top two of four: one split of six
        ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0], 1 / 20),
        ([4.0, 5.0, 6.0], [1.0, 2.0, 3.0], 1.0),  # B below A: every split is at least as high
        # ties at mid-ranks 1, 2.5, 2.5, 4: B's sum 6.5; sums of two of them: 3.5 3.5 5 5 6.5 6.5
        ([1.0, 2.0], [2.0, 3.0], 2 / 6),
        ([5.0, 5.0], [5.0, 5.0], 1.0),  # all tied: no evidence
        ([1.0], [2.0], 1 / 2),
    ],
)
def test_exact_p_by_hand(a: list[float], b: list[float], p: float) -> None:
    assert mann_whitney_greater(a, b) == pytest.approx(p)


def test_six_and_six_steps_fully_apart_is_the_smallest_p() -> None:
    a, b = [10.0 + i / 10 for i in range(6)], [40.0 + i / 10 for i in range(6)]
    assert mann_whitney_greater(a, b) == pytest.approx(1 / math.comb(12, 6))


def test_the_normal_approximation_agrees_with_the_exact_count() -> None:
    """Past ``EXACT_SPLITS`` splits the p-value is the normal approximation: on samples the
    exact count can still do (10 and 10 steps: 184,756 splits), the two agree within 0.01."""
    import random

    import mindspeed_prof.analysis.gate as gate

    rng = random.Random(7)
    for _ in range(3):
        a = [rng.gauss(10, 1) for _ in range(10)]
        b = [rng.gauss(10.7, 1) for _ in range(10)]
        limit = gate.EXACT_SPLITS
        try:
            gate.EXACT_SPLITS = math.comb(20, 10)
            exact = mann_whitney_greater(a, b)
            gate.EXACT_SPLITS = 0
            approx = mann_whitney_greater(a, b)
        finally:
            gate.EXACT_SPLITS = limit
        assert approx == pytest.approx(exact, abs=0.01)
    assert math.comb(20, 10) > EXACT_SPLITS  # the default uses the approximation there


steps = st.lists(st.floats(0.0, 1000.0, allow_nan=False), min_size=1, max_size=7)


@given(steps, steps)
def test_p_is_a_probability_and_the_two_sides_cover_every_split(
    a: list[float], b: list[float]
) -> None:
    up, down = mann_whitney_greater(a, b), mann_whitney_greater(b, a)
    assert 0.0 < up <= 1.0 and 0.0 < down <= 1.0
    assert up + down >= 1.0 - 1e-9  # a split at least as high, or at least as low: every one


@given(steps, steps, st.floats(0.001, 100.0))
def test_b_slower_never_raises_p_and_shifts_the_estimate(
    a: list[float], b: list[float], more: float
) -> None:
    later = [x + more for x in b]
    assert hodges_lehmann(a, later) == pytest.approx(hodges_lehmann(a, b) + more, abs=1e-9)
    # without ties the reference distribution is the same before and after: p can only fall
    # (ties change it: mid-ranks make other splits possible)
    assume(len({*a, *b}) == len(a) + len(b) and len({*a, *later}) == len(a) + len(later))
    assert mann_whitney_greater(a, later) <= mann_whitney_greater(a, b) + 1e-12


def test_hodges_lehmann_ignores_a_one_off_stall() -> None:
    a = [10.0] * 6
    assert hodges_lehmann(a, [10.0] * 5 + [25.0]) == 0.0  # the mean would say +2.5 ms
    assert hodges_lehmann(a, [40.0] * 6) == 30.0


def test_a_shift_is_slower_when_large_and_real_over_every_row_asked() -> None:
    six = ([10.0, 10.2, 9.9, 10.1, 10.0, 10.3], [40.0, 40.1, 39.8, 40.2, 40.0, 40.4])
    s = shift(*six)
    assert s.enough and s.p < ALPHA and s.shift_ms == pytest.approx(30.0)
    assert s.large(10.0, 0.05, 1.0) and not s.large(10.0, 3.5, 1.0)
    assert not s.large(10.0, 0.05, 31.0)  # under the noise floor
    assert slower([six], 0.05, 1.0) == [True]
    stall = ([10.0] * 6, [10.0] * 5 + [25.0])
    assert shift(*stall).enough and slower([stall], 0.05, 1.0) == [False]
    few = ([10.0, 10.1], [12.0, 12.2])  # 1 in 6 at best: no test can tell, nothing is called
    assert not shift(*few).enough and slower([few], 0.05, 1.0) == [False]


def test_many_rows_asked_need_a_smaller_p_each() -> None:
    """Four and four steps fully apart: 1 in 70 for one row. Alone, enough; one such row among
    12 (the smallest against 0.05 / 12) not; with six steps a side (1 in 924) enough. The same
    change on all 12 rows at once (a stage slower on every rank) is told from four steps."""
    four = ([10.0, 10.1, 10.2, 10.3], [20.0, 20.1, 20.2, 20.3])
    same = ([10.0, 12.0, 14.0, 16.0], [16.0, 14.0, 12.0, 10.0])  # spread: asked, not moved
    assert slower([four], 0.05, 1.0) == [True]
    assert slower([four] + [same] * 11, 0.05, 1.0) == [False] * 12
    six = ([10.0 + i / 10 for i in range(6)], [20.0 + i / 10 for i in range(6)])
    flat = ([10.0 + 2 * i for i in range(6)],) * 2
    assert slower([six] + [flat] * 11, 0.05, 1.0) == [True] + [False] * 11
    assert slower([four] * 12, 0.05, 1.0) == [True] * 12


def test_rows_are_asked_about_whatever_their_shift() -> None:
    """A row whose shift looks large is tested among every row some split of whose steps
    could be large, not among the large ones only: picking the rows chance moved most and
    testing them alone named one of 32 healthy rows slower (p = 0.036 over 12 and 12 steps)."""
    a = [10 + i * 0.5 for i in range(12)]
    moved = (a, [x + 1.5 for x in a])  # +12%, p between 0.01 and 0.05
    assert 0.01 < shift(*moved).p < ALPHA and shift(*moved).large(12.75, 0.05, 1.0)
    quiet = (a, [x + 0.1 for x in a])  # a small shift: under the threshold, but asked
    assert not shift(*quiet).large(12.75, 0.05, 1.0)
    assert slower([moved], 0.05, 1.0) == [True]
    assert slower([moved] + [quiet] * 31, 0.05, 1.0) == [False] * 32
    few = ([1.0], [2.0])  # one step a side: no test can tell, not asked
    assert asked([moved] + [quiet] * 31 + [few], 0.05, 1.0) == list(range(32))


def test_rows_no_split_could_make_large_are_not_asked() -> None:
    """Steps that all lie within the floor (or within ``fraction`` of the smallest) cannot
    shift by more whichever run holds them: leaving them out spares the others a larger
    family, so four steps a side tell one changed row among many such."""
    four = ([10.0, 10.1, 10.2, 10.3], [20.0, 20.1, 20.2, 20.3])
    tiny = ([0.10, 0.11, 0.12, 0.13], [0.12, 0.13, 0.14, 0.15])  # under a 1 ms floor
    steady = ([100.0, 101.5, 101.0, 100.2], [101.0, 100.5, 102.0, 100.1])  # within 5%
    pairs = [four] + [tiny] * 10 + [steady] * 10
    assert asked(pairs, 0.05, 1.0) == [0]
    assert slower(pairs, 0.05, 1.0) == [True] + [False] * 20
    assert asked(pairs, 0.01, 1.0) == [0, *range(11, 21)]  # a 1% gate asks the steady rows
    assert slower(pairs, 0.01, 1.0)[0] is False  # 1 in 70 is not 0.05 / 11


@given(
    st.lists(st.floats(0.5, 50.0), min_size=3, max_size=8),
    st.lists(st.floats(0.5, 50.0), min_size=3, max_size=8),
    st.floats(0.0, 1.0),
    st.floats(0.0, 5.0),
)
def test_a_row_never_asked_is_never_large(
    a: list[float], b: list[float], fraction: float, floor_ms: float
) -> None:
    """Leaving a row out of the family never drops one the gate could call slower."""
    if not asked([(a, b)], fraction, floor_ms):
        assert not shift(a, b).large(statistics.median(a), fraction, floor_ms)
