"""A range file whose header is hostile (a run id of 5,000 characters, a rank of 10**12) is one
note naming the file in every answer, and never becomes "the newest run" (issue 42, item 11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import analyse, analyse_runs


def real_capture(root: Path) -> Path:
    cfg = {
        "profile": True,
        "profile_save_path": str(root),
        "profile_level": "level_none",
        "profile_step_start": 1,
        "profile_step_end": 4,
    }
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, 5):
            with prof.step(step), prof.stage("actor_update"):
                pass
    (path,) = root.rglob("*.mstx.trace.json")
    return path


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run", "z" * 5000),
        ("run", "evil\nrun"),
        ("run", "../../etc"),
        ("rank", 10**12),
    ],
)
def test_a_hostile_header_is_one_note_and_never_the_newest_run(
    tmp_path: Path, field: str, value: object
) -> None:
    root = tmp_path / "out"
    real = real_capture(root)
    doc = json.loads(real.read_text())
    run = doc["mindspeed_prof"]["run"]
    header = doc["mindspeed_prof"]
    header[field] = value
    header["rank"] = 1 if field != "rank" else value
    for key in ("wall_ns", "trace_ns"):  # later than the real run: it would be the newest
        header["clock"][key] += 10**12
    hostile = real.parent / "rank1_evil_1_abc123_step1.mstx.trace.json"
    hostile.write_text(json.dumps(doc))
    answer = analyse(root, cache=False)
    assert answer.run is not None and answer.run.id == run
    notes = [line for line in answer.bad if "its mindspeed_prof header" in line]
    assert len(notes) == 1 and notes[0].startswith(f"{hostile}: ")
    assert "\n" not in notes[0] and len(notes[0]) < 400
    every = analyse_runs(root, cache=False, run="all")
    assert all(
        str(a.run.id).isprintable() and len(str(a.run.id)) <= 64 + 40
        for a in every
        if a.run is not None
    )
    for each in every:  # said once in every answer, whichever run the file fell into
        assert sum("its mindspeed_prof header" in line for line in each.bad) == 1
