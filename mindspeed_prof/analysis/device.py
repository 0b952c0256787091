"""Device time per step and stage: computation, communication, copies, their overlap, idle time.

Kernels are classified by name as HTA does (``nccl...Kernel`` communication, ``Memcpy``/``Memset``/
``dma`` memory, the rest computation; ``...Sync`` and other ``nccl`` kernels busy but neither), so
the totals over steps equal HTA's temporal breakdown on the same trace.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any, NamedTuple

__all__ = ["DeviceOp", "breakdown", "kind_of", "merge", "overlap", "total"]

_COMM = re.compile(r"^(nccl.*Kernel|hccl)", re.IGNORECASE)
_MEMORY = re.compile(r"^(Memcpy|Memset|dma)")
_NOT_COMPUTE = re.compile(r"^nccl.*Kernel|.*Memcpy|^Memset|.*Sync")

Interval = tuple[float, float]


class DeviceOp(NamedTuple):
    """One device activity: start and end in us, its kind, and the host time of its launch."""

    ts: float
    end: float
    kind: str  # compute | comm | memcpy | other
    launch: float  # host timestamp of the launching runtime call (the op's own ts if unknown)


@functools.lru_cache(maxsize=4096)
def kind_of(name: str) -> str:
    if _COMM.match(name):
        return "comm"
    if _MEMORY.match(name):
        return "memcpy"
    return "other" if _NOT_COMPUTE.match(name) else "compute"


def merge(spans: list[Interval]) -> list[Interval]:
    """The union of ``spans`` as sorted, disjoint intervals."""
    out: list[list[float]] = []
    for ts, end in sorted(spans):
        if out and ts <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([ts, end])
    return [(a, b) for a, b in out]


def overlap(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def total(merged: list[Interval], lo: float = float("-inf"), hi: float = float("inf")) -> float:
    """Length of ``merged`` (sorted, disjoint) inside ``[lo, hi)``."""
    i = bisect.bisect_right(merged, (lo, float("inf"))) - 1  # the interval open at lo, if any
    out = 0.0
    for a, b in merged[max(i, 0):]:
        if a >= hi:
            break
        out += max(0.0, min(b, hi) - max(a, lo))
    return out


def _row(sets: dict[str, list[Interval]], lo: float, hi: float) -> dict[str, float]:
    busy = total(sets["all"], lo, hi)
    return {"span_ms": (hi - lo) / 1e3, "busy_ms": busy / 1e3,
            "compute_ms": total(sets["compute"], lo, hi) / 1e3,
            "comm_ms": total(sets["comm"], lo, hi) / 1e3,
            "overlap_ms": total(sets["overlap"], lo, hi) / 1e3,
            "memcpy_ms": total(sets["memcpy"], lo, hi) / 1e3,
            "idle_ms": (hi - lo - busy) / 1e3}


def _sets(ops: list[DeviceOp]) -> dict[str, list[Interval]]:
    sets = {k: merge([(o.ts, o.end) for o in ops if o.kind == k])
            for k in ("compute", "comm", "memcpy")}
    sets["all"] = merge([(o.ts, o.end) for o in ops])
    sets["overlap"] = overlap(sets["comm"], sets["compute"])
    return sets


def breakdown(ops: list[DeviceOp], steps: list[tuple[int, float, float]],
              stages: list[tuple[str, int | None, float, float]]) -> list[dict[str, Any]]:
    """Rows per step (``stage`` None) and per stage run: device milliseconds by kind.

    An op belongs to the step (stage) whose host range holds its launch. A step's device window
    runs from its first op to the next step's first op (the last one to the last op's end), so the
    windows tile the device timeline and the sums over steps are whole-trace figures. A stage's
    row counts only the ops it launched, from the first to the end of the last. Ops launched
    outside every step form a row with ``step`` None.
    """
    if not ops:
        return []
    steps = sorted(steps, key=lambda s: s[1])
    starts = [s[1] for s in steps]
    per_step: dict[int | None, list[DeviceOp]] = {}
    for op in ops:
        i = bisect.bisect_right(starts, op.launch) - 1
        n = steps[i][0] if i >= 0 and op.launch <= steps[i][2] else None
        per_step.setdefault(n, []).append(op)
    stepped = [o for n, group in per_step.items() if n is not None for o in group]
    sets = _sets(stepped)
    last_end = max((o.end for o in stepped), default=0.0)
    firsts = sorted((min(o.ts for o in group), n) for n, group in per_step.items()
                    if n is not None)
    rows: list[dict[str, Any]] = []
    for k, (lo, n) in enumerate(firsts):
        hi = firsts[k + 1][0] if k + 1 < len(firsts) else last_end
        rows.append({"step": n, "stage": None, **_row(sets, lo, hi)})
    if None in per_step:  # not attributable: its own union, not part of the tiling
        outside = per_step[None]
        rows.append({"step": None, "stage": None, **_row(
            _sets(outside), min(o.ts for o in outside), max(o.end for o in outside))})
    ops = sorted(ops, key=lambda o: o.launch)
    launches = [o.launch for o in ops]
    for name, step, ts, dur in stages:  # only the ops the stage launched
        mine = ops[bisect.bisect_left(launches, ts):bisect.bisect_right(launches, ts + dur)]
        if mine:
            rows.append({"step": step, "stage": name, **_row(
                _sets(mine), min(o.ts for o in mine), max(o.end for o in mine))})
    return rows
