"""db captures: read a batch of rows at a time, with no size limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from capture_fixtures import make_run

import mindspeed_prof.analysis.readers as readers
import mindspeed_prof.analysis.readers.kineto.sqlite as sqlite_reader
from mindspeed_prof.analysis.readers import read


@pytest.fixture(scope="module")
def db_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_run(
        tmp_path_factory.mktemp("db"), ranks=(0,), steps=2, profile_export_type="db", mstx=False
    )
    (path,) = root.rglob("*.db")
    return path


def test_batches_of_rows_give_what_the_whole_capture_gives(db_capture: Path, monkeypatch) -> None:
    whole = read(db_capture)
    monkeypatch.setattr(sqlite_reader, "BATCH", 7)  # host ops cut mid-stack, steps mid-way
    sliced = read(db_capture)
    assert whole.events == sliced.events > 7 * 10
    for key in ("ranges", "ops", "kernels", "runtime", "device", "memory", "problems", "meta"):
        assert getattr(sliced, key) == getattr(whole, key), key
    assert [r.name for r in whole.ranges if r.kind == "step"] == [
        "ProfilerStep#1",
        "ProfilerStep#2",
    ]


def test_no_size_limit_for_db(db_capture: Path, monkeypatch) -> None:
    monkeypatch.setattr(readers, "MAX_BYTES", 100)
    assert read(db_capture).ops
