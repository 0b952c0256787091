"""``timeline --max-mb``: a trace over budget merges short operators, then keeps the operators
of the slowest rank-steps only; steps, stages and each rank's longest operators always stay."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.timeline import write_timeline
from mindspeed_prof.analysis.timeline.budget import (
    ALWAYS,
    CAP_US,
    BudgetError,
    Plan,
    Stats,
    Tally,
    plan,
)
from mindspeed_prof.analysis.timeline.detail import StepOf, write_detail
from mindspeed_prof.analysis.timeline.event import TraceEvent
from mindspeed_prof.cli import main
from mindspeed_prof.testing.kineto import write_cuda_trace

RANKS, SLOW = 6, 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six ranks of level1 CUDA traces, three steps each; rank 3 does half as much work again
    (its steps are the longest)."""
    root = tmp_path_factory.mktemp("budget")
    for rank in range(RANKS):
        write_cuda_trace(
            root / "integrated" / f"rank{rank}_host_{100 + rank}.pt.trace.json",
            rank=rank,
            steps=3,
            kernels_per_stage=90 if rank == SLOW else 60,
        )
    return root


@pytest.fixture(scope="module")
def full(run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any]:
    out = tmp_path_factory.mktemp("full") / "full.json"
    result = write_timeline(analyse(run, jobs=1, cache=False).traces, out, detail=None)
    return json.loads(out.read_text()), result


def _slices(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X"]


def _frame(trace: dict[str, Any]) -> set[tuple[Any, ...]]:
    """Steps, stages and ranges: (pid, tid, name, ts, dur)."""
    return {
        (e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in _slices(trace) if e["tid"] < 10
    }


def _longest(trace: dict[str, Any]) -> set[tuple[Any, ...]]:
    """The ``ALWAYS`` longest operators of every rank's track."""
    ops: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in _slices(trace):
        if e["tid"] >= 10 and e.get("cat") != "merged":
            ops[e["pid"]].append(e)
    return {
        (e["pid"], e["tid"], e["name"], e["ts"], e["dur"])
        for events in ops.values()
        for e in sorted(events, key=lambda e: -e["dur"])[:ALWAYS]
    }


def _ops(trace: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {
        (e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in _slices(trace) if e["tid"] >= 10
    }


def _nested(trace: dict[str, Any]) -> bool:
    """On every thread, any two slices are disjoint or one holds the other (1 ns slack)."""
    by_thread: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for e in _slices(trace):
        if e["tid"] >= 10:
            by_thread[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        open_: list[float] = []
        for start, end in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ and open_[-1] <= start + 1e-3:
                open_.pop()
            if open_ and end > open_[-1] + 1e-3:
                return False
            open_.append(end)
    return True


def test_over_budget_short_operators_merge_and_the_frame_and_longest_stay(
    run: Path, full: tuple[dict[str, Any], Any], tmp_path: Path
) -> None:
    whole, whole_result = full
    budget = whole_result.json_bytes * 2 // 5
    out = tmp_path / "t.json"
    result = write_timeline(
        analyse(run, jobs=1, cache=False).traces, out, detail=None, max_bytes=budget
    )
    assert result.json_bytes == out.stat().st_size <= budget
    trace = json.loads(out.read_text())
    assert _frame(trace) == _frame(whole)
    assert _longest(whole) <= _ops(trace)
    merged = [e for e in _slices(trace) if e.get("cat") == "merged"]
    assert merged and all(
        e["name"] == f"merged: {e['args']['ops']} ops" and e["args"]["ops"] > 1 for e in merged
    )
    kept = len(_ops(trace)) - len(merged)
    assert kept + sum(e["args"]["ops"] for e in merged) == len(_ops(whole))
    below = trace["otherData"]["budget"]["merged_below_us"]
    assert 0 < below <= 1000

    def short(t: dict[str, Any]) -> int:  # written as themselves: lone ones, the longest
        return sum(
            e["dur"] < below for e in _slices(t) if e["tid"] >= 10 and e.get("cat") != "merged"
        )

    assert short(trace) < short(whole) / 10
    assert result.budget is not None
    assert (
        trace["otherData"]["budget"]["merged_operators"]
        == result.budget["merged_operators"]
        == sum(e["args"]["ops"] for e in merged)
    )
    assert _nested(trace)


def test_when_merging_is_not_enough_the_slowest_rank_steps_keep_their_operators(
    run: Path, full: tuple[dict[str, Any], Any], tmp_path: Path
) -> None:
    whole, _ = full
    traces = analyse(run, jobs=1, cache=False).traces
    frame_only = write_timeline(traces, tmp_path / "frame.json").json_bytes
    budget = frame_only + 40_000
    out = tmp_path / "t.json"
    result = write_timeline(traces, out, detail=None, max_bytes=budget)
    assert result.json_bytes <= budget
    trace = json.loads(out.read_text())
    facts = trace["otherData"]["budget"]
    assert facts["left_out_operators"] > 0 and facts["merged_below_us"] == pytest.approx(
        1000, rel=0.1
    )
    kept_cells = facts["operators_of"]
    assert 0 < len(kept_cells) < RANKS * 3
    assert all(rank == str(SLOW) for rank, _ in kept_cells[:1])  # the slow rank's steps first
    assert _frame(trace) == _frame(whole) and _longest(whole) <= _ops(trace)
    assert _nested(trace)


def test_a_budget_below_steps_and_stages_is_refused_and_nothing_written(
    run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "t.json"
    with pytest.raises(BudgetError, match="alone take"):
        write_timeline(analyse(run, jobs=1, cache=False).traces, out, detail=None, max_bytes=10_000)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_run_of_short_operators_never_crosses_a_kept_slice() -> None:
    """Short operators inside a long one and after it are two merged slices, not one that
    would straddle its end; a lone short operator is written as itself."""
    thread = (1, 1)
    events = [(thread, "cpu_op", "short", ts, 1.0) for ts in (1.0, 3.0, 5.0, 12.0, 14.0)]
    events += [
        (thread, "cpu_op", "long", 0.0, 10.0),
        (thread, "cpu_op", "alone", 30.0, 1.0),
        (thread, "cpu_op", "long2", 20.0, 8.0),
    ]
    written: list[TraceEvent] = []
    write_detail(written.append, 1, events, 0.0, {}, Plan(below_us=5.0), StepOf([]), Tally())
    got = [(e["name"], e["ts"], e["dur"]) for e in written if e["ph"] == "X"]
    assert got == [
        ("long", 0.0, 10.0),
        ("merged: 3 ops", 1.0, 5.0),
        ("merged: 2 ops", 12.0, 3.0),
        ("long2", 20.0, 8.0),
        ("alone", 30.0, 1.0),
    ]


def test_cli_max_mb(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json.gz"
    assert main(["timeline", str(run), "-o", str(out), "--detail", "all", "--max-mb", "0.5"]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "--max-mb" in x]
    assert "operators shorter than" in line and "merged into" in line
    with pytest.raises(SystemExit):
        main(["timeline", str(run), "-o", str(out), "--max-mb", "-1"])
    assert "--max-mb" in capsys.readouterr().err
    assert main(["timeline", str(run), "-o", str(out), "--detail", "all", "--max-mb", "0.01"]) == 1
    assert "raise --max-mb" in capsys.readouterr().err


def test_perfetto_format_holds_the_same_slices_as_json(run: Path, tmp_path: Path) -> None:
    """``--format perfetto``: each JSON slice is a begin and an end on its thread's track (ns on
    the wall clock), each track named as in JSON; the budget applies to its bytes."""
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

    traces = analyse(run, jobs=1, cache=False).traces
    as_json = tmp_path / "t.json"
    write_timeline(traces, as_json, detail=frozenset({SLOW}), max_bytes=300_000)
    trace = json.loads(as_json.read_text())
    out = tmp_path / "t.pftrace"
    result = write_timeline(
        traces, out, detail=frozenset({SLOW}), max_bytes=300_000, fmt="perfetto"
    )
    assert result.json_bytes == out.stat().st_size <= 300_000
    packets = Trace.FromString(out.read_bytes()).packet
    names = {
        p.track_descriptor.uuid: p.track_descriptor.thread.thread_name
        or p.track_descriptor.process.process_name
        or p.track_descriptor.name
        for p in packets
        if p.HasField("track_descriptor")
    }
    origin_ns = round(trace["otherData"]["origin_wall_us"] * 1000)
    open_: dict[int, list[tuple[str, int]]] = defaultdict(list)
    got = []
    for p in packets:
        ev = p.track_event
        if ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            open_[ev.track_uuid].append((ev.name, p.timestamp))
        elif ev.type == TrackEvent.TYPE_SLICE_END:
            name, start = open_[ev.track_uuid].pop()
            got.append((names[ev.track_uuid], name, start - origin_ns, p.timestamp - start))
    thread_names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in trace["traceEvents"]
        if e["name"] == "thread_name"
    }
    want = [
        (
            thread_names[(e["pid"], e["tid"])],
            e["name"],
            round(e["ts"] * 1000),
            round(e["dur"] * 1000),
        )
        for e in _slices(trace)
    ]
    assert sorted(got) == sorted(want)
    assert any(n.startswith("merged: ") for _, n, _, _ in got)
    assert any(name.startswith("rank 3 · integrated") for name in names.values())


def test_perfetto_format_without_its_package_is_a_usage_error(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    for name in [m for m in sys.modules if m == "perfetto" or m.startswith("perfetto.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "perfetto", None)
    out = tmp_path / "t.pftrace"
    assert main(["timeline", str(run), "-o", str(out), "--format", "perfetto"]) == 2
    from mindspeed_prof.extras import install_line

    assert install_line("perfetto") in capsys.readouterr().err and not out.exists()


def _stats(threads: int) -> Stats:
    """4 rank-steps of ``threads`` threads in all, each thread's operators over the bins."""
    stats = Stats()
    for pid in range(4):
        for tid in range(threads // 4):
            for dur in (0.5,) * 12 + (3.0,) * 6 + (40.0, 40.0, 900.0, 20_000.0):
                stats.add(pid, 1, (pid, tid), "aclnnMatMul", "kernel", dur)
    return stats


def _plan_peak(stats: Stats, budget: int) -> int:
    """``plan``'s own peak (tracemalloc, above what it was given)."""
    import tracemalloc

    plan(_stats(4), 0, budget)  # numpy's first uses allocate for good: not plan's
    tracemalloc.start()
    try:
        plan(stats, 10_000, budget)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_planning_holds_a_block_of_threads_at_a_time_not_every_rank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts per thread become arrays a block at a time: a timeline of 1,024 ranks' many
    device streams is planned in as much memory as one of 64, to the plan one block gives."""
    import mindspeed_prof.analysis.timeline.budget as budget

    small, big = _stats(2_000), _stats(16_000)
    assert _plan_peak(big, 20_000_000) < 1.3 * _plan_peak(small, 20_000_000) + 200_000
    blocks = plan(big, 10_000, 20_000_000)
    monkeypatch.setattr(budget, "_ROWS", 10**9)
    assert blocks == plan(big, 10_000, 20_000_000) and 0 < blocks.below_us < CAP_US


def test_tied_operators_in_a_step_and_in_none_are_counted_and_planned() -> None:
    """Operators as long as each other, of one name, some before any step (None) and some in
    one: the longest are kept and planned (the heap compared their cells, None against a
    number, and raised TypeError)."""
    stats = Stats()
    for k in range(3 * ALWAYS):
        stats.add(1, None if k % 2 else 4, (1, 1), "aten::mm", "cpu_op", 5.0)
    assert len(stats.longest[1]) == ALWAYS
    assert {cell for *_, cell in stats.longest[1]} == {(1, None), (1, 4)}
    assert plan(stats, 0, 10_000).below_us == 0.0  # all fit: nothing merged
