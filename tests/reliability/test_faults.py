"""Faults during a capture: a full disk warns once (or stops at once with strict)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import count

# RLIMIT_FSIZE makes writes past LIMIT bytes fail with EFBIG, as a full disk fails them with
# ENOSPC. SIGXFSZ is ignored so that the write fails instead of killing the process. The limit
# is below what step 2's capture writes at each level (level_none writes only a span file of a
# few hundred bytes), so the fault really happens.
SCRIPT = textwrap.dedent("""
    import resource, signal, sys, warnings, torch
    from mindspeed_prof import Profiler
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    out, strict, level, limit = sys.argv[1], sys.argv[2] == "strict", sys.argv[3], int(sys.argv[4])
    prof = Profiler.from_config({"profile": True, "mstx": True, "strict": strict,
        "profile_level": level, "profile_step_start": 1, "profile_step_end": 3,
        "stage": "actor_update", "profile_save_path": out}, rank=0)
    caught = []
    warnings.showwarning = lambda m, *a, **k: caught.append(str(m))
    for step in range(1, 4):
        if step == 2:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        with prof.step(step):
            with prof.stage("actor_update"):
                for _ in range(400):
                    torch.randn(16, 16) @ torch.randn(16, 16)
        print("TRAINED", step, flush=True)
    prof.close()
    print("WARNINGS", len([w for w in caught if "mindspeed-prof" in w]), flush=True)
""")


def run(tmp_path: Path, mode: str, level: str = "level1") -> subprocess.CompletedProcess[str]:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    count("faults injected")
    limit = 64 * 1024 if level != "level_none" else 64
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out"), mode, level, str(limit)],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("level", ["level1", "level_none"])
def test_full_disk_warns_once_and_training_goes_on(tmp_path: Path, level: str) -> None:
    proc = run(tmp_path, "lenient", level)
    assert proc.returncode == 0, proc.stderr
    assert "TRAINED 3" in proc.stdout
    assert "WARNINGS 1" in proc.stdout
    first = sorted((tmp_path / "out" / "actor_update").glob("*step1*.json"))
    assert first  # the capture finished before the disk filled is intact
    for f in first:
        json.loads(f.read_text())
    assert not list((tmp_path / "out").rglob("*.tmp"))


@pytest.mark.slow
def test_full_disk_with_strict_stops_at_once(tmp_path: Path) -> None:
    proc = run(tmp_path, "strict")
    assert proc.returncode != 0
    assert "TRAINED 1" in proc.stdout and "TRAINED 2" not in proc.stdout
    assert "ProfilerError" in proc.stderr and "capture stop failed" in proc.stderr
