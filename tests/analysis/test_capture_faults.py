"""Faults a capture carries into the analysis: a killed process, ranks that share no step."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit

KILLED = textwrap.dedent("""
    import os, signal, sys
    from mindspeed_prof import Profiler, mstx
    prof = Profiler.from_config({"integrated": {
        "profile": True, "mstx": True, "profile_level": "level_none",
        "profile_step_start": 1, "profile_step_end": 10, "profile_save_path": sys.argv[1]},
        "extensions": {"backend": "none"}})
    for step in range(1, 10):
        with prof.step(step):
            with mstx.range("work"):
                pass
        if step == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
""")


def killed_run(tmp_path: Path, at: int) -> Path:
    script = tmp_path / "train.py"
    script.write_text(KILLED)
    root = tmp_path / f"killed{at}"
    proc = subprocess.run([sys.executable, str(script), str(root), str(at)], timeout=120)
    assert proc.returncode == -9
    return root


@pytest.mark.parametrize("at", [1, 3])
def test_a_killed_capture_is_interrupted_in_analyse_and_doctor(
    tmp_path: Path, at: int, capsys: pytest.CaptureFixture[str]
) -> None:
    root = killed_run(tmp_path, at)
    (spans,) = root.rglob("*.mstx.trace.json")
    assert json.loads(spans.read_text())["traceEvents"]  # what was flushed is kept
    result = analyse(root, cache=False)
    (line,) = tables(result).problems
    assert "interrupted: never closed" in line and "killed" in line
    assert main(["analyse", str(root)]) == Exit.PARTIAL
    assert "interrupted: never closed" in capsys.readouterr().err
    health = doctor(root)
    assert [f.kind for f in health.findings] == ["interrupted"]
    assert "did the window's steps run" not in " ".join(f.message for f in health.findings)


def test_a_closed_capture_is_not(tmp_path: Path) -> None:
    from mindspeed_prof import Profiler

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "none"},
        }
    )
    with prof.step(1):
        pass
    prof.close()
    result = analyse(tmp_path, cache=False)
    assert tables(result).problems == [] and result.traces
    (spans,) = tmp_path.rglob("*.mstx.trace.json")
    assert json.loads(spans.read_text())["closed"] is True


def test_ranks_that_share_no_step_are_named(tmp_path: Path) -> None:
    from mindspeed_prof.testing.kineto import span, write_trace

    for rank, step in ((0, 1412), (1, 1489)):
        write_trace(
            tmp_path / f"rank{rank}.json",
            [span(f"ProfilerStep#{step}", 0, 100), span("actor_update", 10, 50)],
            distributedInfo={"rank": rank},
        )
    (line,) = [w for w in tables(analyse(tmp_path, cache=False)).warnings if "no step" in w]
    assert line.startswith("the ranks captured no step in common (rank 0: 1412; rank 1: 1489)")
    write_trace(
        tmp_path / "rank1.json", [span("ProfilerStep#1412", 0, 100)], distributedInfo={"rank": 1}
    )
    assert [w for w in tables(analyse(tmp_path, cache=False)).warnings if "no step" in w] == []
