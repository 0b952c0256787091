"""Slices kept nested as Perfetto nests them (``nest``), and the check every timeline
the tests write passes through (``tests/timeline_nesting``): it catches 1 ns."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from timeline_nesting import nesting_errors

from mindspeed_prof.analysis.timeline.event import TraceEvent
from mindspeed_prof.analysis.timeline.nest import Nester
from mindspeed_prof.analysis.timeline.writer import JsonWriter
from mindspeed_prof.cli import main


def _x(ts: float, dur: float, name: str = "s", tid: int = 1) -> TraceEvent:
    return {"ph": "X", "pid": 1, "tid": tid, "name": name, "ts": ts, "dur": dur}


def test_the_check_catches_one_nanosecond() -> None:
    assert nesting_errors([_x(0, 10, "parent"), _x(5, 5.001, "child")]) == [
        "(1, 1): 'child' [5000, 10001] ns ends 1 ns past 'parent'"
    ]
    assert not nesting_errors([_x(0, 10), _x(5, 5), _x(10, 3), _x(0, 10, tid=2)])


def test_a_child_past_its_parent_is_cut_to_its_end() -> None:
    nest = Nester()
    parent, child, after = _x(100.0, 10.0), _x(104.5, 5.6), _x(110.0, 1.0)
    for e in (parent, child, after):
        nest.clamp(e)
    assert child["dur"] == 5.5 and after["dur"] == 1.0 and nest.clamped == 1
    assert not nesting_errors([parent, child, after])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**5)), max_size=40),
    st.floats(1.6e15, 1.8e15),
)
def test_nested_spans_on_the_epoch_stay_nested(spans: list[tuple[int, int]], epoch: float) -> None:
    """Spans nested exactly in ns, put on the epoch in doubles (a quarter microsecond apart
    there) with exact durations, as readers hold them: written, they nest."""
    family = []  # the spans that nest (or follow one another) exactly, in ns
    stack: list[tuple[int, int]] = []
    for start, dur in sorted(spans, key=lambda s: (s[0], -s[1])):
        while stack and stack[-1][1] <= start:
            stack.pop()
        if stack and start + dur > stack[-1][1]:
            continue
        stack.append((start, start + dur))
        family.append((start, start + dur))
    w = JsonWriter(None)
    events = []
    for start, end in family:
        ts = epoch + start / 1000  # on the double grid there: a quarter us apart
        event = _x(round(ts - epoch, 3), round((end - start) / 1000, 3))
        w.add(event)
        events.append(event)
    assert not nesting_errors(events)


def test_a_timeline_without_ranges_holds_ops_and_says_so(tmp_path: Path, capsys) -> None:
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::add",
                "pid": 1,
                "tid": 1,
                "ts": 1,
                "dur": 2,
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "gemm",
                "pid": 0,
                "tid": 7,
                "ts": 2,
                "dur": 3,
                "args": {"stream": 7, "correlation": 1},
            },
        ]
    }
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "t.pt.trace.json").write_text(json.dumps(trace))
    out = tmp_path / "t.json"
    assert main(["timeline", str(tmp_path / "cap"), "-o", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    written = json.loads(out.read_text())["traceEvents"]
    assert lines[1].startswith(f"1 tracks, {sum(e['ph'] == 'X' for e in written)} slices, ")
    assert (
        lines[2] == "no stages or ranges in these captures: every rank's operators and "
        "kernels shown"
    )
    assert sorted(e["name"] for e in written if e["ph"] == "X") == ["aten::add", "aten::mm", "gemm"]


def test_ranges_of_two_threads_get_a_row_each_and_keep_their_length(tmp_path: Path) -> None:
    """Overlapping ranges of two threads are two rows, never one cut to fit the other."""
    events = [
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
        {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 5, "dur": 10},
        {"ph": "X", "name": "c", "pid": 1, "tid": 2, "ts": 6, "dur": 2},
    ]
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "phases.json").write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "t.json"
    assert main(["timeline", str(tmp_path / "cap"), "-o", str(out)]) == 0
    written = json.loads(out.read_text())["traceEvents"]
    slices = {e["name"]: (e["tid"], e["dur"]) for e in written if e["ph"] == "X"}
    assert slices["a"][1] == 10 and slices["b"][1] == 10 and slices["c"][1] == 2
    assert slices["a"][0] != slices["b"][0] == slices["c"][0]
    rows = {e["tid"]: e["args"]["name"] for e in written if e.get("name") == "thread_name"}
    assert rows[slices["a"][0]] == "ranges" and rows[slices["b"][0]] == "ranges · 2"


def test_captures_of_one_rank_that_overlap_get_a_track_each(tmp_path: Path) -> None:
    """Two captures of rank 0 at the same time: two tracks (``capture 2``); a third after
    both shares the first's."""
    folder = tmp_path / "cap" / "rank_0"
    folder.mkdir(parents=True)
    epoch = 1.7e15
    for name, ts in (("a.json", 0.0), ("b.json", 5.0), ("c.json", 50.0)):
        events = [{"ph": "X", "name": "phase", "pid": 1, "tid": 1, "ts": epoch + ts, "dur": 10}]
        (folder / name).write_text(json.dumps({"traceEvents": events}))
    out = tmp_path / "t.json"
    assert main(["timeline", str(tmp_path / "cap"), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["otherData"]["tracks"] == ["rank 0 · rank_0", "rank 0 · rank_0 · capture 2"]
    assert doc["otherData"]["warnings"] == []
    pids = [e["pid"] for e in doc["traceEvents"] if e["ph"] == "X"]
    assert sorted(pids) == [1, 1, 2]
