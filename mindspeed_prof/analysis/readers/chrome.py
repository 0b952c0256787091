"""Chrome traces (torch.profiler/Kineto JSON, the span recorder's range files), via msgspec."""

from __future__ import annotations

import bisect
import gzip
import re
from pathlib import Path
from typing import Any, Union

import msgspec

from mindspeed_prof.analysis.readers.model import (
    MAX_BYTES,
    BadFile,
    Range,
    TraceData,
    rank_of,
)
from mindspeed_prof.config.schema import STAGES

__all__ = ["Event", "EventArgs", "collect", "decode_events", "read_json"]

_STAGES = frozenset(STAGES)
_STEP = re.compile(r"^ProfilerStep#(\d+)$")

Number = Union[int, float, str, None]


class EventArgs(msgspec.Struct):
    step: Union[int, float, str, None] = None


class Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: Number = None
    dur: Number = None
    tid: Union[int, str, None] = None
    pid: Union[int, str, None] = None
    args: Union[EventArgs, None] = None


class _Trace(msgspec.Struct):
    traceEvents: list[Event] = []
    mindspeed_prof: Union[dict[str, Any], None] = None
    distributedInfo: Union[dict[str, Any], None] = None
    baseTimeNanoseconds: Union[int, None] = None  # Kineto: wall-clock ns at ts 0


_decoder = msgspec.json.Decoder(Union[_Trace, list[Event]])  # object or JSON Array Format



def decode_events(raw: bytes) -> list[Event]:
    """Events of a Chrome trace given as an object with ``traceEvents`` or as a bare list."""
    trace = _decoder.decode(raw)
    return trace if isinstance(trace, list) else trace.traceEvents


def read_json(path: Path, group: str, size: int) -> TraceData:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        head = f.read(64).lstrip()
        if not head.startswith((b"{", b"[")):
            raise BadFile(f"{path}: not JSON (starts with {head[:8]!r})")
        raw = head + f.read(MAX_BYTES)
        if len(raw) > MAX_BYTES:
            raise BadFile(f"{path}: more than {MAX_BYTES} bytes of JSON; refused")
    trace = _decoder.decode(raw)
    del raw
    if isinstance(trace, list):
        trace = _Trace(traceEvents=trace)
    meta = trace.mindspeed_prof or {}
    if trace.baseTimeNanoseconds is not None:
        meta = {**meta, "baseTimeNanoseconds": trace.baseTimeNanoseconds}
    kind = "spans" if meta.get("kind") == "spans" else "torch"
    data = TraceData(path, kind, rank_of(path, meta, trace.distributedInfo), group, size,
                     events=len(trace.traceEvents), meta=meta)
    collect(data, trace.traceEvents, meta.get("step"))
    return data


def _num(value: Number) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and abs(out) != float("inf") else None


def collect(data: TraceData, events: list[Event], default_step: Any) -> None:
    """Sort events into step/stage/custom ranges and per-op self time."""
    steps: list[tuple[float, float, int]] = []
    annotations: list[tuple[str, str, float, float, int | None]] = []
    ops_by_tid: dict[Any, list[tuple[float, float, str]]] = {}
    for ev in events:
        if ev.ph != "X":
            continue
        ts, dur = _num(ev.ts), _num(ev.dur)
        if ts is None or dur is None or dur < 0:
            continue
        m = _STEP.match(ev.name)
        if m:
            steps.append((ts, ts + dur, int(m.group(1))))
        elif ev.cat in ("user_annotation", "stage", "step", "gpu_user_annotation") or (
                ev.name in _STAGES and ev.cat != "kernel"):  # torch_npu writes them as cpu_op
            if ev.cat == "gpu_user_annotation":
                continue
            step = _num(ev.args.step) if ev.args is not None else None
            annotations.append((ev.name, ev.cat, ts, dur,
                                int(step) if step is not None else None))
        elif ev.cat in ("cpu_op", "kernel", "gpu_memcpy", "cuda_runtime"):
            ops_by_tid.setdefault((ev.pid, ev.tid, ev.cat), []).append((ts, dur, ev.name))
    steps.sort()
    starts = [s[0] for s in steps]
    fallback = default_step if isinstance(default_step, int) else None
    for ts, end, n in steps:
        data.ranges.append(Range(data.rank, "step", f"ProfilerStep#{n}", n, ts, end - ts))
    for name, cat, ts, dur, step in annotations:
        if step is None:
            i = bisect.bisect_right(starts, ts) - 1
            step = steps[i][2] if i >= 0 and ts <= steps[i][1] else fallback
        data.ranges.append(Range(data.rank, "stage" if cat == "stage" or name in _STAGES
                                 else "range", name, step, ts, dur))
    for ops in ops_by_tid.values():
        _self_times(ops, data.ops)


def _self_times(ops: list[tuple[float, float, str]], out: dict[str, list[float]]) -> None:
    """Self time = duration minus the time of directly nested ops on the same thread."""
    ops.sort(key=lambda o: (o[0], -o[1]))
    stack: list[list[Any]] = []  # [end, self_us, name]
    def pop() -> None:
        end, self_us, name = stack.pop()
        slot = out.setdefault(name, [0, 0.0])
        slot[0] += 1
        slot[1] += max(self_us, 0.0)
    for ts, dur, name in ops:
        while stack and stack[-1][0] <= ts:
            pop()
        if stack:
            stack[-1][1] -= min(dur, stack[-1][0] - ts)
        stack.append([ts + dur, dur, name])
    while stack:
        pop()


