"""Host ops put back in start order a batch at a time give what one at a time gives."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers import host_ops
from mindspeed_prof.analysis.readers.host_ops import HostOps
from mindspeed_prof.analysis.readers.model import Tally

_ITEM = st.tuples(
    st.integers(0, 60), st.integers(0, 25), st.sampled_from("abc"), st.integers(1, 2), st.booleans()
)


def _run(items: list[tuple[int, int, str, int, bool]], batch: int) -> tuple[object, ...]:
    host = HostOps()
    for k, (ts, dur, name, tid, alloc) in enumerate(items):
        if alloc:
            host.alloc((1, tid), float(ts), float(dur + 1), 1)
        else:
            host.op((1, tid), float(ts), float(dur), name)
        if (k + 1) % batch == 0:
            host.flush()
    ops: dict[str, Tally] = {}
    late, deep = host.finish(ops)
    return list(ops.items()), late, deep, _tops(host), host.allocs


def _tops(host: HostOps) -> list[tuple[float, float]]:
    """Every thread's top-level (start, end), read back from disk and memory, sorted."""
    return sorted(
        (lo, hi) for run in host.tops() for block in run.blocks() for lo, hi in zip(*block)
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(_ITEM, max_size=120), st.integers(2, 30), st.sampled_from([1, 2, 3, 8, 20, 4096]))
def test_batches_give_what_one_at_a_time_gives(items, batch, reorder) -> None:
    old = host_ops.REORDER
    host_ops.REORDER = reorder
    try:
        assert _run(items, batch) == _run(items, 1)
    finally:
        host_ops.REORDER = old


def test_a_batch_out_of_order_within_the_heap_comes_out_sorted() -> None:
    host = HostOps()
    for ts in (30, 10, 20, 0):
        host.op((1, 1), float(ts), 5.0, f"op{ts}")
    host.flush()
    ops: dict[str, Tally] = {}
    assert host.finish(ops) == (0, 0)  # none late: the heap put them back in order
    assert host.origin == 30.0  # times are kept relative to the first item's
    assert [lo + 30.0 for lo, _ in _tops(host)] == [0.0, 10.0, 20.0, 30.0]


_NESTED = st.tuples(
    st.integers(0, 60),
    st.sampled_from([0, 1, 2, 5, 9, 30, 61]),
    st.sampled_from("abc"),
    st.integers(1, 2),
    st.just(False),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_NESTED, max_size=120),
    st.integers(1, 30),
    st.sampled_from([1, 3, 8, 4096]),
    st.sampled_from([2, 3, 512]),
    st.sampled_from(["any", "sorted", "nested"]),
)
def test_ops_nested_in_numpy_give_what_the_stack_gives(items, batch, reorder, depth, how) -> None:
    """Ops in start order or not, nesting properly or not, deep or not, in batches that carry
    open ops across: ``host_nest`` gives the stack's self times, spans, late and deep counts."""
    if how != "any":
        items = sorted(items)
    if how == "nested":  # each op cut to end by its parent's end, per thread
        ends: dict[int, list[int]] = {}
        for k, (ts, dur, name, tid, alloc) in enumerate(items):
            stack = ends.setdefault(tid, [])
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack:
                dur = min(dur, stack[-1] - ts)
            stack.append(ts + dur)
            items[k] = (ts, dur, name, tid, alloc)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(host_ops, "REORDER", reorder)
        m.setattr(host_ops, "MAX_DEPTH", depth)
        got = _run(items, batch)
        m.setattr(host_ops, "nest", lambda *_: None)
        assert got == _run(items, batch)
