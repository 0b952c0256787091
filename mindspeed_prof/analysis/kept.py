"""What the analysis keeps of each capture as it is read (``kept``), so that a root of a
thousand ranks is not held whole until the analysis across ranks ends: a torch_npu capture's
per-rank answers computed and its device operators released (``findings.npu.answered``), the
names each rank repeats (operators, kernels, communication ops, links) held once, and its
memory timeline as one array of floats (``held_rows.Points``; where a point is odd, its
repeated sizes held once)."""

from __future__ import annotations

import sys
from typing import TypeVar

from mindspeed_prof.analysis.held_rows import Points
from mindspeed_prof.analysis.readers.model import TraceData

__all__ = ["kept"]

V = TypeVar("V")


def kept(data: TraceData) -> TraceData:
    """``data`` as the analysis keeps it (the same object, changed in place): it answers
    every question the same."""
    if data.npu is not None:
        from mindspeed_prof.analysis.findings.npu import answered  # the rules: npu only

        answered(data)
        npu = data.npu
        npu.api_max_us = _keys(npu.api_max_us)
        for h in npu.hccl:
            h.name, h.kind = sys.intern(h.name), sys.intern(h.kind)
    data.ops, data.kernels, data.runtime = _keys(data.ops), _keys(data.kernels), _keys(data.runtime)
    for c in data.comm:
        c.name, c.kind = sys.intern(c.name), sys.intern(c.kind)
        if c.link is not None:
            c.link = sys.intern(c.link)
        if c.transport is not None:
            c.transport = sys.intern(c.transport)
        if c.links is not None:
            c.links = _keys(c.links)
    if data.memory is not None:
        for a in data.memory.top_ops:
            a.op = sys.intern(a.op)
        points = Points.of(data.memory.timeline)
        if isinstance(points, list):
            _repeats(points)
        data.memory.timeline = points
    return data


def _repeats(points: list[list[float]]) -> None:
    """A memory timeline's sizes that repeat the point before (a reserved size, an allocated
    one that did not change: most of them) held once. Zeros are left as they are (0.0 equals
    -0.0, which is written apart), and an int is never swapped for an equal float."""
    before = points[0] if points else []
    for p in points:
        for i in range(1, min(len(p), len(before))):
            v, w = p[i], before[i]
            if v is not w and v == w and v and type(v) is type(w):
                p[i] = w
        before = p


def _keys(d: dict[str, V]) -> dict[str, V]:
    return {sys.intern(k): v for k, v in d.items()}
