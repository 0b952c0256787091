"""What a job lists as written (the manifest's ``files``): exactly its own captures' files and
its Ray workers' reported ones, found without walking the save root, however crowded."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.formats import CLUSTER_SUMMARY
from mindspeed_prof.formats.manifest import job_files
from mindspeed_prof.formats.record import CaptureRecord, FileEntry


def _run(root: Path, steps: int = 3) -> list[CaptureRecord]:
    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "stage": "actor_update",
            "profile_step_start": 1,
            "profile_step_end": steps + 1,
            "on_demand": False,
            "profile_save_path": str(root),
        },
        rank=0,
        run="mine",
    )
    for step in range(1, steps + 1):
        with prof.step(step), prof.stage("actor_update"):
            (root / "dataset" / f"written_meanwhile{step}.bin").write_bytes(
                b"y"
            )  # another process's
    prof.close()
    return list(prof.captures)


def test_a_crowded_root_is_never_walked_and_only_the_job_s_files_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A root holding 2,000 dataset files, 3 of them written while the job ran: the list is
    the job's 3 range files with their sizes; the root and the dataset are never listed."""
    dataset = tmp_path / "dataset"
    dataset.mkdir()
    for i in range(2000):
        (dataset / f"shard{i}.bin").write_bytes(b"x")
    records = _run(tmp_path)
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        listed.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "walk", lambda *a, **k: pytest.fail("the root was walked"))
    files = job_files(tmp_path, records, "mine")
    assert not any(p in (str(tmp_path), str(dataset)) for p in listed)
    own = sorted(f for r in records for f in r.files)
    assert len(own) == 3 and sorted(str(tmp_path / f.path) for f in files) == own
    assert all(f.bytes == (tmp_path / f.path).stat().st_size for f in files)


def test_workers_files_of_this_run_are_listed_where_they_are_still_there(tmp_path: Path) -> None:
    """The cluster summary's rows of this run add their files (relative to the root where
    under it); another run's rows and files that are gone are not listed."""
    (tmp_path / "actor").mkdir()
    (tmp_path / "actor" / "rank1_w.mstx.trace.json").write_bytes(b"12345")
    (tmp_path / "actor" / "rank2_old.mstx.trace.json").write_bytes(b"1")
    summary = {
        "workers": [
            {
                "run": "mine",
                "files": [
                    {"path": str(tmp_path / "actor" / "rank1_w.mstx.trace.json"), "bytes": 5},
                    {"path": str(tmp_path / "actor" / "gone.json"), "bytes": 3},
                ],
            },
            {
                "run": "earlier",
                "files": [
                    {"path": str(tmp_path / "actor" / "rank2_old.mstx.trace.json"), "bytes": 1}
                ],
            },
            "not a row",
        ]
    }
    (tmp_path / CLUSTER_SUMMARY).write_text(json.dumps(summary))
    assert job_files(tmp_path, [], "mine") == [FileEntry("actor/rank1_w.mstx.trace.json", 5)]
    assert job_files(tmp_path, [], "") == []  # no run id: no worker is known to be this job's
    (tmp_path / CLUSTER_SUMMARY).write_text("{not json")
    assert job_files(tmp_path, [], "mine") == []


def test_a_capture_folder_is_listed_file_by_file_and_outside_files_are_not(tmp_path: Path) -> None:
    """A capture that is a folder (torch_npu's) lists its files; a file outside the root is
    kept in its capture but not listed under the root."""
    folder = tmp_path / "integrated" / "rank0_ascend_pt"
    (folder / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_bytes(b"[]")
    outside = tmp_path.parent / f"{tmp_path.name}_outside.json"
    outside.write_bytes(b"{}")
    records = [CaptureRecord(files=[str(folder), str(outside)])]
    assert job_files(tmp_path, records, "") == [
        FileEntry("integrated/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", 2)
    ]
    assert records[0].files == [str(folder), str(outside)]
