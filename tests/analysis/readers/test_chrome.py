"""The incremental fold of Chrome-trace events: self times, launches and allocations, any order."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.device import merge, total
from mindspeed_prof.analysis.readers import chrome
from mindspeed_prof.analysis.readers.chrome import Collector, Event, EventArgs, collect
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.testing.kineto import cuda_trace


def _event(d: dict[str, Any]) -> Event:
    args = d.get("args") or {}
    return Event(ph=d.get("ph", "X"), cat=d.get("cat", ""), name=d.get("name", ""),
                 ts=d.get("ts"), dur=d.get("dur"), tid=d.get("tid"), pid=d.get("pid"),
                 args=EventArgs(correlation=args.get("correlation"), stream=args.get("stream"),
                                bytes=args.get("Bytes"), allocated=args.get("Total Allocated"),
                                device_type=args.get("Device Type")) if args else None)


def _fold(events: list[dict[str, Any]], batch: int = 7) -> TraceData:
    data = TraceData(Path("t.json"), "torch", 0, "", 0)
    fold = Collector(data.path)
    evs = [_event(e) for e in events]
    for i in range(0, len(evs), batch):
        fold.add(evs[i:i + batch])
    fold.finish(data, None)
    return data


def _op(name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def _mem(ts: float, size: float, tid: int = 1, device: int = 0) -> dict[str, Any]:
    return {"ph": "i", "name": "[memory]", "ts": ts, "pid": 1, "tid": tid,
            "args": {"Bytes": size, "Total Allocated": 1000.0 + ts, "Device Type": device}}


TREE = [_op("A", 0, 100), _op("B", 10, 20), _op("C", 40, 10), _op("D", 45, 3),
        _op("E", 100, 5), _op("A", 0, 100, tid=2)]


def test_self_time_is_duration_minus_direct_children() -> None:
    ops = _fold(TREE).ops
    assert ops == {"A": [2, 70.0 + 100.0], "B": [1, 20.0], "C": [1, 7.0], "D": [1, 3.0],
                   "E": [1, 5.0]}


def test_host_ops_out_of_order_within_the_heap_give_the_same_self_times() -> None:
    for seed in range(5):
        shuffled = TREE[:]
        random.Random(seed).shuffle(shuffled)
        data = _fold(shuffled, batch=2)
        assert data.ops == _fold(TREE).ops and not data.problems


def test_host_ops_out_of_order_beyond_the_heap_are_named(monkeypatch) -> None:
    monkeypatch.setattr(chrome, "REORDER", 2)
    events = [_op(f"op{i}", 100.0 - 10 * i, 5) for i in range(8)]  # latest first: 3 held, 5 late
    (problem,) = _fold(events).problems
    assert problem.startswith("t.json: thread 1 of process 1: 5 host ops out of start order "
                              "by more than 2")
    assert sum(c for c, _ in _fold(events).ops.values()) == 8  # every op still counted


@st.composite
def _nested(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Properly nested ops on two threads (children inside parents), in start order."""
    out: list[dict[str, Any]] = []

    def grow(lo: float, hi: float, depth: int, tid: int) -> None:
        t = lo
        for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
            dur = draw(st.integers(0, 20))
            start = t + draw(st.integers(1, 5))  # no two ops start together: file order decides ties
            if start + dur > hi:
                return
            out.append(_op(draw(st.sampled_from("pqrs")), float(start), float(dur), tid))
            grow(start, start + dur, depth + 1, tid)
            t = start + dur
    for tid in (1, 2):
        grow(0, 400, 0, tid)
    return out


@settings(max_examples=100, deadline=None)
@given(_nested(), st.randoms(use_true_random=False), st.integers(1, 6))
def test_any_shuffle_within_the_heap_keeps_self_times(events: list, rnd: random.Random,
                                                       reach: int) -> None:
    moved = events[:]
    for i in range(len(moved) - 1, 0, -1):  # local moves, at most ``reach`` apart
        j = max(0, i - rnd.randint(0, reach))
        moved[i], moved[j] = moved[j], moved[i]
    want, got = _fold(events), _fold(moved, batch=3)
    assert got.ops.keys() == want.ops.keys()
    for name in want.ops:
        assert got.ops[name] == pytest.approx(want.ops[name])
    busy = sum(total(merge([(e["ts"], e["ts"] + e["dur"]) for e in events if e["tid"] == tid]))
               for tid in (1, 2))  # nested: the self times of a thread add up to its busy time
    assert sum(s for _, s in got.ops.values()) == pytest.approx(busy)


def test_allocation_goes_to_the_innermost_open_op() -> None:
    events = [*TREE, _mem(5, 100), _mem(15, 10), _mem(46, 1), _mem(48, 2), _mem(49, 4),
              _mem(50, 8), _mem(200, 99), _mem(20, -5), _mem(20, 7, tid=3)]
    top = {o["op"]: (o["count"], o["bytes"]) for o in _fold(events).memory["top_ops"]}
    # 46, 48 inside D (ends at 48, still open at 48); 49, 50 in C (ends at 50); 200: no op
    assert top == {"A": (1, 100), "B": (1, 10), "D": (2, 3), "C": (2, 12)}


def test_device_memory_only_when_the_trace_has_a_device() -> None:
    events = [*TREE, _mem(5, 100), _mem(15, 10, device=1), _mem(16, 1, device=1)]
    memory = _fold(events).memory
    assert {o["op"]: o["bytes"] for o in memory["top_ops"]} == {"B": 11}
    assert memory["peak_allocated_bytes"] == 1016.0 and len(memory["timeline"]) == 2
    host = _fold([*TREE, _mem(5, 100), _mem(15, 10)]).memory
    assert {o["op"]: o["bytes"] for o in host["top_ops"]} == {"A": 100, "B": 10}


def _cuda_events(seed: int = 3) -> list[dict[str, Any]]:
    return cuda_trace(rank=0, seed=seed, steps=3)["traceEvents"]


def _list_fold(events: list[dict[str, Any]]) -> TraceData:
    data = TraceData(Path("t.json"), "torch", 0, "", 0)
    collect(data, [_event(e) for e in events], None)
    return data


def test_kernels_before_their_launch_are_attributed_the_same() -> None:
    events = _cuda_events()
    launch_first = _list_fold(events)
    device_first = sorted(events, key=lambda e: e.get("cat") != "kernel")  # every kernel first
    got = _list_fold(device_first)
    assert got.device == launch_first.device and got.kernels == launch_first.kernels
    assert not got.problems and len(got.device) > 3


def test_launches_too_far_from_their_kernels_are_named(monkeypatch) -> None:
    monkeypatch.setattr(chrome, "PENDING", 4)
    events = _cuda_events()
    device_first = sorted(events, key=lambda e: e.get("cat") != "kernel")
    problems = _list_fold(device_first).problems
    assert any("launches and their device ops lie far apart" in p for p in problems)
    assert not _list_fold(events).problems  # in order, 4 waiting is plenty


def test_untimed_and_negative_events_counted_and_named() -> None:
    events = [*TREE, {"ph": "X", "name": "late", "ts": 1}, {"ph": "X", "name": "nodur", "dur": 1},
              {"ph": "X", "name": "back", "ts": 5, "dur": -1}]
    problems = _fold(events).problems
    assert problems == ["t.json: 2 complete events ('X') without ts or dur, ignored "
                        "(first: 'late')",
                        "t.json: 1 events end before they start (negative dur), ignored "
                        "(first: 'back')"]
