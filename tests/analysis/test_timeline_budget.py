"""``timeline --max-mb``: a trace over budget merges short operators, then keeps the operators
of the slowest rank-steps only; steps, stages and each rank's longest operators always stay."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.timeline import BudgetError, write_timeline
from mindspeed_prof.analysis.timeline_budget import ALWAYS, Plan
from mindspeed_prof.analysis.timeline_detail import StepOf, Tally, write_detail
from mindspeed_prof.cli import main
from mindspeed_prof.testing.kineto import write_cuda_trace

RANKS, SLOW = 6, 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six ranks of level1 CUDA traces, three steps each; rank 3 does half as much work again
    (its steps are the longest)."""
    root = tmp_path_factory.mktemp("budget")
    for rank in range(RANKS):
        write_cuda_trace(root / "integrated" / f"rank{rank}_host_{100 + rank}.pt.trace.json",
                         rank=rank, steps=3, kernels_per_stage=90 if rank == SLOW else 60)
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
    return {(e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in _slices(trace)
            if e["tid"] < 10}


def _longest(trace: dict[str, Any]) -> set[tuple[Any, ...]]:
    """The ``ALWAYS`` longest operators of every rank's track."""
    ops: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in _slices(trace):
        if e["tid"] >= 10 and e.get("cat") != "merged":
            ops[e["pid"]].append(e)
    return {(e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for events in ops.values()
            for e in sorted(events, key=lambda e: -e["dur"])[:ALWAYS]}


def _ops(trace: dict[str, Any]) -> set[tuple[Any, ...]]:
    return {(e["pid"], e["tid"], e["name"], e["ts"], e["dur"]) for e in _slices(trace)
            if e["tid"] >= 10}


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
        run: Path, full: tuple[dict[str, Any], Any], tmp_path: Path) -> None:
    whole, whole_result = full
    budget = whole_result.json_bytes * 2 // 5
    out = tmp_path / "t.json"
    result = write_timeline(analyse(run, jobs=1, cache=False).traces, out, detail=None,
                            max_bytes=budget)
    assert result.json_bytes == out.stat().st_size <= budget
    trace = json.loads(out.read_text())
    assert _frame(trace) == _frame(whole)
    assert _longest(whole) <= _ops(trace)
    merged = [e for e in _slices(trace) if e.get("cat") == "merged"]
    assert merged and all(e["name"] == f"merged: {e['args']['ops']} ops" and e["args"]["ops"] > 1
                          for e in merged)
    kept = len(_ops(trace)) - len(merged)
    assert kept + sum(e["args"]["ops"] for e in merged) == len(_ops(whole))
    below = trace["otherData"]["budget"]["merged_below_us"]
    assert 0 < below <= 1000

    def short(t: dict[str, Any]) -> int:  # written as themselves: lone ones, the longest
        return sum(e["dur"] < below for e in _slices(t) if e["tid"] >= 10
                   and e.get("cat") != "merged")

    assert short(trace) < short(whole) / 10
    assert trace["otherData"]["budget"]["merged_operators"] == result.budget[
        "merged_operators"] == sum(e["args"]["ops"] for e in merged)
    assert _nested(trace)


def test_when_merging_is_not_enough_the_slowest_rank_steps_keep_their_operators(
        run: Path, full: tuple[dict[str, Any], Any], tmp_path: Path) -> None:
    whole, _ = full
    traces = analyse(run, jobs=1, cache=False).traces
    frame_only = write_timeline(traces, tmp_path / "frame.json").json_bytes
    budget = frame_only + 40_000
    out = tmp_path / "t.json"
    result = write_timeline(traces, out, detail=None, max_bytes=budget)
    assert result.json_bytes <= budget
    trace = json.loads(out.read_text())
    facts = trace["otherData"]["budget"]
    assert facts["left_out_operators"] > 0 and facts["merged_below_us"] == pytest.approx(1000,
                                                                                         rel=0.1)
    kept_cells = facts["operators_of"]
    assert 0 < len(kept_cells) < RANKS * 3
    assert all(rank == str(SLOW) for rank, _ in kept_cells[:1])  # the slow rank's steps first
    assert _frame(trace) == _frame(whole) and _longest(whole) <= _ops(trace)
    assert _nested(trace)


def test_a_budget_below_steps_and_stages_is_refused_and_nothing_written(
        run: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    with pytest.raises(BudgetError, match="alone take"):
        write_timeline(analyse(run, jobs=1, cache=False).traces, out, detail=None,
                       max_bytes=10_000)
    assert not out.exists() and not list(tmp_path.iterdir())


def test_a_run_of_short_operators_never_crosses_a_kept_slice() -> None:
    """Short operators inside a long one and after it are two merged slices, not one that
    would straddle its end; a lone short operator is written as itself."""
    thread = (1, 1)
    events = [(thread, "cpu_op", "short", ts, 1.0) for ts in (1.0, 3.0, 5.0, 12.0, 14.0)]
    events += [(thread, "cpu_op", "long", 0.0, 10.0), (thread, "cpu_op", "alone", 30.0, 1.0),
               (thread, "cpu_op", "long2", 20.0, 8.0)]
    written: list[dict[str, Any]] = []
    write_detail(written.append, 1, events, 0.0, {}, Plan(below_us=5.0), StepOf([]), Tally())
    got = [(e["name"], e["ts"], e["dur"]) for e in written if e["ph"] == "X"]
    assert got == [("long", 0.0, 10.0), ("merged: 3 ops", 1.0, 5.0), ("merged: 2 ops", 12.0, 3.0),
                   ("long2", 20.0, 8.0), ("alone", 30.0, 1.0)]


def test_cli_max_mb(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json.gz"
    assert main(["timeline", str(run), "-o", str(out), "--detail", "all",
                 "--max-mb", "0.5"]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "--max-mb" in x]
    assert "operators shorter than" in line and "merged into" in line
    with pytest.raises(SystemExit):
        main(["timeline", str(run), "-o", str(out), "--max-mb", "-1"])
    assert "--max-mb" in capsys.readouterr().err
    assert main(["timeline", str(run), "-o", str(out), "--detail", "all",
                 "--max-mb", "0.01"]) == 1
    assert "raise --max-mb" in capsys.readouterr().err
