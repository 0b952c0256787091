"""``mindspeed-prof capture``: the command against no job, bad arguments and a running job."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit


def test_command_when_no_job_runs_says_so(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capture", str(tmp_path), "--timeout", "0.5"]) == Exit.NOT_RUNNING
    assert "no job took request" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # withdrawn, unmarked, the folders it made removed


def test_command_on_a_root_no_job_saves_to_gives_up_soon_and_leaves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["capture", str(tmp_path / "a" / "nope"), "--timeout", "120"]) == \
        Exit.NOT_RUNNING
    assert time.monotonic() - started < 30
    (line,) = capsys.readouterr().err.splitlines()[-1:]
    assert f"no job looked at {tmp_path / 'a' / 'nope'} within" in line
    assert list(tmp_path.iterdir()) == []  # what it made for the question, removed


TRAINER = textwrap.dedent('''
    import sys, time
    from mindspeed_prof import Profiler, mstx
    prof = Profiler.from_config({"profile_save_path": sys.argv[1],
                                 "flight_recorder_steps": 2}, rank=0)
    for step in range(1, 100000):
        with prof.step(step):
            with mstx.range("work"):
                time.sleep(0.01)
''')


def test_command_against_a_running_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "train.py"
    script.write_text(TRAINER)
    root = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, str(script), str(root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        code = main(["capture", str(root), "--steps", "2", "--level", "level_none",
                     "--flight", "--timeout", "60"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"analyse: mindspeed-prof analyse {root / 'triggered'}" in out
    assert f"rank 0 (integrated) on {host_name()}: written: {root / 'triggered'}" in out
    assert len(list((root / "triggered" / "integrated").iterdir())) == 1
    assert any(p.name.endswith(".mstx.trace.json") for p in (root / "flight").iterdir())

