"""One process writing twice to one folder (same rank, step and stage) keeps both captures."""

from __future__ import annotations

import json
from pathlib import Path

from mindspeed_prof import Profiler, mstx


def capture_once(root: Path, marker: str, **fields: object) -> list[Path]:
    prof = Profiler.from_config(
        {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "profile_save_path": str(root),
            **fields,
        },
        rank=0,
    )
    with prof, prof.step(1), prof.stage("actor_update"), mstx.range(marker):
        pass
    (record,) = prof.captures
    return [Path(f) for f in record.files]


def ranges(path: Path) -> set[str]:
    return {e["name"] for e in json.loads(path.read_text())["traceEvents"]}


def test_second_job_in_one_process_gets_its_own_files(tmp_path: Path) -> None:
    first = capture_once(tmp_path, "job1")
    second = capture_once(tmp_path, "job2")
    third = capture_once(tmp_path, "job3")
    assert len({*first, *second, *third}) == 3  # one spans file each, no name reused
    assert all(p.parent == first[0].parent for p in second + third)
    assert [ranges(f) & {"job1", "job2", "job3"} for f in (*first, *second, *third)] == [
        {"job1"},
        {"job2"},
        {"job3"},
    ]  # the earlier captures are intact


def test_stage_captures_twice_in_one_folder(tmp_path: Path) -> None:
    first = capture_once(tmp_path, "a", stage="actor_update")
    second = capture_once(tmp_path, "b", stage="actor_update")
    assert first[0] != second[0] and first[0].parent.name == "actor_update"
    assert "a" in ranges(first[0]) and "b" in ranges(second[0])
