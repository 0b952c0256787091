"""Captures for the judgement tests: ranks of steps of the six RL stages, each cell's time
given by a function of (rank, step, stage), as ``Captures`` of in-memory ranges."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mindspeed_prof.analysis.analyse import Captures
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.config.schema import STAGES

#: Each stage's typical ms.
BASE = dict(zip(STAGES, (40.0, 10.0, 10.0, 5.0, 30.0, 10.0)))


def capture(ranks: int, steps: int, ms: Callable[[int, int, str], float]) -> Captures:
    """``ranks`` captures of ``steps`` steps; stage ``s`` of step ``n`` on rank ``r`` lasts
    ``ms(r, n, s)``, 0.5 ms outside the stages."""
    traces = []
    for rank in range(ranks):
        t = TraceData(Path(f"run/rank{rank}.mstx.trace.json"), "spans", rank, "integrated", 1)
        ts = 0.0
        for step in range(1, steps + 1):
            start = ts
            for stage in STAGES:
                d = ms(rank, step, stage)
                t.ranges.append(Range(rank, "stage", stage, step, 1e3 * ts, 1e3 * d))
                ts += d
            ts += 0.5
            t.ranges.append(
                Range(rank, "step", f"ProfilerStep#{step}", step, 1e3 * start, 1e3 * (ts - start))
            )
        traces.append(t)
    return Captures(root=Path("run"), traces=traces)
