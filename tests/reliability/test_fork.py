"""A process forked inside a captured stage never writes, closes or dumps its parent's captures.

Each case is a real fork in a training script: ``os.fork`` with a child leaving by ``sys.exit``
through its copies of the stage and the step, the same with ``fork()`` called from C (no fork
hook runs in that child: only the pid checks stand), a reward ``multiprocessing.Pool``
terminated while its workers are busy (SIGTERM to each), and a ``with Pool()`` per step. The
parent's range file must come out whole, closed, with every step and nothing of a child's;
no flight dump may appear.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import count

pytestmark = pytest.mark.slow  # training jobs in a subprocess, forked

#: Steps per case. A ``with Pool()`` ends by sending each worker a sentinel, then SIGTERM to
#: those still alive: a worker gets the signal in about half the steps, so that case runs more.
STEPS = {"os_fork": 3, "c_fork": 3, "pool_terminated": 3, "pool_per_step": 8}

SCRIPT = textwrap.dedent("""
    import ctypes, multiprocessing, os, sys, time
    from mindspeed_prof import Profiler, mstx

    out, mode, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    prof = Profiler.from_config({
        "integrated": {"profile": True, "mstx": True, "profile_level": "level_none",
                       "profile_step_start": 1, "profile_step_end": 100,
                       "profile_save_path": out},
        "extensions": {"flight_recorder_steps": 4}}, rank=0)
    ctx = multiprocessing.get_context("fork")

    def busy(seconds):
        started.put(os.getpid())
        with mstx.range("in_worker"):
            time.sleep(seconds)
        return seconds

    def child(fork):
        pid = fork()
        if pid == 0:
            with mstx.range("in_child"):
                pass
            sys.exit(0)  # through the child's copies of the stage and the step, then atexit
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status

    for step in range(1, steps + 1):
        # A fresh queue for each pool, inherited by its workers: a worker terminated right
        # after its put may still hold the queue's lock.
        started = ctx.SimpleQueue()
        with prof.step(step):
            with prof.stage("actor_generate"):
                with mstx.range("in_parent"):
                    pass
                if mode == "os_fork":
                    child(os.fork)
                elif mode == "c_fork":
                    child(ctypes.CDLL(None).fork)
                elif mode == "pool_terminated":  # a reward pool past its timeout
                    pool = ctx.Pool(2)
                    pool.map_async(busy, [60, 60])
                    started.get(), started.get()  # both workers inside a task
                    pool.terminate()
                    pool.join()
                elif mode == "pool_per_step":
                    with ctx.Pool(2) as pool:
                        assert pool.map(busy, [0, 0]) == [0, 0]
                    started.get(), started.get()
    prof.close()
    print("DONE", os.getpid(), flush=True)
""")


@pytest.mark.parametrize("mode", list(STEPS))
def test_a_forked_child_leaves_the_parents_capture_whole(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out, steps = tmp_path / "out", STEPS[mode]
    proc = subprocess.run(
        [sys.executable, str(script), str(out), mode, str(steps)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    count("forks in a captured stage")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("DONE"), proc.stdout
    parent = int(proc.stdout.split()[1])
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert len(files) == 1 and files[0].startswith("integrated/"), files  # no flight dump
    data = json.loads((out / files[0]).read_text())
    assert data["closed"] is True and data["mindspeed_prof"]["pid"] == parent
    events = data["traceEvents"]
    assert {e["pid"] for e in events} == {parent}
    names = [e["name"] for e in events]
    assert sorted(set(names)) == sorted(
        {"actor_generate", "in_parent"} | {f"ProfilerStep#{s}" for s in range(1, steps + 1)}
    )
    assert names.count("actor_generate") == names.count("in_parent") == steps
