"""What a capture will cost before it starts: host memory and trace bytes, from a calibration
step (the step before the window, recorded at the capture's own settings and thrown away) and
the steps the capture covers; and the level that fits a host-memory budget. Pure.

A capture's host memory is the profiler's buffer, which grows with every event recorded, and
the export at its end: about ``HOST_PER_TRACE_BYTE`` bytes (per level) for every byte of the
trace it writes, measured on the demo against the same steps without the profiler. A
calibration step measures the trace bytes of one step; steps are alike in an RL loop, so a
capture of ``n`` steps writes about ``n`` times that. A level other than the calibrated one is
scaled by ``LEVEL_FACTOR`` (trace bytes a step writes relative to level0, measured on the demo).
Both constants, and the estimate against the actual figures: benchmarks/capture_estimate.py.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HOST_PER_TRACE_BYTE",
    "LEVELS",
    "LEVEL_FACTOR",
    "Estimate",
    "Measured",
    "choose",
    "estimate",
]

#: From the most output to the least; ``level_none`` records ranges only.
LEVELS = ("level2", "level1", "level0", "level_none")
#: A step's trace bytes at each level relative to level0 (benchmarks/capture_estimate.py).
LEVEL_FACTOR = {"level2": 2.3, "level1": 1.05, "level0": 1.0, "level_none": 0.01}
#: Host bytes the profiler holds per byte of the trace it writes, per level, and what it holds
#: whatever it records (benchmarks/capture_estimate.py; on the demo over four runs, 7 to 40 per
#: byte at level0 and level1, 9 to 19 at level2, whose stacks make each event's text longer: the
#: peak resident set of one run lands near 8 or near 35, as the allocator reuses freed memory
#: or not; these sit between, leaning high, the safe side for a budget).
HOST_PER_TRACE_BYTE = {"level2": 13.0, "level1": 25.0, "level0": 25.0, "level_none": 25.0}
HOST_FIXED_BYTES = 3.0 * 2**20


@dataclass(frozen=True)
class Measured:
    """One calibration step at ``level``: the trace bytes it wrote."""

    level: str
    trace_bytes: float


@dataclass(frozen=True)
class Estimate:
    """A capture of ``steps`` steps at ``level``: its host memory and trace bytes."""

    level: str
    steps: int
    host_bytes: float
    trace_bytes: float

    @property
    def host_mb(self) -> float:
        return self.host_bytes / 2**20


def estimate(measured: Measured, level: str, steps: int) -> Estimate:
    """``steps`` steps at ``level`` from a calibration step (scaled by ``LEVEL_FACTOR`` where
    the level differs)."""
    trace = measured.trace_bytes * LEVEL_FACTOR[level] / LEVEL_FACTOR[measured.level] * steps
    return Estimate(level, steps, HOST_FIXED_BYTES + trace * HOST_PER_TRACE_BYTE[level], trace)


def choose(measured: Measured, level: str, steps: int, limit_bytes: float) -> Estimate:
    """The estimate at ``level`` where it fits ``limit_bytes`` of host memory, else at the
    first lower level that does (``level_none``, ranges only, at the last)."""
    for candidate in LEVELS[LEVELS.index(level) :]:
        e = estimate(measured, candidate, steps)
        if e.host_bytes <= limit_bytes or candidate == "level_none":
            return e
    raise AssertionError("unreachable: level_none is always chosen")
