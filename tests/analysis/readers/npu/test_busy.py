"""Device rows from kernel_details' tasks: merged intervals by hand, and their invariants."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.npu.busy import Task, is_comm, task, task_rows


def _t(step: int | None, start: str, dur: str, comm: bool = False) -> Task:
    one = task(step, start, dur, comm)
    assert one is not None
    return one


def test_one_step_by_hand() -> None:
    """Compute [0,10] and [5,15], communication [12,20] and [30,35] (us): busy [0,20] and
    [30,35] = 25, compute 15, communication 13, both at once [12,15] = 3, window 35, free 10."""
    tasks = [
        _t(7, "1736408883704000.000", "10"),
        _t(7, "1736408883704005.000", "10"),
        _t(7, "1736408883704012.000", "8", True),
        _t(7, "1736408883704030.000", "5", True),
    ]
    (row,) = task_rows(tasks)
    assert (row.step, row.compute_ms, row.comm_ms, row.overlap_ms, row.idle_ms) == (
        7,
        0.015,
        0.013,
        0.003,
        0.010,
    )
    assert (row.comm_exposed_ms, row.step_ms, row.span_ms, row.busy_ms) == (
        0.010,
        0.035,
        0.035,
        0.025,
    )


def test_nanoseconds_of_absolute_times_are_kept() -> None:
    """At 1.7e15 us a float is 0.25 us coarse; decimals keep the file's nanoseconds."""
    (row,) = task_rows(
        [_t(None, "1736408883704643.212", "0.001"), _t(None, "1736408883704643.214", "0.002")]
    )
    assert row.busy_ms == pytest.approx(3e-6, abs=1e-15) and row.idle_ms == pytest.approx(
        1e-6, abs=1e-15
    )


def test_steps_in_order_none_last() -> None:
    rows = task_rows([_t(None, "0", "1"), _t(3, "10", "2"), _t(2, "20", "4", True)])
    assert [(r.step, r.compute_ms, r.comm_ms) for r in rows] == [
        (2, 0.0, 0.004),
        (3, 0.002, 0.0),
        (None, 0.001, 0.0),
    ]


@pytest.mark.parametrize(
    "start, dur",
    [("N/A", "1"), ("1", ""), ("", "1"), ("1", "-1"), ("nan", "1"), ("1", "inf"), ("1\t", "x")],
)
def test_tasks_without_a_time_are_left_out(start: str, dur: str) -> None:
    assert task(1, start, dur, False) is None


def test_a_task_with_a_padded_start_is_read() -> None:
    """torch_npu pads timestamps with a tab."""
    assert _t(1, "1736408883704643.212\t", "53.741")[1:3] == (
        Decimal("1736408883704643.212"),
        Decimal("1736408883704696.953"),
    )


@pytest.mark.parametrize(
    "core, name, comm",
    [
        ("HCCL", "hcom_allReduce__1", True),
        ("COMMUNICATION", "x", True),
        (" hccl ", "x", True),
        ("N/A", "hcom_broadcast__3_0_1", True),
        ("AI_CORE", "MatMul", False),
        ("AI_VECTOR_CORE", "hcomish", False),
        ("DSA_SQE", "DSAGenBitMask", False),
    ],
)
def test_communication_tasks_by_core_or_name(core: str, name: str, comm: bool) -> None:
    assert is_comm(core, name) is comm


_TASKS = st.lists(
    st.tuples(
        st.sampled_from([None, 1, 2]), st.integers(0, 10**6), st.integers(0, 5000), st.booleans()
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(raw=_TASKS)
def test_every_row_adds_up_to_its_window(raw: list[tuple[int | None, int, int, bool]]) -> None:
    """Per step: compute + communication - overlap + idle is the window, busy is compute +
    communication - overlap; every figure lies in [0, window]; one row per step."""
    tasks = [
        _t(s, f"{1736408883704643 + a / 1000:.3f}", f"{d / 1000:.3f}", c) for s, a, d, c in raw
    ]
    rows = task_rows(tasks)
    assert [r.step for r in rows] == sorted({s for s, *_ in raw}, key=lambda s: (s is None, s or 0))
    for r in rows:
        assert r.step_ms is not None and r.busy_ms is not None
        assert r.compute_ms + r.comm_ms - r.overlap_ms + r.idle_ms == pytest.approx(
            r.step_ms, abs=1e-9
        )
        assert r.compute_ms + r.comm_ms - r.overlap_ms == pytest.approx(r.busy_ms, abs=1e-9)
        for value in (r.compute_ms, r.comm_ms, r.overlap_ms, r.idle_ms, r.busy_ms):
            assert -1e-12 <= value <= r.step_ms + 1e-12
        assert r.overlap_ms <= min(r.compute_ms, r.comm_ms) + 1e-12
