"""Signals: SIGTERM and SIGINT flush the capture and keep their effect; SIGKILL loses one step."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent('''
    import signal, sys, time, torch
    # As an interactive run has them, even when pytest was started with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from mindspeed_prof import Profiler, mstx
    prof = Profiler.from_config({"integrated": {"profile": True, "mstx": True,
        "profile_level": sys.argv[2], "profile_step_start": 1, "profile_step_end": 1000,
        "profile_save_path": sys.argv[1]}}, rank=0)
    for step in range(1, 1000):
        with prof.step(step):
            with prof.stage("actor_generate"):
                torch.randn(8, 8) @ torch.randn(8, 8)
        if step == 3:
            print("READY", flush=True)
        time.sleep(0.02)
''')


def start(tmp_path: Path, level: str) -> subprocess.Popen[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), level],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "READY", proc.stderr.read() if proc.stderr else line
    time.sleep(0.1)
    return proc


def steps_in(path: Path) -> set[str]:
    events = json.loads(path.read_text())["traceEvents"]
    return {e["name"] for e in events if e["name"].startswith("ProfilerStep#")}


# Python ends an unhandled KeyboardInterrupt by re-raising SIGINT, so both exit by signal.
@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, -signal.SIGINT)])
def test_signal_flushes_then_keeps_its_effect(tmp_path: Path, sig: int, code: int) -> None:
    proc = start(tmp_path, "level0")
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert proc.returncode == code
    files = sorted((tmp_path / "out" / "integrated").iterdir())
    assert {f.name.split(".", 1)[1] for f in files} == {"pt.trace.json", "mstx.trace.json"}
    for f in files:
        assert {"ProfilerStep#1", "ProfilerStep#3"} <= steps_in(f)


def test_sigkill_keeps_spans_up_to_last_completed_step(tmp_path: Path) -> None:
    proc = start(tmp_path, "level_none")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    (spans,) = (tmp_path / "out" / "integrated").iterdir()
    assert {"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"} <= steps_in(spans)
