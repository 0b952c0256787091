"""``sweep_summary.json`` and the jobs' records: written and read back by analysis.sweep."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from mindspeed_prof.analysis.sweep import (
    RECORDS,
    SUMMARY_NAME,
    SweepRow,
    SweepSummary,
    _records,
    as_dicts,
    profiled,
    read_summary,
    record_job,
)
from mindspeed_prof.jsonio import write_json

#: A row as the summary wrote it before the rows were typed (every key, in this order).
OLD_ROW = {
    "job": 0,
    "status": "completed",
    "stage": ["actor_generate", "actor_update"],
    "captures": 4,
    "files": 7,
    "ms_per_step": 12.5,
    "ms_per_stage": 3.25,
    "overrides": ["profiler_config=stage_scoped"],
    "save_root": "/x/0/prof",
    "note": None,
    "error": None,
}


def test_a_summary_written_before_reads_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / SUMMARY_NAME
    path.write_text(json.dumps({"sweep_dir": str(tmp_path), "jobs": [OLD_ROW]}, indent=2))
    summary = read_summary(path)
    assert summary.sweep_dir == str(tmp_path) and as_dicts(summary.jobs) == [OLD_ROW]
    write_json(path, msgspec.to_builtins(summary))  # as sweep_summary writes it
    assert json.loads(path.read_text()) == {"sweep_dir": str(tmp_path), "jobs": [OLD_ROW]}
    assert list(json.loads(path.read_text())["jobs"][0]) == list(OLD_ROW)  # the keys' order


def test_a_bare_list_of_rows_and_missing_fields_read_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / SUMMARY_NAME
    path.write_text(json.dumps([{"job": 3, "status": "failed", "stage": "critic_update"}]))
    summary = read_summary(path)
    assert summary == SweepSummary(
        str(tmp_path), [SweepRow(job=3, status="failed", stage="critic_update")]
    )
    assert profiled(summary.jobs) and not profiled([SweepRow(job=0)])


def test_a_summary_that_is_no_summary_is_refused(tmp_path: Path) -> None:
    path = tmp_path / SUMMARY_NAME
    path.write_text('{"jobs": "nope"}')
    with pytest.raises(msgspec.ValidationError):
        read_summary(path)


def test_job_records_round_trip_and_odd_ones_are_skipped(tmp_path: Path) -> None:
    record_job(tmp_path, 1, tmp_path / "a" / "manifest.json", True)
    assert json.loads((tmp_path / RECORDS / "job1.json").read_text()) == {
        "job": 1,
        "manifest": str(tmp_path / "a" / "manifest.json"),
        "shared": True,
    }
    (tmp_path / RECORDS / "job2.json").write_text('{"job": 2}')  # no manifest named
    (tmp_path / RECORDS / "job3.json").write_text("not json")
    (tmp_path / RECORDS / "job4.json").write_text('{"job": "4", "manifest": "m", "shared": 0}')
    assert _records(tmp_path) == {
        1: (tmp_path / "a" / "manifest.json", True),
        4: (Path("m"), False),
    }
