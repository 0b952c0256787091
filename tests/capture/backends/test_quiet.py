"""torch's stderr chatter around captures is dropped by exact line; everything else stays."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mindspeed_prof.capture.backends.quiet import quiet_stderr

USDT = b"USDT:2026-11-30 10:00:00 1:1 SyncActivityProfilerHandler.cpp:52] profiler_start\n"
ALLOC = (
    b"[W1130 10:00:00.000000000 CPUAllocator.cpp:245] Memory block of unknown size was "
    b"allocated before the profiling started, profiler results will not include the "
    b"deallocation event\n"
)


def test_drops_exactly_the_noise_and_keeps_the_rest(capfd: pytest.CaptureFixture[str]) -> None:
    with quiet_stderr():
        os.write(2, USDT + b"[E kineto] a real error\n" + ALLOC)
        os.write(2, b"prefix " + USDT)  # not the line torch writes: kept
        os.write(2, b"no newline at the end")
    assert capfd.readouterr().err == (
        "[E kineto] a real error\nprefix " + USDT.decode() + "no newline at the end"
    )


def test_stderr_is_restored_when_the_block_raises(capfd: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), quiet_stderr():
        os.write(2, b"before the error\n")
        raise RuntimeError("boom")
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "before the error\nafter\n"


SCRIPT = textwrap.dedent("""
    import contextlib, sys, torch
    import mindspeed_prof.capture.backends.torch as backend
    if sys.argv[1] == "unfiltered":
        backend.quiet_stderr = contextlib.nullcontext
    from mindspeed_prof import Profiler
    before = [torch.randn(64) for _ in range(8)]  # freed during the capture
    cfg = {"integrated": {"profile": True, "profile_level": "level1", "profile_with_memory": True,
           "profile_record_shapes": True, "profile_step_start": 2,
           "profile_step_end": 4, "profile_save_path": sys.argv[2]},
           "extensions": {"with_stack": True, "backend": "torch"}}
    with Profiler.from_config(cfg) as prof:
        for step in (1, 2, 3):
            with prof.step(step), prof.stage("actor_update"):
                before.pop()
                torch.randn(8, 8) @ torch.randn(8, 8)
    print(len(prof.captures), "captured")
""")


def run(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "capture.py").write_text(SCRIPT)
    return subprocess.run(
        [sys.executable, "capture.py", mode, str(tmp_path / mode)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


@pytest.mark.slow
def test_a_memory_capture_prints_nothing_from_torch(tmp_path: Path) -> None:
    quiet = run(tmp_path, "filtered")
    assert quiet.stdout == "1 captured\n" and quiet.stderr == ""
    noisy = run(tmp_path, "unfiltered")  # the same capture without the filter: torch speaks
    assert "profiler_start" in noisy.stderr and "profiler_stop" in noisy.stderr
    assert "Memory block of unknown size" in noisy.stderr
