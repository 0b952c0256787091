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

__all__ = ["DEVICE_CATS", "Event", "EventArgs", "RUNTIME_CATS", "collect", "decode_events",
           "read_json"]

_STAGES = frozenset(STAGES)
#: Kineto categories of work on the device, and of host calls into the CUDA runtime/driver.
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver"})
_STEP = re.compile(r"^ProfilerStep#(\d+)$")

Number = Union[int, float, str, None]


class EventArgs(msgspec.Struct):
    step: Union[int, float, str, None] = None
    correlation: Union[int, str, None] = None
    stream: Union[int, str, None] = None
    bytes: Number = msgspec.field(default=None, name="Bytes")
    allocated: Number = msgspec.field(default=None, name="Total Allocated")
    reserved: Number = msgspec.field(default=None, name="Total Reserved")
    device_type: Number = msgspec.field(default=None, name="Device Type")


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
    kind = type(value)
    if kind is float:  # the common case first: finite floats as they are
        return value if value - value == 0 else None  # type: ignore[return-value,operator]
    if kind is int:
        return float(value)  # type: ignore[arg-type]
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and abs(out) != float("inf") else None


def collect(data: TraceData, events: list[Event], default_step: Any) -> None:
    """Sort events into step/stage/custom ranges, host op self time, device and memory facts.

    Problems (events without times, negative durations, device activity without steps,
    collectives overlapping on one stream) are named in ``data.problems``; the rest is kept.
    """
    steps: list[tuple[float, float, int]] = []
    annotations: list[tuple[str, float, float, int | None, str]] = []
    ops_by_tid: dict[Any, list[tuple[float, float, str]]] = {}
    device: list[tuple[float, float, str, Any, Any]] = []
    launches: dict[Any, float] = {}
    memory: list[tuple[float, Any, float, float | None, float | None, float | None]] = []
    untimed: list[str] = []
    negative: list[str] = []
    for ev in events:
        if ev.ph == "i" and ev.name == "[memory]" and ev.args is not None:
            ts = _num(ev.ts)
            if ts is not None:
                a = ev.args
                memory.append((ts, ev.tid, _num(a.bytes) or 0.0, _num(a.allocated),
                               _num(a.reserved), _num(a.device_type)))
            continue
        if ev.ph != "X":
            continue
        ts, dur = _num(ev.ts), _num(ev.dur)
        if ts is None or dur is None:
            untimed.append(ev.name)
            continue
        if dur < 0:
            negative.append(ev.name)
            continue
        cat = ev.cat
        if cat == "gpu_user_annotation":  # Kineto's device-side copy of host annotations
            continue
        m = _STEP.match(ev.name)
        if cat in DEVICE_CATS:
            args = ev.args
            device.append((ts, dur, ev.name, args.correlation if args else None,
                           (ev.pid, args.stream if args and args.stream is not None else ev.tid)))
        elif cat in RUNTIME_CATS:
            slot = data.runtime.setdefault(ev.name, [0, 0.0])
            slot[0] += 1
            slot[1] += dur
            if ev.args is not None and ev.args.correlation is not None:
                launches[ev.args.correlation] = ts
        elif m:
            steps.append((ts, ts + dur, int(m.group(1))))
        elif ev.name in _STAGES or cat in ("user_annotation", "stage", "step"):
            step = _num(ev.args.step) if ev.args is not None else None
            annotations.append((ev.name, ts, dur, int(step) if step is not None else None,
                                str(ev.tid)))
        elif cat == "cpu_op":
            ops_by_tid.setdefault((ev.pid, ev.tid), []).append((ts, dur, ev.name))
    steps.sort()
    starts = [s[0] for s in steps]
    fallback = default_step if isinstance(default_step, int) else None
    for ts, end, n in steps:
        data.ranges.append(Range(data.rank, "step", f"ProfilerStep#{n}", n, ts, end - ts))
    for name, ts, dur, step, tid in annotations:
        if step is None:
            i = bisect.bisect_right(starts, ts) - 1
            step = steps[i][2] if i >= 0 and ts <= steps[i][1] else fallback
        data.ranges.append(Range(data.rank, "stage" if name in _STAGES else "range", name, step,
                                 ts, dur, tid=tid))
    for ops in ops_by_tid.values():
        _self_times(ops, data.ops)
    _device(data, device, launches, [(n, s, e) for s, e, n in steps])
    if memory:
        from mindspeed_prof.analysis.memory import from_events

        data.memory = from_events(memory, ops_by_tid, data.ranges)
    for what, names in (("complete events ('X') without ts or dur", untimed),
                        ("events end before they start (negative dur)", negative)):
        if names:
            data.problems.append(f"{data.path}: {len(names)} {what}, ignored "
                                 f"(first: {names[0][:60]!r})")


def _device(data: TraceData, device: list[tuple[float, float, str, Any, Any]],
            launches: dict[Any, float], steps: list[tuple[int, float, float]]) -> None:
    """Device kernel totals and the per-step breakdown."""
    if not device:
        return
    from mindspeed_prof.analysis.device import DeviceOp, breakdown, kind_of

    ops: list[DeviceOp] = []
    comm_by_stream: dict[Any, list[tuple[float, float, str]]] = {}
    for ts, dur, name, corr, stream in device:
        slot = data.kernels.setdefault(name, [0, 0.0])
        slot[0] += 1
        slot[1] += dur
        kind = kind_of(name)
        ops.append(DeviceOp(ts, ts + dur, kind, launches.get(corr, ts)))
        if kind == "comm":
            comm_by_stream.setdefault(stream, []).append((ts, ts + dur, name))
    stages = [(r.name, r.step, r.ts, r.dur) for r in data.ranges if r.kind == "stage"]
    data.device = breakdown(ops, steps, stages)
    if not steps:
        data.problems.append(f"{data.path}: {len(ops)} device events but no ProfilerStep "
                             "ranges: the device breakdown covers the whole trace as one row")
    clashes = [b[2] for spans in comm_by_stream.values()
               for a, b in zip(sorted(spans), sorted(spans)[1:]) if b[0] < a[1]]
    if clashes:
        data.problems.append(f"{data.path}: {len(clashes)} collectives overlap another on the "
                             f"same stream (first: {clashes[0][:60]!r}); their time is counted "
                             "once")


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


