"""The disk budget and the range file's writer against a crowded, slow or stalled save root.

Each figure is ms per profiled step (a whole-steps window of empty steps, ranges only: the
hooks' own cost is all there is to see) over the same loop without the budget, in the same
run, rounds interleaved, median of the rounds:

Steps are timed from the third to the one before the last: a capture's start and stop are a
cost per capture, not per step (the stop waits until every step is written).

- ``max_disk_mb`` on against off, the save root empty, and the save root holding 100,000 files
  of another process (``--quick``: 2,000), each statted in 1 ms where something stats it (a
  slow NFS, as a double): the budget counts what the job wrote and never walks the root;
- a stalled file system: every write of the range file sleeps 20 ms (a double of the file),
  against the same loop with writes that do not, steps of 1 ms (so that a write is handed off
  every ten steps or so): the writes run on a thread of their own, so the step never waits for
  them (goal 1.1x).

Before the change (issue 42) the budget walked the root before each capture on the training
thread and took the window one step per capture: 0.009 -> 10.1 ms per step at 2,000 files,
389 ms at 100,000, and a 20 ms stall added 20 ms to every step.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Report

__all__ = ["run"]

#: The budget's goal: a step under a budget costs at most this much more than without.
GOAL = 1.5
STALL_S = 0.02
#: The step's own work in the stalled-write figure (a sleep: the writer may run meanwhile).
WORK_S = 0.001


def _crowded(files: int) -> Path:
    """A cached folder holding ``files`` small files of a dataset (made once)."""
    root = Path(tempfile.gettempdir()) / f"mindspeed-prof-crowded-{files}"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        data = root / "dataset"
        data.mkdir(parents=True)
        for i in range(files):
            (data / f"shard{i:06d}.bin").write_bytes(b"x")
        (root / ".complete").write_text("")
    return root


def _clean(root: Path) -> None:
    """What a run wrote, removed; the dataset kept."""
    for name in os.listdir(root):
        if name not in ("dataset", ".complete"):
            path = root / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()


def _ms_per_step(root: Path, steps: int, budget: int, work_s: float = 0.0) -> float:
    from mindspeed_prof import Profiler

    prof = Profiler.from_config(
        {
            "profile": True,
            "backend": "none",
            "profile_level": "level_none",
            "profile_step_start": 1,
            "profile_step_end": steps + 1,
            "max_disk_mb": budget,
            "profile_save_path": str(root),
        },
        rank=0,
        run="bench-budget",
    )
    t0 = t1 = 0.0
    for step in range(1, steps + 1):
        if step == 3:  # after the window's start (and the budget's measuring step)
            t0 = time.perf_counter()
        with prof.step(step):
            if work_s:
                time.sleep(work_s)
        if step == steps - 1:  # before its end (the stop waits for every write)
            t1 = time.perf_counter()
    took = (t1 - t0) * 1e3 / (steps - 3)
    prof.close()
    for part in prof.parts:  # the ledger's last write, before the folder is cleaned
        ledger = getattr(part, "ledger", None)
        if ledger is not None:
            ledger.join()
    _clean(root)
    return took


class _SlowStat:
    """``os.stat`` taking 1 ms for the dataset's files (a slow NFS), counted."""

    def __init__(self, dataset: Path) -> None:
        self.real, self.prefix, self.calls = os.stat, str(dataset), 0

    def __call__(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).startswith(self.prefix):
            self.calls += 1
            time.sleep(0.001)
        return self.real(path, *args, **kwargs)


class _Stalled:
    """A raw file whose every write after the header sleeps ``STALL_S``."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.first = raw, True

    def write(self, data: bytes) -> int:
        if not self.first:
            time.sleep(STALL_S)
        self.first = False
        return int(self.raw.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def _rounds(report: Report) -> int:
    return 5 if report.quick else 9


def run(report: Report) -> None:
    from mindspeed_prof.capture import spans

    files = 2_000 if report.quick else 100_000
    steps = 3_000 if report.quick else 20_000
    empty = Path(tempfile.mkdtemp())
    try:
        _ms_per_step(empty, steps, 1000)  # warm: imports, the first thread, the allocator
        for label, root in (("empty", empty), (f"{files:,} files", _crowded(files))):
            slow = _SlowStat(root / "dataset")
            os.stat = slow
            try:
                off, on = [], []
                for _ in range(_rounds(report)):
                    off.append(_ms_per_step(root, steps, 0))
                    on.append(_ms_per_step(root, steps, 1000))
            finally:
                os.stat = slow.real
            a, b = statistics.median(off), statistics.median(on)
            report.add(
                f"profiled step, max_disk_mb on, save root {label} (1 ms per stat)",
                "the same step, max_disk_mb off",
                b / a,
                GOAL,
                f"{a:.4f} -> {b:.4f} ms per step over {steps} steps; "
                f"{slow.calls} stats of the root's files",
            )
        real_open = open
        plain, stalled = [], []
        short = steps // 30  # steps of 1 ms: a write is handed off every 10 ms
        for _ in range(_rounds(report)):
            plain.append(_ms_per_step(empty, short, 0, WORK_S))
            spans.open = lambda f, m, buffering=-1: _Stalled(real_open(f, m, buffering=buffering))  # type: ignore[attr-defined]
            try:
                stalled.append(_ms_per_step(empty, short, 0, WORK_S))
            finally:
                del spans.open  # type: ignore[attr-defined]
        a, b = statistics.median(plain), statistics.median(stalled)
        report.add(
            f"profiled 1 ms step, every range-file write stalled {STALL_S * 1e3:.0f} ms",
            "the same step, writes not stalled",
            b / a,
            1.1,
            f"{a:.3f} -> {b:.3f} ms per step over {short} steps (a write on the step's thread "
            f"would add {STALL_S * 1e3:.0f} ms every 10 ms)",
        )
    finally:
        shutil.rmtree(empty, ignore_errors=True)
