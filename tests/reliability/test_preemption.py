"""Preemption: SIGTERM with a large level1 capture open. The trainer's own handler (its
checkpoint) runs at once, before any capture is exported; what the profiler keeps is readable.

A real SIGTERM, sent by the training process to itself mid-stage, the send time taken in that
process. Under load the wall clock between the send and the handler says little, so the test
asserts the order (the handler ran before the export started), the process CPU time between
the two (what our handler spent before the trainer's), and a generous wall bound.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import count

pytestmark = pytest.mark.slow  # training jobs in a subprocess, signalled

OPS = 2500  # tiny ops per step, three steps: a level1 trace of about 16 MB

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    import torch
    from mindspeed_prof import Profiler, mstx
    from mindspeed_prof.capture.backends.torch import TorchBackend

    out, mode, ops = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])

    def note(what):
        print(what, time.monotonic(), time.process_time(), flush=True)

    export = TorchBackend._export
    def timed_export(self, prof, target):  # when the op trace's export starts
        note("EXPORT")
        return export(self, prof, target)
    TorchBackend._export = timed_export

    stop = []
    def checkpoint(signum, frame):  # the trainer's own handler, there before the profiler
        note("HANDLER")
        (out / "checkpoint.pt").write_bytes(b"saved")
        if mode == "exit":
            sys.exit(0)
        if mode == "killed":  # the grace period is over before the step ends
            os.kill(os.getpid(), signal.SIGKILL)
        stop.append(signum)  # "flag": training stops at the end of this step

    signal.signal(signal.SIGTERM, checkpoint)
    prof = Profiler.from_config({"integrated": {
        "profile": True, "mstx": True, "profile_level": "level1", "profile_step_start": 1,
        "profile_step_end": 100, "profile_save_path": str(out)}}, rank=0)
    x = torch.zeros(4)
    for step in range(1, 100):
        with prof.step(step):
            with prof.stage("actor_update"):
                for _ in range(ops):
                    x = x + 1
                if step == 3:
                    with mstx.range("before_the_signal"):
                        pass
                    note("SENT")
                    os.kill(os.getpid(), signal.SIGTERM)
                    x = x + 1
        if stop:
            break
    prof.close()
    note("DONE")
""")


@pytest.mark.parametrize("mode", ["exit", "flag"])
def test_the_trainers_sigterm_handler_runs_before_any_export(tmp_path: Path, mode: str) -> None:
    """``exit``: the handler checkpoints and exits through the open stage and step (the
    capture is exported as the exit unwinds them). ``flag``: it checkpoints and returns;
    training stops at the step's end and closes the profiler itself."""
    script, out = tmp_path / "train.py", tmp_path / "out"
    script.write_text(SCRIPT)
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, str(script), str(out), mode, str(OPS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    count("signals with a large capture open")
    assert proc.returncode == 0, proc.stderr
    notes = [line.split() for line in proc.stdout.splitlines()]
    order = [n[0] for n in notes]
    assert order == ["SENT", "HANDLER", "EXPORT"] + (["DONE"] if mode == "flag" else [])
    times = {n[0]: (float(n[1]), float(n[2])) for n in notes}
    (sent_wall, sent_cpu), (ran_wall, ran_cpu) = times["SENT"], times["HANDLER"]
    assert ran_cpu - sent_cpu < 1.0  # what ran in between: our cheap keep, never an export
    assert ran_wall - sent_wall < 10.0  # generous: the machine may be loaded
    assert (out / "checkpoint.pt").read_bytes() == b"saved"
    folder = out / "integrated"
    (trace,) = folder.glob("*.pt.trace.json")
    (ranges,) = folder.glob("*.mstx.trace.json")
    assert trace.stat().st_size > 8_000_000  # a large capture was open
    for path in (trace, ranges):
        events = json.loads(path.read_text())["traceEvents"]
        steps = {e["name"] for e in events if str(e.get("name")).startswith("ProfilerStep#")}
        assert steps == {"ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3"}, path


def test_a_sigkill_after_the_handler_keeps_the_ranges_recorded_before_the_signal(
    tmp_path: Path,
) -> None:
    """The handler returns, then the process is SIGKILLed mid-step (the grace period ended):
    the range file still holds what was recorded in that step before the signal, written out
    by the signal handler (a step end would have written it, but none came)."""
    script, out = tmp_path / "train.py", tmp_path / "out"
    script.write_text(SCRIPT)
    out.mkdir()
    proc = subprocess.run(
        [sys.executable, str(script), str(out), "killed", "10"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    count("signals with a large capture open")
    assert proc.returncode == -9, proc.stderr
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["SENT", "HANDLER"]
    assert (out / "checkpoint.pt").read_bytes() == b"saved"
    (ranges,) = (out / "integrated").glob("*.mstx.trace.json")
    events = json.loads(ranges.read_text())["traceEvents"]
    assert [
        (e["name"], e["args"]["step"])
        for e in events
        if e["cat"] != "step" and e["args"]["step"] == 3
    ] == [("before_the_signal", 3)]
