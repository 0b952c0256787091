"""Preemption during the window-end export: SIGTERM (or SIGINT) lands while the op-level trace
is written. The trace ends under its final name, complete; the range file holds every finished
step; the flight recorder's dump says ``signal``, never ``error``. A job killed outright is
named killed by doctor, with the steps of its window that have no trace; a whole trace left
under its temporary name is an unfinished rename, with the command that finishes it.

A real signal, sent by the training process to itself from inside torch's exporter (after it
wrote the file, before the rename: where the signal lands for a large trace), so the test does
not depend on timing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import count

from mindspeed_prof.analysis.doctor import doctor

SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    import torch
    from mindspeed_prof import Profiler
    from mindspeed_prof.formats.manifest import Manifest, host_info, manifest_name, write_manifest

    out, mode = Path(sys.argv[1]), sys.argv[2]
    # SIGINT as a job started from a shell has it (a test runner's worker may pass it ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sig = signal.SIGINT if mode == "sigint" else signal.SIGTERM
    if mode == "exit":  # the trainer's own handler: it checkpoints and exits
        signal.signal(signal.SIGTERM, lambda s, f: sys.exit(3))
    real = torch.profiler.profile.export_chrome_trace
    def export(self, path):  # the preemption lands while the exporter runs
        real(self, path)
        os.kill(os.getpid(), sig)
    torch.profiler.profile.export_chrome_trace = export
    window = {"profile": True, "mstx": True, "profile_level": "level1",
              "profile_step_start": 2, "profile_step_end": 6 if mode == "kill" else 4,
              "profile_save_path": str(out)}
    prof = Profiler.from_config({"integrated": window,
                                 "extensions": {"flight_recorder_steps": 8}}, rank=0)
    # the manifest as the Hydra callback writes it when the job starts
    run = prof.run[0]  # (id, how the ranks agreed on it)
    write_manifest(out / manifest_name(run, 0), Manifest(
        status="running", run=run, rank=0, **host_info(), start_time=time.time(),
        profiler_config={"integrated": window}))
    x = torch.zeros(4)
    for step in range(1, 8):
        with prof.step(step):
            with prof.stage("actor_update"):
                for _ in range(50):
                    x = x + 1
                if mode == "kill" and step == 4:
                    os.kill(os.getpid(), signal.SIGKILL)
        print("step", step, flush=True)
    prof.close()
    print("DONE", flush=True)
""")


def _train(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    script, out = tmp_path / "train.py", tmp_path / "out"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script), str(out), mode], capture_output=True, text=True, timeout=300
    )
    count("faults injected")
    return proc, out


def _steps(path: Path) -> list[int]:
    data = json.loads(path.read_bytes())
    return sorted({e["args"]["step"] for e in data["traceEvents"] if e.get("cat") == "step"})


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["default", "exit", "sigint"])
def test_a_signal_during_the_export_leaves_the_trace_under_its_final_name(
    tmp_path: Path, mode: str
) -> None:
    """``default``: no handler of the trainer's (the signal takes effect after the rename and
    the hook); ``exit``: the trainer's handler exits at once, from inside the export;
    ``sigint``: Python's KeyboardInterrupt, raised there too."""
    proc, out = _train(tmp_path, mode)
    if mode == "default":
        assert proc.returncode == -signal.SIGTERM, proc.stderr
    else:
        assert proc.returncode != 0 and "DONE" not in proc.stdout
    assert list(out.rglob("*.tmp")) == []
    (trace,) = out.rglob("*.pt.trace.json")
    events = json.loads(trace.read_bytes())["traceEvents"]  # complete JSON
    assert {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")} == {
        "ProfilerStep#2",
        "ProfilerStep#3",
    }
    (ranges,) = (out / "integrated").glob("*.mstx.trace.json")
    assert ranges.read_bytes().endswith(b'"closed": true}\n')  # closed, not cut
    assert _steps(ranges) == [2, 3]  # every finished step of the window
    health = doctor(out)
    assert not [f for f in health.findings if f.kind in ("temp_file", "unfinished_rename")]
    assert all(t["reason"] != "error" for t in health.triggered)
    # the flight recorder: every finished step, dumped for the signal (where the trainer's
    # handler exited from inside the hook, when the profiler closes)
    (dump,) = (out / "flight").glob("*.mstx.trace.json")
    meta = json.loads(dump.read_bytes())["mindspeed_prof"]
    assert meta["reason"] == "signal" and {1, 2, 3} <= set(_steps(dump))
    if mode == "default":
        analysed = subprocess.run(
            [sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert "flight dump (signal)" in analysed.stdout, analysed.stdout
        assert "(error)" not in analysed.stdout


@pytest.mark.slow
def test_a_killed_job_is_named_killed_with_the_steps_that_have_no_trace(tmp_path: Path) -> None:
    """SIGKILL in step 4 of the window [2, 6): no export ran, the manifest says running."""
    proc, out = _train(tmp_path, "kill")
    assert proc.returncode == -signal.SIGKILL
    (manifest,) = out.glob("manifest-*.json")
    pid = json.loads(manifest.read_bytes())["pid"]
    health = doctor(out)
    (killed,) = [f for f in health.findings if f.kind == "killed"]
    assert killed.where == "rank 0"
    assert f"process {pid} on " in killed.message and "is gone" in killed.message
    # the range file is written at most 100 times a second: step 3's end may not be in it
    assert "steps with no trace in the window [2, 6): 2-5 (2" in killed.message
    assert "ran: their ranges are in the range file)" in killed.message
    # the same manifest, its process alive (this one): not killed
    doc = json.loads(manifest.read_bytes())
    manifest.write_text(json.dumps({**doc, "pid": os.getpid()}))
    assert not [f for f in doctor(out).findings if f.kind == "killed"]


TRACE = {
    "traceEvents": [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#2",
            "pid": 1,
            "tid": 1,
            "ts": 1000.0,
            "dur": 500.0,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::add",
            "pid": 1,
            "tid": 1,
            "ts": 1100.0,
            "dur": 50.0,
        },
    ]
}


def test_a_whole_trace_under_its_temporary_name_is_an_unfinished_rename(tmp_path: Path) -> None:
    """The process stopped between the export and the rename (SIGKILL there): doctor names the
    file and the command that finishes the rename; the command, run, leaves a capture analyse
    reads. A temporary file cut short stays a temporary file left behind."""
    root = tmp_path / "save root"  # a space: the command must quote it
    (root / "integrated").mkdir(parents=True)
    whole = root / "integrated" / "rank0_h_1_step2.pt.trace.json.tmp"
    whole.write_text(json.dumps(TRACE))
    cut = root / "integrated" / "rank1_h_2_step2.pt.trace.json.tmp"
    cut.write_text(json.dumps(TRACE)[:-40])
    findings = {f.where: f for f in doctor(root).findings}
    rename = findings["integrated/rank0_h_1_step2.pt.trace.json.tmp"]
    assert rename.kind == "unfinished_rename" and "an unfinished rename" in rename.message
    assert findings["integrated/rank1_h_2_step2.pt.trace.json.tmp"].kind == "temp_file"
    command = rename.message.split("to read it: ", 1)[1]
    subprocess.run(command, shell=True, check=True)
    assert (root / "integrated" / "rank0_h_1_step2.pt.trace.json").is_file()
    assert not whole.exists()
    after = doctor(root)
    assert not [f for f in after.findings if f.kind == "unfinished_rename"]
    assert after.captures_per_rank.get("0") == 1
