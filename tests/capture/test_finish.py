"""The finish hook and relocated results (verl's): the command runs once, at close, on the ranks
chosen, told where the captures are; a failing command is one warning; relocated captures are
flat in the save root and their records say so."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler
from mindspeed_prof.capture.finish import runs_hook

WRITE_ENV = (
    f'{sys.executable} -c "import os, json; json.dump({{k: v for k, v in os.environ'
    f".items() if k.startswith('VERL_PROFILE_')}}, open(os.environ['OUT'], 'a'))\""
)


def run(root: Path, rank: int, **extensions: Any) -> Profiler:
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_ranks": [0],
                "profile_save_path": str(root),
            },
            "extensions": {"backend": "none", "profile_continuous_steps": False, **extensions},
        },
        rank=rank,
    )
    for step in (1, 2, 3):
        with prof.step(step), prof.stage("actor_update"):
            pass
    prof.close()
    return prof


@pytest.mark.parametrize(("ranks", "runs"), [(None, [0]), ("all", [0, 1]), ([1], [1])])
def test_the_hook_runs_once_on_the_ranks_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ranks: object, runs: list[int]
) -> None:
    ran = []
    for rank in (0, 1):
        out = tmp_path / f"env{rank}.json"
        monkeypatch.setenv("OUT", str(out))
        run(tmp_path / "save", rank, finish_hook_cmd=WRITE_ENV, finish_hook_ranks=ranks)
        if out.exists():
            env = json.loads(out.read_text())  # one JSON object: it ran once
            assert env["VERL_PROFILE_SAVE_PATH"] == str(tmp_path / "save")
            assert (
                env["VERL_PROFILE_RANK"] == str(rank) and env["VERL_PROFILE_ROLE"] == "integrated"
            )
            ran.append(rank)
    assert ran == runs
    assert [runs_hook(ranks, r, r == 0) for r in (0, 1)] == [r in runs for r in (0, 1)]


def test_a_failing_hook_is_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        run(
            tmp_path,
            0,
            finish_hook_cmd=f"{sys.executable} -c \"import sys; sys.exit('upload refused')\"",
        )
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "mindspeed-prof: finish_hook_cmd failed on rank 0 (exit code 1): upload "
        "refused; the captures are where they were written"
    )


def test_relocated_captures_are_flat_and_their_records_say_so(tmp_path: Path) -> None:
    prof = run(tmp_path, 0, relocate_results=True)
    files = [Path(f) for c in prof.captures for f in c.files]
    assert len(files) == 2 and all(f.parent == tmp_path and f.is_file() for f in files)
    assert not list((tmp_path / "integrated").glob("*.trace.json"))
