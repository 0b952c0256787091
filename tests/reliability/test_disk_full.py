"""A disk that fills while a light capture appends to its range file: training goes on, the
warning names the file, and the file keeps every range written whole, as complete JSON.

With a real ENOSPC on a small tmpfs where this process can mount one (root, and a kernel that
lets it), and with ENOSPC injected into the range file's writes everywhere.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import count

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.capture import spans

ROOM = 64 * 1024  # bytes on the small disk
RANGES = 20  # custom ranges per step: a step's lines are about 3 KiB


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted for the test, unmounted after."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root (the injected ENOSPC test runs instead)")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={ROOM}", "tmpfs", str(disk)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"cannot mount a tmpfs here ({mounted.stderr.strip()}); "
            "the injected ENOSPC test runs instead"
        )
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _train(root: Path, steps: int) -> tuple[Profiler, list[str]]:
    """A light capture of every step, ``RANGES`` custom ranges a step; the warnings raised."""
    prof = Profiler.from_config(
        {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "backend": "none",
            "profile_step_start": 1,
            "profile_step_end": steps + 1,
            "profile_save_path": str(root),
        },
        rank=0,
    )
    with pytest.warns(RuntimeWarning) as caught:
        for step in range(1, steps + 1):
            with prof.step(step), prof.stage("actor_update"):
                for i in range(RANGES):
                    with mstx.range(f"r{i}"):
                        pass
        trained = step
    prof.close()
    assert trained == steps  # training went on to the end
    return prof, [str(w.message) for w in caught]


def _check_cut(path: Path, room: int) -> int:
    """The cut range file: complete JSON, whole steps then part of one, within ``room`` and
    filling it to less than a range's line; the number of whole steps."""
    raw = path.read_bytes()
    data = json.loads(raw)
    assert raw.endswith(b"\n]}\n") and "closed" not in data  # cut, not closed
    events = data["traceEvents"]
    steps = sorted(int(e["name"].split("#")[1]) for e in events if e["cat"] == "step")
    assert steps == list(range(1, len(steps) + 1)) and steps
    for step in steps:  # each whole step: its stage and every range
        assert sorted(e["name"] for e in events if e["args"]["step"] == step) == sorted(
            [f"ProfilerStep#{step}", "actor_update"] + [f"r{i}" for i in range(RANGES)]
        )
    # part of the next step: its lines in the order they ended (the ranges, then the stage;
    # the step's own range last would have made it whole)
    rest = [e["name"] for e in events if e["args"]["step"] > steps[-1]]
    assert rest == [*(f"r{i}" for i in range(RANGES)), "actor_update"][: len(rest)]
    longest = max(len(json.dumps(e)) for e in events) + 16
    assert room - longest < len(raw) <= room  # every range that fit is kept
    return len(steps)


def test_a_real_full_disk_keeps_every_whole_range_and_training_goes_on(
    small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prof, warned = _train(small_disk / "out", 60)
    count("faults injected")
    (path,) = (small_disk / "out" / "integrated").iterdir()
    assert len(warned) == 1 and "No space left on device" in warned[0] and str(path) in warned[0]
    assert prof.failed
    whole = _check_cut(path, ROOM)
    assert whole >= 10
    # analyse reads what the capture kept, and says it is part of a capture (exit 3)
    analysed = subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(small_disk / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert analysed.returncode == 3, analysed.stderr
    kept = len(json.loads(path.read_bytes())["traceEvents"])
    assert (
        f"never closed (the process that wrote it was killed, or is still writing); "
        f"{kept} ranges kept" in analysed.stderr
    )
    assert f"of {whole} steps on 1 rank" in analysed.stdout
    # a flight dump on the full disk fails whole: a warning naming it, nothing left behind
    flight = Profiler.from_config(
        {"profile_save_path": str(small_disk / "out"), "flight_recorder_steps": 2}, rank=0
    )
    for step in (1, 2):
        with flight.step(step), mstx.range("x" * 5000):
            pass
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert flight.dump_flight() is None
    flight.close()
    assert "No space left on device" in caplog.text and "flight" in caplog.text
    assert [p.name for p in (small_disk / "out").rglob("*.tmp")] == []


class _FullAfter:
    """A raw file whose writes fail with ENOSPC once the file would pass ``room`` bytes (a
    short write first, as a real disk does)."""

    def __init__(self, raw: Any, room: int) -> None:
        self.raw, self.room = raw, room

    def write(self, data: bytes) -> int:
        room = self.room - self.raw.tell()
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return int(self.raw.write(data[:room]))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def test_an_injected_full_disk_keeps_every_whole_range_and_training_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = open
    monkeypatch.setattr(
        spans,
        "open",
        lambda file, mode, buffering=-1: _FullAfter(
            real_open(file, mode, buffering=buffering), ROOM
        ),
        raising=False,
    )
    prof, warned = _train(tmp_path, 60)
    count("faults injected")
    (path,) = (tmp_path / "integrated").iterdir()
    assert len(warned) == 1 and "No space left on device" in warned[0] and str(path) in warned[0]
    assert _check_cut(path, ROOM) >= 10
