"""The incremental fold of Chrome-trace events: self times, launches and allocations, any order."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers import host_ops
from mindspeed_prof.analysis.readers.device.breakdown import total
from mindspeed_prof.analysis.readers.events import (
    DEVICE_CATS,
    RUNTIME_CATS,
    Event,
    EventArgs,
    number,
)
from mindspeed_prof.analysis.readers.fold import Collector, collect
from mindspeed_prof.analysis.readers.fold import device as fold_device
from mindspeed_prof.analysis.readers.intervals import merge
from mindspeed_prof.analysis.readers.kineto import chrome
from mindspeed_prof.analysis.readers.model import Alloc, Memory, Tally, TraceData
from mindspeed_prof.testing.kineto import cuda_trace


def _event(d: dict[str, Any]) -> Event:
    args = d.get("args") or {}
    return Event(
        ph=d.get("ph", "X"),
        cat=d.get("cat", ""),
        name=d.get("name", ""),
        ts=d.get("ts"),
        dur=d.get("dur"),
        tid=d.get("tid"),
        pid=d.get("pid"),
        args=EventArgs(
            step=args.get("step"),
            correlation=args.get("correlation"),
            stream=args.get("stream"),
            bytes=args.get("Bytes"),
            allocated=args.get("Total Allocated"),
            device_type=args.get("Device Type"),
        )
        if args
        else None,
    )


def _fold(events: list[dict[str, Any]], batch: int = 7) -> TraceData:
    data = TraceData(Path("t.json"), "torch", 0, "", 0)
    collector = Collector()
    evs = [_event(e) for e in events]
    for i in range(0, len(evs), batch):
        collector.add(evs[i : i + batch])
    collector.finish(data, None)
    return data


def _op(name: str, ts: float, dur: float, tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def _mem(ts: float, size: float, tid: int = 1, device: int = 0) -> dict[str, Any]:
    return {
        "ph": "i",
        "name": "[memory]",
        "ts": ts,
        "pid": 1,
        "tid": tid,
        "args": {"Bytes": size, "Total Allocated": 1000.0 + ts, "Device Type": device},
    }


TREE = [
    _op("A", 0, 100),
    _op("B", 10, 20),
    _op("C", 40, 10),
    _op("D", 45, 3),
    _op("E", 100, 5),
    _op("A", 0, 100, tid=2),
]


def test_self_time_is_duration_minus_direct_children() -> None:
    ops = _fold(TREE).ops
    assert ops == {
        "A": Tally(2, 70.0 + 100.0),
        "B": Tally(1, 20.0),
        "C": Tally(1, 7.0),
        "D": Tally(1, 3.0),
        "E": Tally(1, 5.0),
    }


def test_times_at_epoch_microseconds_are_exact() -> None:
    """At 2**51 us (2071) a double holds 0.5 us steps: a step's length is its own ``dur``, and a
    child starting 0.25 us before its parent's end is nested in it (``ts + dur`` there rounds
    to the child's start, which made the child a sibling and the step 10.0 us long)."""
    epoch = float(2**51)
    step = {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#1",
        "ts": epoch,
        "dur": 10.25,
        "pid": 1,
        "tid": 1,
    }
    data = _fold([step, _op("A", epoch, 10.25), _op("B", epoch + 10.0, 1.0)])
    assert [(r.kind, r.dur) for r in data.ranges] == [("step", 10.25)]
    assert data.ops == {"A": Tally(1, 10.0), "B": Tally(1, 1.0)}


def test_host_ops_out_of_order_within_the_heap_give_the_same_self_times() -> None:
    for seed in range(5):
        shuffled = TREE[:]
        random.Random(seed).shuffle(shuffled)
        data = _fold(shuffled, batch=2)
        assert data.ops == _fold(TREE).ops and not data.problems


def test_host_ops_out_of_order_beyond_the_heap_are_named(monkeypatch) -> None:
    monkeypatch.setattr(host_ops, "REORDER", 2)
    events = [_op(f"op{i}", 100.0 - 10 * i, 5) for i in range(8)]  # latest first: 3 held, 5 late
    data = _fold(events)
    assert not data.problems  # every op is read: a note, not a part skipped
    assert data.notes == ["t.json: 5 host ops out of order; self times approximate"]
    assert sum(t.count for t in data.ops.values()) == 8  # every op still counted


@st.composite
def _nested(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Properly nested ops on two threads (children inside parents), in start order."""
    out: list[dict[str, Any]] = []

    def grow(lo: float, hi: float, depth: int, tid: int) -> None:
        t = lo
        for _ in range(draw(st.integers(0, 3 if depth < 3 else 0))):
            dur = draw(st.integers(0, 20))
            start = t + draw(
                st.integers(1, 5)
            )  # no two ops start together: file order decides ties
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
def test_any_shuffle_within_the_heap_keeps_self_times(
    events: list, rnd: random.Random, reach: int
) -> None:
    moved = events[:]
    for i in range(len(moved) - 1, 0, -1):  # local moves, at most ``reach`` apart
        j = max(0, i - rnd.randint(0, reach))
        moved[i], moved[j] = moved[j], moved[i]
    want, got = _fold(events), _fold(moved, batch=3)
    assert got.ops.keys() == want.ops.keys()
    for name in want.ops:
        g, w = got.ops[name], want.ops[name]
        assert (g.count, g.total) == pytest.approx((w.count, w.total))
    busy = sum(
        total(merge([(e["ts"], e["ts"] + e["dur"]) for e in events if e["tid"] == tid]))
        for tid in (1, 2)
    )  # nested: the self times of a thread add up to its busy time
    assert sum(t.total for t in got.ops.values()) == pytest.approx(busy)


def test_allocation_goes_to_the_innermost_open_op() -> None:
    events = [
        *TREE,
        _mem(5, 100),
        _mem(15, 10),
        _mem(46, 1),
        _mem(48, 2),
        _mem(49, 4),
        _mem(50, 8),
        _mem(200, 99),
        _mem(20, -5),
        _mem(20, 7, tid=3),
    ]
    top = {o.op: (o.count, o.bytes) for o in _memory(events).top_ops}
    # 46, 48 inside D (ends at 48, still open at 48); 49, 50 in C (ends at 50); 200: no op
    assert top == {"A": (1, 100), "B": (1, 10), "D": (2, 3), "C": (2, 12)}


def test_device_memory_only_when_the_trace_has_a_device() -> None:
    events = [*TREE, _mem(5, 100), _mem(15, 10, device=1), _mem(16, 1, device=1)]
    memory = _memory(events)
    assert memory.top_ops == [Alloc(op="B", count=2, bytes=11)]
    assert memory.peak_allocated_bytes == 1016.0 and len(memory.timeline) == 2
    assert memory.source == "trace"
    host = _memory([*TREE, _mem(5, 100), _mem(15, 10)])
    assert {o.op: o.bytes for o in host.top_ops} == {"A": 100, "B": 10}


def _memory(events: list[dict[str, Any]]) -> Memory:
    memory = _fold(events).memory
    assert memory is not None
    return memory


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
    monkeypatch.setattr(fold_device, "PENDING", 4)
    events = _cuda_events()
    device_first = sorted(events, key=lambda e: e.get("cat") != "kernel")
    problems = _list_fold(device_first).problems
    assert any("launches and their device ops lie far apart" in p for p in problems)
    assert not _list_fold(events).problems  # in order, 4 waiting is plenty


def test_untimed_and_negative_events_counted_and_named() -> None:
    events = [
        *TREE,
        {"ph": "X", "name": "late", "ts": 1},
        {"ph": "X", "name": "nodur", "dur": 1},
        {"ph": "X", "name": "back", "ts": 5, "dur": -1},
    ]
    problems = _fold(events).problems
    assert problems == [
        "t.json: 2 complete events ('X') without ts or dur, ignored (first: 'late')",
        "t.json: 1 events end before they start (negative dur), ignored (first: 'back')",
    ]


def test_kernel_and_runtime_totals_are_the_traces_own_sums() -> None:
    """Counted independently from the raw events: per name, the count and summed duration."""
    events = _cuda_events(seed=5)
    want: dict[str, dict[str, list[float]]] = {"device": {}, "runtime": {}}
    for e in events:
        group = (
            "device"
            if e.get("cat") in DEVICE_CATS
            else "runtime"
            if e.get("cat") in RUNTIME_CATS
            else None
        )
        if group and e["ph"] == "X":
            slot = want[group].setdefault(e["name"], [0, 0.0])
            slot[0] += 1
            slot[1] += e["dur"]
    data = _fold(events, batch=50)
    assert len(want["device"]) > 3 and len(want["runtime"]) > 1
    for got, expected in ((data.kernels, want["device"]), (data.runtime, want["runtime"])):
        assert got.keys() == expected.keys()
        for name, (count, us) in expected.items():
            assert got[name].count == count and got[name].total == pytest.approx(us)


def _nccl(ts: float, tid: int, stream: int | None = None, args: bool = True) -> dict[str, Any]:
    event: dict[str, Any] = {
        "ph": "X",
        "cat": "kernel",
        "name": "ncclKernel_AllReduce",
        "ts": ts,
        "dur": 10.0,
        "pid": 0,
        "tid": tid,
    }
    if args:
        event["args"] = {"stream": stream, "correlation": None}
    return event


@pytest.mark.parametrize(
    ("a", "b", "clash"),
    [
        ({"tid": 7, "stream": 7}, {"tid": 8, "stream": 7}, True),  # args.stream decides
        ({"tid": 7, "stream": 7}, {"tid": 7, "stream": 8}, False),
        ({"tid": 7, "args": False}, {"tid": 7, "args": False}, True),  # no args: the thread
        ({"tid": 7, "args": False}, {"tid": 8, "args": False}, False),
        ({"tid": 7}, {"tid": 7}, True),  # args without a stream
        ({"tid": 7}, {"tid": 8}, False),
    ],
)
def test_a_device_ops_stream_is_its_args_stream_else_its_thread(
    a: dict[str, Any], b: dict[str, Any], clash: bool
) -> None:
    problems = _fold([_nccl(0.0, **a), _nccl(5.0, **b)]).problems
    assert any("collectives overlap another on the same stream" in p for p in problems) == clash


def _kernel(corr: int, ts: float) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": "gemm",
        "ts": ts,
        "dur": 1.0,
        "pid": 0,
        "tid": 7,
        "args": {"correlation": corr},
    }


def _launch(corr: int, ts: float) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "ts": ts,
        "dur": 1.0,
        "pid": 1,
        "tid": 1,
        "args": {"correlation": corr},
    }


def _missed(problems: list[str]) -> int:
    found = [p for p in problems if "launches and their device ops lie far apart" in p]
    return int(found[0].split(": ")[-1].split()[0]) if found else 0


def test_device_ops_waiting_for_their_launch_drop_the_older_half_past_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """PENDING=4: the 5th waiting op keeps the newer half (3 of 5); 2 are dropped, named."""
    monkeypatch.setattr(fold_device, "PENDING", 4)
    assert _missed(_fold([_kernel(c, 10.0 * c) for c in range(1, 5)]).problems) == 0
    assert _missed(_fold([_kernel(c, 10.0 * c) for c in range(1, 7)]).problems) == 2
    # the 7th: 5 waiting again (3, 4, 5, 6, 7 less the 2 dropped before): 2 more, 4 in all
    assert _missed(_fold([_kernel(c, 10.0 * c) for c in range(1, 8)]).problems) == 4
    assert _fold([_kernel(c, 10.0 * c) for c in range(1, 7)]).problems[-1] == (
        "t.json: launches and their device ops lie far apart in the file (over 4 waiting): 2 "
        "device ops may count from their own start instead of their launch"
    )


def test_launches_past_the_limit_are_forgotten_half_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fold_device, "PENDING", 4)
    four = [_launch(c, 10.0 * c) for c in range(1, 5)]
    assert _missed(_fold([*four, _kernel(1, 100.0)]).problems) == 0
    five = [_launch(c, 10.0 * c) for c in range(1, 6)]
    assert _missed(_fold([*five, _kernel(1, 100.0)]).problems) == 1  # launch 1 forgotten


def test_num_keeps_finite_numbers_only() -> None:
    num = number
    assert num(1.5) == 1.5 and num(3) == 3.0 and isinstance(num(3), float)
    assert num("2.5") == 2.5 and num(None) is None and num("x") is None
    for bad in (float("nan"), float("inf"), -float("inf"), "nan", "inf", "-inf"):
        assert num(bad) is None, bad


def test_ops_starting_together_are_parent_then_child_and_not_late() -> None:
    data = _fold([_op("child", 0, 4), _op("parent", 0, 10)])
    assert data.ops == {"parent": Tally(1, 6.0), "child": Tally(1, 4.0)} and not data.problems


def test_an_op_running_past_its_parents_end_takes_only_the_overlap() -> None:
    assert _fold([_op("P", 0, 10), _op("Q", 5, 10)]).ops == {
        "P": Tally(1, 5.0),
        "Q": Tally(1, 10.0),
    }


def test_memory_timeline_is_in_time_order_whatever_the_file_order() -> None:
    events = [*TREE, _mem(40, 1), _mem(5, 2), _mem(20, 3)]
    times = [t for t, _ in _memory(events).timeline]
    assert times == [5.0, 20.0, 40.0]


def test_late_ops_of_every_thread_make_one_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_ops, "REORDER", 1)
    events = [
        {**_op(f"op{i}", 100.0 - 10 * i, 5), "pid": 4, "tid": tid}
        for tid in (2, 3)
        for i in range(4)
    ]  # 2 late on each thread
    data = _fold(events)
    assert data.notes == ["t.json: 4 host ops out of order; self times approximate"]
    assert not data.problems


def test_the_first_untimed_event_is_named_even_without_a_name() -> None:
    events = [{"ph": "X", "ts": 1}, {"ph": "X", "name": "late", "ts": 2}]
    assert _fold(events).problems == [
        "t.json: 2 complete events ('X') without ts or dur, ignored (first: '')"
    ]


def test_read_json_takes_rank_and_default_step_from_the_files_metadata(tmp_path: Path) -> None:
    """A range file names its rank and first step in ``mindspeed_prof``; a range outside every
    ProfilerStep takes that step, and problems name the file."""
    import json

    path = tmp_path / "ranges.json"
    path.write_text(
        json.dumps(
            {
                "mindspeed_prof": {"kind": "spans", "rank": 5, "step": 7},
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "user_annotation",
                        "name": "loss",
                        "ts": 1.0,
                        "dur": 2.0,
                        "pid": 1,
                        "tid": 1,
                    },
                    {"ph": "X", "name": "back", "ts": 5, "dur": -1},
                ],
            }
        )
    )
    data = chrome.read_json(path, "g", path.stat().st_size)
    assert data.rank == 5 and data.kind == "spans"
    assert [(r.name, r.step, r.rank) for r in data.ranges] == [("loss", 7, 5)]
    assert data.problems == [
        f"{path}: 1 events end before they start (negative dur), ignored (first: 'back')"
    ]


def _annotation(name: str, ts: float) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "ts": ts,
        "dur": 1.0,
        "pid": 1,
        "tid": 1,
    }


def test_a_range_belongs_to_the_step_whose_host_range_holds_its_start() -> None:
    step = {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#3",
        "ts": 0.0,
        "dur": 10.0,
        "pid": 1,
        "tid": 1,
    }
    events = [
        step,
        _annotation("inside", 4.0),
        _annotation("at_end", 10.0),
        _annotation("after", 10.5),
    ]
    data = TraceData(Path("t.json"), "torch", 0, "", 0)
    collect(data, [_event(e) for e in events], 8)  # 8: the file's own step, for the rest
    got = {r.name: r.step for r in data.ranges if r.kind == "range"}
    assert got == {"inside": 3, "at_end": 3, "after": 8}
    other = TraceData(Path("t.json"), "torch", 0, "", 0)
    collect(other, [_event(_annotation("after", 10.5))], "8")  # not an int: no step
    assert [r.step for r in other.ranges] == [None]


def test_a_long_name_in_a_problem_line_is_cut_at_60_characters() -> None:
    name = "n" * 70
    (problem,) = _fold([{"ph": "X", "name": name, "ts": 1}]).problems
    assert problem.endswith(f"(first: {'n' * 60!r})")


def test_device_problem_lines_in_full() -> None:
    long = "ncclKernel_" + "x" * 70
    first = {**_nccl(0.0, 7, stream=7), "name": long}
    data = _fold([first, _nccl(5.0, 7, stream=7)])
    assert data.problems == [
        "t.json: 1 collectives overlap another on the same stream (first: "
        "'ncclKernel_AllReduce'); their time is counted once"
    ]
    assert data.notes == ["t.json: no ProfilerStep ranges; 2 device events form one row"]
    third = {**_nccl(8.0, 7, stream=7), "name": long}
    (clash,) = _fold([_nccl(0.0, 7, stream=7), third]).problems
    assert f"(first: {long[:60]!r})" in clash


def test_what_each_event_kind_becomes() -> None:
    """Step ranges keep their duration; an annotation's own ``args.step`` wins; Kineto's device
    copies of annotations are skipped; a ``stage``-category range of another name is a custom
    range, and so is a ``step``-category one that is not a ProfilerStep; a runtime call without
    args is counted; ops of equal extent nest in file order."""
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#2",
            "ts": 100.0,
            "dur": 50.0,
            "pid": 1,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "loss",
            "ts": 0.0,
            "dur": 1.0,
            "pid": 1,
            "tid": 1,
            "args": {"step": 4},
        },
        {
            "ph": "X",
            "cat": "gpu_user_annotation",
            "name": "loss",
            "ts": 0.0,
            "dur": 1.0,
            "pid": 0,
            "tid": 7,
        },
        {
            "ph": "X",
            "cat": "stage",
            "name": "reward_fn",
            "ts": 110.0,
            "dur": 5.0,
            "pid": 1,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMalloc",
            "ts": 120.0,
            "dur": 3.0,
            "pid": 1,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "step",
            "name": "rollout_wait",
            "ts": 112.0,
            "dur": 1.0,
            "pid": 1,
            "tid": 1,
        },
        _op("a", 300, 1),
        _op("outer", 200, 10),
        _mem(400, 5),
        _op("inner", 200, 10),
    ]
    data = _fold(events)
    got = sorted((r.kind, r.name, r.step, r.dur) for r in data.ranges)
    assert got == [
        ("range", "loss", 4, 1.0),
        ("range", "reward_fn", 2, 5.0),
        ("range", "rollout_wait", 2, 1.0),
        ("step", "ProfilerStep#2", 2, 50.0),
    ]
    assert data.runtime == {"cudaMalloc": Tally(1, 3.0)}
    # file order decides which of two equal ops is the parent, a [memory] event between them too
    assert data.ops == {"a": Tally(1, 1.0), "outer": Tally(1, 0.0), "inner": Tally(1, 10.0)}


def test_only_allocations_count_toward_an_ops_bytes() -> None:
    """Frees (negative), zero-byte and size-less ``[memory]`` events are not allocations."""
    no_size = {**_mem(16, 0), "args": {"Total Allocated": 5.0}}
    events = [*TREE, _mem(5, 100), _mem(15, 0), no_size, _mem(17, -8)]
    top = {o.op: (o.count, o.bytes) for o in _memory(events).top_ops}
    assert top == {"A": (1, 100)}


def test_bare_time_is_a_ranges_time_no_host_op_covers_on_any_thread() -> None:
    """Stage 0-100 us: ops 10-30 (holding a nested op) and 20-50 on another thread, 80-90: 50
    us covered, 50 bare; the custom range 55-75 holds 20 of them; the step has no bare time."""
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "ts": 0,
            "dur": 100,
            "tid": 1,
            "pid": 1,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "actor_update",
            "ts": 0,
            "dur": 100,
            "tid": 1,
            "pid": 1,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "wait",
            "ts": 55,
            "dur": 20,
            "tid": 1,
            "pid": 1,
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 20, "tid": 1, "pid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "ts": 12, "dur": 5, "tid": 1, "pid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 20, "dur": 30, "tid": 2, "pid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "ts": 80, "dur": 10, "tid": 1, "pid": 1},
    ]
    bare = {r.name: r.bare for r in _fold(events).ranges}
    assert bare == {"ProfilerStep#1": None, "actor_update": 50.0, "wait": 20.0}
    no_ops = _fold([e for e in events if e["cat"] != "cpu_op"])  # a capture of ranges only
    assert {r.bare for r in no_ops.ranges} == {None}


@given(
    st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300), st.integers(1, 3)), max_size=30),
    st.integers(0, 900),
    st.integers(1, 500),
)
def test_bare_time_is_within_the_range(
    ops: list[tuple[int, int, int]], start: int, dur: int
) -> None:
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "actor_update",
            "ts": start,
            "dur": dur,
            "tid": 1,
            "pid": 1,
        }
    ]
    events += [
        {"ph": "X", "cat": "cpu_op", "name": "op", "ts": ts, "dur": d, "tid": tid, "pid": 1}
        for ts, d, tid in ops
    ]
    (stage,) = [r for r in _fold(events).ranges if r.kind == "stage"]
    if not ops:
        assert stage.bare is None
    else:
        assert stage.bare is not None and 0.0 <= stage.bare <= dur
