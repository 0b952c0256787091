"""Captures for tests: made by the engine on CPU on a fake clock, plus handmade torch_npu
layouts."""

from __future__ import annotations

import csv
import errno
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.capture import buffer as _buffer
from mindspeed_prof.capture import ranges as _ranges
from mindspeed_prof.capture import spans as _spans
from mindspeed_prof.config.schema import STAGES

#: Each stage's work on the fake clock, and one unit of ``slow``: exact, whatever the load.
STAGE_MS = 5.0
SLOW_MS = 30.0
#: A custom range's length (``<b>custom</b>``, one per stage execution).
CUSTOM_MS = 1.0


class FakeClock:
    """A ``perf_counter_ns`` that stands still until ``advance``: every range recorded on it
    lasts exactly the time advanced inside it."""

    def __init__(self) -> None:
        self.now = time.perf_counter_ns()

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: float) -> None:
        self.now += round(ms * 1e6)


@contextmanager
def fake_clock() -> Iterator[FakeClock]:
    """The range recorder's clock (step, stage and custom ranges, range-file flushes) replaced
    by a ``FakeClock`` while the block runs; torch's own clock (op traces) is left alone."""
    clock = FakeClock()
    saved: list[tuple[Any, str, Any]] = [
        (_ranges, "perf_counter_ns", time.perf_counter_ns),
        (_spans, "perf_counter_ns", time.perf_counter_ns),
        (_buffer, "perf_counter_ns", time.perf_counter_ns),
    ]
    Range = _buffer.Range
    hooks = (Range.__dict__["__enter__"], Range.__dict__["__exit__"])

    def enter(self: Any) -> None:  # buffer.Range reads its clock in C: both run on this one
        self._starts.append(clock())

    def exit_(self: Any, *exc: object) -> None:
        if self._starts:
            self._append((self._key, self._tid, self._starts.pop(), clock()))

    try:
        for module, name, _ in saved:
            setattr(module, name, clock)
        Range.__enter__ = enter  # type: ignore[method-assign]
        Range.__exit__ = exit_  # type: ignore[method-assign]
        yield clock
    finally:
        for module, name, value in saved:
            setattr(module, name, value)
        Range.__enter__ = hooks[0]  # type: ignore[method-assign]
        Range.__exit__ = hooks[1]  # type: ignore[method-assign]


class RealClock:
    """``FakeClock``'s interface on the real clock: ``advance`` sleeps."""

    def advance(self, ms: float) -> None:
        time.sleep(ms / 1000)


@contextmanager
def real_clock() -> Iterator[RealClock]:
    yield RealClock()


def make_run(
    root: Path,
    ranks: tuple[int, ...] = (0, 1),
    slow: dict[tuple[int, str], int] | None = None,
    steps: int = 3,
    work: Callable[[int, int, str], float] | None = None,
    real: bool = False,
    **fields: Any,
) -> Path:
    """One capture per rank of a fake RL loop, its ranges timed on a fake clock: each stage
    takes ``STAGE_MS`` plus ``SLOW_MS`` per unit of ``slow[(rank, stage)]`` (or ``work(rank,
    step, stage)`` ms), and holds one ``<b>custom</b>`` range of ``CUSTOM_MS``; a step is its
    stages and nothing else. Exact times need the range file (``mstx``, the default here): a
    capture without one takes its ranges from torch's trace, on torch's clock. ``real``: the
    real clock (sleeps), for a test that lines the range file up with torch's ops."""
    slow = slow or {}
    cfg_fields = {
        "profile": True,
        "mstx": True,
        "profile_step_start": 1,
        "profile_step_end": steps + 1,
        "profile_save_path": str(root),
        **fields,
    }
    if (slow or work) and not cfg_fields["mstx"]:
        raise ValueError("make_run: slow/work times need the range file (mstx: true)")
    clocks: Any = real_clock() if real else fake_clock()
    with clocks as clock:
        for rank in ranks:
            with Profiler.from_config(cfg_fields, rank=rank) as prof:
                for step in range(1, steps + 1):
                    with prof.step(step):
                        for stage in STAGES:
                            with prof.stage(stage):
                                torch.randn(32, 32) @ torch.randn(32, 32)  # ops for the trace
                                clock.advance(
                                    work(rank, step, stage)
                                    if work
                                    else STAGE_MS + SLOW_MS * slow.get((rank, stage), 0)
                                )
                                with mstx.range("<b>custom</b>"):
                                    clock.advance(CUSTOM_MS)
    return root


def npu_text(root: Path, rank: int = 0) -> Path:
    """A parsed torch_npu capture, text export, as torch_npu writes it (ts as strings)."""
    folder = root / "integrated" / f"rank{rank}_host_{100 + rank}_20261130100000000_ascend_pt"
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (folder / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))
    (folder / "profiler_metadata.json").write_text("{}")
    base = 1764496800000000
    events = [
        {
            "ph": "X",
            "name": "ProfilerStep#2",
            "pid": "1",
            "tid": 7,
            "ts": f"{base}.000",
            "dur": 9000.5,
            "cat": "cpu_op",
        },
        {
            "ph": "X",
            "name": "actor_update",
            "pid": "1",
            "tid": 7,
            "ts": f"{base + 100}.250",
            "dur": 5000,
            "args": {"id": 2**64 + 5},
        },
        {
            "ph": "X",
            "name": "aten::mm",
            "pid": "1",
            "tid": 7,
            "ts": f"{base + 200}",
            "dur": 300,
            "cat": "cpu_op",
        },
        {"ph": "M", "name": "process_name", "pid": "1", "args": {"name": "Python"}},
    ]
    (out / "trace_view.json").write_text(json.dumps(events))
    with open(out / "step_trace_time.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Step", "Computing", "Communication(Not Overlapped)", "Free"])
        w.writerow(["2", "8000", "500", "500"])
    return folder


def npu_db(root: Path, rank: int = 1) -> Path:
    folder = root / "integrated" / f"rank{rank}_host_{200 + rank}_20261130100000000_ascend_pt"
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (folder / f"profiler_info_{rank}.json").write_text("{}")
    con = sqlite3.connect(out / f"ascend_pytorch_profiler_{rank}.db")
    con.execute("CREATE TABLE STRING_IDS(id INTEGER, value TEXT)")
    con.execute("CREATE TABLE STEP_TIME(id INTEGER, startNs INTEGER, endNs INTEGER)")
    con.execute(
        "CREATE TABLE MSTX_EVENTS(startNs INTEGER, endNs INTEGER, eventType INTEGER, "
        "rangeId INTEGER, category INTEGER, message INTEGER, globalTid INTEGER)"
    )
    con.execute("INSERT INTO STRING_IDS VALUES (1, 'actor_update')")
    con.execute("INSERT INTO STEP_TIME VALUES (2, 1000000, 9000000)")
    con.execute("INSERT INTO MSTX_EVENTS VALUES (2000000, 6000000, 2, 1, 0, 1, 7)")
    con.commit()
    con.close()
    return folder


class FullDisk:
    """A raw file on a disk with room for ``size`` bytes of it: a write past that writes what
    fits (a short write) and, with nothing fitting, fails with ENOSPC, as a full disk does."""

    def __init__(self, raw: Any, size: int) -> None:
        self.raw, self.size, self.refused = raw, size, 0

    def seek(self, offset: int) -> int:
        return int(self.raw.seek(offset))

    def write(self, data: bytes) -> int:
        room = self.size - self.raw.tell()
        if room <= 0:
            self.refused += 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return int(self.raw.write(data[:room]))

    def truncate(self, size: int) -> int:
        return int(self.raw.truncate(size))

    def close(self) -> None:
        self.raw.close()

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)
