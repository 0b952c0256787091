"""``capture`` against a job whose clock is far off the command's, through the real folder
channel: no decision compares the two clocks. The exit codes are the table's: one that ends
while the command waits gives the code for "no job took it", a stopped command withdraws its
request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import MEANINGS, Exit

pytestmark = pytest.mark.slow  # training jobs in a subprocess

#: A job whose wall clock is ``sys.argv[2]`` seconds off the machine's (``time.time`` and
#: ``time.time_ns`` moved for the whole process, as on a host whose clock is off); it steps
#: every 20 ms, looking for requests as any job with on_demand does, for at most
#: ``sys.argv[3]`` steps.
JOB = textwrap.dedent("""
    import sys, time
    skew = float(sys.argv[2])
    real, real_ns = time.time, time.time_ns
    time.time = lambda: real() + skew
    time.time_ns = lambda: real_ns() + int(skew * 1e9)
    from mindspeed_prof import Profiler
    prof = Profiler.from_config({"profile_save_path": sys.argv[1]}, rank=0)
    for step in range(1, int(sys.argv[3]) + 1):
        with prof.step(step):
            time.sleep(0.02)
        if step == 1:
            print("ready", flush=True)
    prof.close()
""")


def _job(tmp_path: Path, root: Path, skew_s: float, steps: int = 1_000_000) -> Any:
    script = tmp_path / "job.py"
    script.write_text(JOB)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(root), str(skew_s), str(steps)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n", proc.stderr
    return proc


@pytest.mark.parametrize("skew_s", [3600.0, -3600.0], ids=["job_ahead", "job_behind"])
def test_a_job_an_hour_off_the_commands_clock_takes_the_request(
    tmp_path: Path, skew_s: float, capsys: pytest.CaptureFixture[str]
) -> None:
    """The probe: a job whose clock was ahead by more than ``--timeout`` dropped the request
    as expired while the command waited, which then exited 5. Ahead or behind by an hour
    (60 times the timeout), the job takes it, every rank starts on the planned step, exit 0."""
    root = tmp_path / "out"
    proc = _job(tmp_path, root, skew_s)
    try:
        code = main(
            ["capture", str(root), "--steps", "2", "--level", "level_none", "--timeout", "60"]
        )
    finally:
        proc.terminate()
        _, job_err = proc.communicate(timeout=60)
    out, err = capsys.readouterr()
    assert code == Exit.OK, out + err + job_err
    assert "expired" not in job_err and "no worker told its step" not in err
    planned = int(err.split(", from step ")[1].split(":")[0])
    (trace,) = (root / "triggered" / "integrated").glob("*.mstx.trace.json")
    steps = sorted(
        {
            e["args"]["step"]
            for e in json.loads(trace.read_text())["traceEvents"]
            if e.get("cat") == "step"
        }
    )
    assert steps == [planned, planned + 1]
    requests = root / "control" / "requests"
    assert not requests.exists() or list(requests.iterdir()) == []  # withdrawn


def test_a_job_that_ends_while_the_command_waits_gives_the_tables_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """31.6: once the job is gone the command exits 5, and the exit table (the one ``--help``
    and the docs show) says 5 is that."""
    root = tmp_path / "out"
    root.mkdir()
    proc = _job(tmp_path, root, 0.0, steps=5)
    assert proc.wait(timeout=60) == 0  # ended: nobody looks any more
    code = main(["capture", str(root), "--steps", "1", "--timeout", "2"])
    err = capsys.readouterr().err
    assert code == Exit.NOT_RUNNING == 5
    assert "it ended while the command waited" in MEANINGS["capture"][Exit(code)]
    assert err.splitlines()[-1].startswith("mindspeed-prof: capture: no job took request ")


def test_a_command_stopped_by_sigterm_withdraws_its_request(tmp_path: Path) -> None:
    """With no clock shared with the job, the command's withdrawal is the request's expiry:
    SIGTERM (``timeout 60 mindspeed-prof capture ...``) withdraws it as Ctrl-C does."""
    root = tmp_path / "out"
    root.mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mindspeed_prof.cli",
            "capture",
            str(root),
            "--steps",
            "1",
            "--timeout",
            "600",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    requests = root / "control" / "requests"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not [
        p for p in (os.listdir(requests) if requests.is_dir() else []) if p.endswith(".json")
    ]:
        time.sleep(0.05)
    assert [p for p in os.listdir(requests) if p.endswith(".json")], "no request posted"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == (
        "mindspeed-prof: interrupted (no partial output or cache entry left)"
    )
    assert os.listdir(root) == []  # the request, its mark and the folders made for it gone
