"""Run ids: made sortable by start, told apart by their random part, checked as file names."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.formats.run import new_run_id, run_started, valid_run_id

times = st.floats(0.0, 4e9, allow_nan=False)  # up to the year 2096


def test_an_id_reads_its_start_in_utc_then_its_random_part() -> None:
    run = new_run_id(1_796_193_600.0, "3f9a2c")  # 2026-12-02 06:40:00 UTC
    assert run == "20261202-064000-3f9a2c"
    assert run_started(run) == 1_796_193_600.0


@given(times, times)
def test_ids_sort_as_their_starts(a: float, b: float) -> None:
    ra, rb = new_run_id(a, "000000"), new_run_id(b, "ffffff")
    if int(a) < int(b):
        assert ra < rb
    assert run_started(ra) == float(int(a))  # to the second


def test_two_jobs_started_in_the_same_second_differ() -> None:
    ids = {new_run_id(1_796_191_200.0) for _ in range(200)}
    assert len(ids) > 195  # 24 random bits: a clash in 200 is about 1 in 800


def test_valid_ids_are_safe_file_name_parts() -> None:
    for good in ("20261202-064000-3f9a2c", "slurm-123456", "torchrun-0a1b2c3d4e5f-r1", "a"):
        assert valid_run_id(good)
    for bad in ("", "-x", ".hidden", "a/b", "a b", "x" * 65, "ü", None, 7, "../up"):
        assert not valid_run_id(bad)


def test_a_start_only_from_ids_made_here() -> None:
    assert run_started("slurm-123456") is None
    assert run_started("20261399-250000-abcdef") is None  # no 13th month
