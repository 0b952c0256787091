"""``timeline``: captures of several hosts, ranks and clocks merged into one Chrome trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.timeline import write_timeline
from mindspeed_prof.analysis.timeline.window import parse_steps
from mindspeed_prof.cli import main
from mindspeed_prof.formats.header import CaptureHeader, read_header
from mindspeed_prof.formats.sqlite_trace import write_db

WALL0_US = 1_790_000_000_000_000.0  # the wall-clock time of step 1 on every host
STEP_US = 100_000.0


def range_file(
    root: Path,
    rank: int,
    role: str,
    host: str,
    *,
    shift_us: float = 0.0,
    clock: bool = True,
    steps: tuple[int, ...] = (1, 2, 3),
    slow: float = 1.0,
) -> Path:
    """A range file as the span recorder writes it, its clock ``shift_us`` off the wall clock.

    Steps start at the same wall-clock time on every host; ``slow`` stretches actor_update.
    """
    events = []
    for step in steps:
        start = WALL0_US + (step - 1) * STEP_US + shift_us
        events.append(
            {
                "ph": "X",
                "cat": "step",
                "name": f"ProfilerStep#{step}",
                "ts": start,
                "dur": 90_000.0,
                "pid": 1,
                "tid": 1,
                "args": {"step": step},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "stage",
                "name": "actor_generate",
                "ts": start + 1000,
                "dur": 40_000.0,
                "pid": 1,
                "tid": 1,
                "args": {"step": step},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "stage",
                "name": "actor_update",
                "ts": start + 42_000,
                "dur": 40_000.0 * slow,
                "pid": 1,
                "tid": 1,
                "args": {"step": step},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "loss",
                "ts": start + 43_000,
                "dur": 500.0,
                "pid": 1,
                "tid": 1,
                "args": {"step": step},
            }
        )
    meta: dict[str, Any] = {
        "kind": "spans",
        "rank": rank,
        "role": role,
        "host": host,
        "step": steps[0],
    }
    if clock:
        wall_ns = int(WALL0_US * 1000) - 5_000_000
        meta["clock"] = {"wall_ns": wall_ns, "trace_ns": wall_ns + int(shift_us * 1000)}
    path = root / host / role / f"rank{rank}_{host}_{100 + rank}_step{steps[0]}.mstx.trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mindspeed_prof": meta, "traceEvents": events}))
    return path


def load(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def tracks(trace: dict[str, Any]) -> dict[str, int]:
    """Process name -> pid, in sort-index order."""
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events if e["name"] == "process_sort_index"}
    return {names[pid]: pid for pid in sorted(names, key=order.__getitem__)}


def slices(trace: dict[str, Any], pid: int, tid: int | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in trace["traceEvents"]
        if e["ph"] == "X" and e["pid"] == pid and (tid is None or e["tid"] == tid)
    ]


def step_starts(trace: dict[str, Any], pid: int) -> dict[int, float]:
    return {e["args"]["step"]: e["ts"] for e in slices(trace, pid, tid=1)}


def merged(root: Path, out: Path, **kwargs: Any) -> tuple[dict[str, Any], Any]:
    result = write_timeline(analyse(root).traces, out, **kwargs)
    return load(out), result


def test_hosts_with_shifted_clocks_land_on_one_wall_clock_axis(tmp_path: Path) -> None:
    range_file(tmp_path, 0, "actor", "host-a")
    range_file(tmp_path, 1, "actor", "host-b", shift_us=-3_600e6, slow=1.2)  # an hour behind
    range_file(tmp_path, 0, "rollout", "host-b", shift_us=42e6)
    trace, result = merged(tmp_path, tmp_path / "t.json")
    by_name = tracks(trace)
    assert list(by_name) == [
        "rank 0 · actor · host-a",
        "rank 1 · actor · host-b",
        "rank 0 · rollout · host-b",
    ]
    starts = [step_starts(trace, pid) for pid in by_name.values()]
    for step in (1, 2, 3):
        assert [s[step] for s in starts] == pytest.approx([starts[0][step]] * 3, abs=0.01)
    assert starts[0][1] == pytest.approx(0.0)  # shown relative to the earliest event
    assert trace["otherData"]["origin_wall_us"] == pytest.approx(WALL0_US)
    assert starts[0][2] - starts[0][1] == pytest.approx(STEP_US)
    update = [
        e
        for e in slices(trace, by_name["rank 1 · actor · host-b"], tid=2)
        if e["name"] == "actor_update"
    ]
    assert [e["dur"] for e in update] == pytest.approx([48_000.0] * 3)
    assert {e["name"] for e in slices(trace, 1, tid=3)} == {"loss"}
    assert result.warnings == [] and result.aligned_on_steps == []


def test_a_capture_without_clock_record_is_aligned_on_step_starts_and_marked(
    tmp_path: Path,
) -> None:
    range_file(tmp_path, 0, "actor", "host-a")
    lost = range_file(
        tmp_path, 1, "actor", "host-b", shift_us=-WALL0_US + 7e6, clock=False, steps=(2, 3, 4)
    )
    trace, result = merged(tmp_path, tmp_path / "t.json")
    by_name = tracks(trace)
    marked = "rank 1 · actor · host-b (clock: aligned on step starts)"
    assert list(by_name) == ["rank 0 · actor · host-a", marked]
    a, b = (
        step_starts(trace, by_name["rank 0 · actor · host-a"]),
        step_starts(trace, by_name[marked]),
    )
    assert b[2] == pytest.approx(a[2], abs=0.01) and b[3] == pytest.approx(a[3], abs=0.01)
    assert trace["otherData"]["aligned_on_step_starts"] == [str(lost)]
    assert any(str(lost) in w and "aligned on step starts" in w for w in result.warnings)


def test_a_rank_claimed_by_two_hosts_keeps_both_and_warns(tmp_path: Path) -> None:
    range_file(tmp_path, 3, "actor", "host-a")
    range_file(tmp_path, 3, "actor", "host-b")
    trace, result = merged(tmp_path, tmp_path / "t.json")
    assert list(tracks(trace)) == ["rank 3 · actor · host-a", "rank 3 · actor · host-b"]
    assert result.warnings == [
        "rank 3 (actor) claimed by 2 hosts (host-a, host-b); kept one track each"
    ]


def test_a_ray_drivers_own_capture_is_its_own_track_after_the_workers(tmp_path: Path) -> None:
    """A driver that records its step loop (role ``driver``) is a track of its own, below every
    worker role, and not a second claim on the worker's rank."""
    range_file(tmp_path, 0, "driver", "head")
    range_file(tmp_path, 1, "rollout", "host-a")
    range_file(tmp_path, 0, "actor", "host-a")
    trace, result = merged(tmp_path, tmp_path / "t.json")
    assert list(tracks(trace)) == [
        "rank 0 · actor · host-a",
        "rank 1 · rollout · host-a",
        "rank 0 · driver · head",
    ]
    driver = tracks(trace)["rank 0 · driver · head"]
    assert sorted(step_starts(trace, driver)) == [1, 2, 3] and result.warnings == []


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks at level0: a range file and a torch trace (Kineto's clock) per capture, both
    on the real clock."""
    return make_run(tmp_path_factory.mktemp("tl"), steps=3, profile_level="level0", real=True)


def test_torch_ops_fall_inside_the_stages_the_range_recorder_timed(
    torch_run: Path, tmp_path: Path
) -> None:
    trace, result = merged(torch_run, tmp_path / "t.json.gz", detail=frozenset({0}))
    by_name = tracks(trace)
    assert len(by_name) == 2 and not result.aligned_on_steps
    pid0, pid1 = by_name.values()
    stages = slices(trace, pid0, tid=2)
    ops = [e for e in slices(trace, pid0) if e["tid"] >= 10]
    assert len(stages) == 18 and ops
    matmuls = [e for e in ops if e["name"] == "aten::matmul"]
    assert len(matmuls) == 18  # one per stage execution: each inside exactly one stage
    for op in matmuls:
        assert (
            sum(
                s["ts"] <= op["ts"] and op["ts"] + op["dur"] <= s["ts"] + s["dur"] + 1
                for s in stages
            )
            == 1
        )
    assert not [e for e in slices(trace, pid1) if e["tid"] >= 10]  # no detail for rank 1
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"steps", "stages", "ranges"} <= names


def test_steps_window_keeps_only_those_steps(torch_run: Path, tmp_path: Path) -> None:
    trace, _ = merged(torch_run, tmp_path / "t.json", detail=None, steps=parse_steps("2:3"))
    for pid in tracks(trace).values():
        events = slices(trace, pid)
        assert {e["args"]["step"] for e in events if "args" in e} == {2}
        step = slices(trace, pid, tid=1)[0]
        ops = [e for e in events if e["tid"] >= 10]
        assert ops and all(step["ts"] <= e["ts"] <= step["ts"] + step["dur"] for e in ops)


def test_cli_timeline(torch_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cluster.json"
    assert main(["timeline", str(torch_run), "-o", str(out)]) == 0
    assert "2 tracks" in capsys.readouterr().out
    assert len(tracks(load(out))) == 2
    assert main(["timeline", str(torch_run), "-o", str(out), "--steps", "3:1"]) == 2
    assert "--steps '3:1'" in capsys.readouterr().err
    assert main(["timeline", str(tmp_path / "nothing"), "-o", str(out)]) == 1


WALL_US = 1_000_000.0  # the wall clock at trace-clock 0 of every hand-built capture below
CLOCK = {"clock": {"wall_ns": 1_000_000_000, "trace_ns": 0}}
BASE = CaptureHeader(base_time_ns=1_000_000_000)  # Kineto's baseTimeNanoseconds


def spans(
    path: Path, ranges: list[Range], rank: int | None = 0, group: str = "actor", **meta: Any
) -> TraceData:
    """A range file's reading, built by hand: its clock puts trace-clock 0 at ``WALL_US``."""
    return TraceData(
        path, "spans", rank, group, 0, ranges=ranges, meta=read_header({**CLOCK, **meta}, path)[0]
    )


def step(n: int, ts: float, dur: float = 100.0) -> Range:
    return Range(0, "step", f"ProfilerStep#{n}", n, ts, dur)


def op_trace(path: Path, events: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def x(
    name: str, ts: Any, dur: Any = 1.0, cat: str = "cpu_op", pid: int = 1, tid: int = 2
) -> dict[str, Any]:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def detail_events(trace: dict[str, Any], pid: int = 1) -> tuple[list[Any], list[Any]]:
    """The detail threads' metadata and slices of track ``pid`` (thread ids from 10 on)."""
    ours = [e for e in trace["traceEvents"] if e["pid"] == pid and e.get("tid", 0) >= 10]
    return [e for e in ours if e["ph"] == "M"], [e for e in ours if e["ph"] == "X"]


def test_detail_threads_names_and_slices(tmp_path: Path) -> None:
    """One detail thread per original (pid, tid) from tid 10 on, named host or device by its
    category (none: torch_npu's device events); step and annotation events, events that are
    not complete and events without numeric times are left out; times rounded to 1 ns. With
    no steps window, operators outside every step are kept too."""
    stem = tmp_path / "rank0_host-a_100_step1"
    ranges = spans(
        Path(f"{stem}.mstx.trace.json"),
        [
            step(1, 0.0, 1000.0),
            Range(0, "range", "fine", 1, 3.14159, 2.71828),
            Range(0, "device", "compute", 1, 4.0, 1.0),
        ],
        role="actor",
        host="host-a",
    )
    ops = op_trace(
        Path(f"{stem}.pt.trace.json"),
        [
            x("aten::mm", 10.12345, 2.34567),
            x("broken", "soon"),
            x("no duration", 11.0, None),
            x("aten::add", 20.0),
            x("gemm", 11.0, 5.0, cat="kernel", pid=0, tid=7),
            x("npu op", 12.0, 1.0, cat="", pid=0, tid=8),
            x("loss", 13.0, cat="user_annotation"),
            x("ProfilerStep#1", 0.0, 1000.0),
            {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 14.0, "pid": 1, "tid": 2},
            x("after the steps", 2000.0),
        ],
    )
    torch_data = TraceData(ops, "torch", 0, "actor", 0, meta=BASE)
    out = tmp_path / "t.json"
    write_timeline([ranges, torch_data], out, detail=None)
    trace = load(out)
    assert [
        (e["tid"], e["name"], e["ts"], e["dur"]) for e in slices(trace, 1) if e["tid"] < 10
    ] == [(1, "ProfilerStep#1", 0.0, 1000.0), (3, "fine", 3.142, 2.718), (3, "compute", 4.0, 1.0)]
    meta, events = detail_events(trace)

    def thread(tid: int, name: str) -> list[dict[str, Any]]:
        return [
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}},
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": 1,
                "tid": tid,
                "args": {"sort_index": tid},
            },
        ]

    assert meta == thread(10, "host 1/2") + thread(11, "device 0/7") + thread(12, "device 0/8")
    assert events == [
        {
            "ph": "X",
            "pid": 1,
            "tid": 10,
            "cat": "cpu_op",
            "name": "aten::mm",
            "ts": 10.123,
            "dur": 2.346,
        },
        {
            "ph": "X",
            "pid": 1,
            "tid": 10,
            "cat": "cpu_op",
            "name": "aten::add",
            "ts": 20.0,
            "dur": 1.0,
        },
        {
            "ph": "X",
            "pid": 1,
            "tid": 10,
            "cat": "cpu_op",
            "name": "after the steps",
            "ts": 2000.0,
            "dur": 1.0,
        },  # each thread's in start order, as they are kept nested
        {"ph": "X", "pid": 1, "tid": 11, "cat": "kernel", "name": "gemm", "ts": 11.0, "dur": 5.0},
        {"ph": "X", "pid": 1, "tid": 12, "cat": "", "name": "npu op", "ts": 12.0, "dur": 1.0},
    ]


def test_detail_of_a_db_capture_is_its_complete_events(tmp_path: Path) -> None:
    stem = tmp_path / "rank0_host-a_100_step1"
    ranges = spans(Path(f"{stem}.mstx.trace.json"), [step(1, 0.0, 1000.0)])
    db = write_db(
        {
            "traceEvents": [
                x("aten::mm", 10.5, 2.0),
                {"ph": "i", "cat": "cpu_op", "name": "instant", "ts": 11.0, "pid": 1, "tid": 2},
            ]
        },
        Path(f"{stem}.pt.trace.db"),
    )
    out = tmp_path / "t.json"
    write_timeline(
        [ranges, TraceData(db, "db", 0, "actor", 0, meta=BASE)], out, detail=frozenset({0})
    )
    _, events = detail_events(load(out))
    assert events == [
        {
            "ph": "X",
            "pid": 1,
            "tid": 10,
            "cat": "cpu_op",
            "name": "aten::mm",
            "ts": 10.5,
            "dur": 2.0,
        }
    ]


def test_detail_of_a_torch_npu_capture_comes_from_its_trace_view(tmp_path: Path) -> None:
    """A torch_npu folder is its own range source and detail (on the wall clock already, ts
    as strings); a folder without ``trace_view.json`` adds no detail and no error."""
    folder = tmp_path / "rank0_host_100_20261130100000000_ascend_pt"
    op_trace(
        folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json",
        [x("aten::mm", "1000010.000", "2.000")],
    )
    npu = TraceData(folder, "npu", 0, "actor", 0, ranges=[step(1, WALL_US, 1000.0)])
    empty = tmp_path / "rank1_host_101_20261130100000000_ascend_pt"
    empty.mkdir()
    bare = TraceData(empty, "npu", 1, "actor", 0, ranges=[step(1, WALL_US, 1000.0)])
    out = tmp_path / "t.json"
    result = write_timeline([npu, bare], out, detail=None)
    trace = load(out)
    assert result.tracks == ["rank 0 · actor", "rank 1 · actor"] and not result.warnings
    assert detail_events(trace)[1] == [
        {
            "ph": "X",
            "pid": 1,
            "tid": 10,
            "cat": "cpu_op",
            "name": "aten::mm",
            "ts": 10.0,
            "dur": 2.0,
        }
    ]
    assert detail_events(trace, pid=2) == ([], [])


def test_steps_window_spans_the_captures_steps_on_the_wall_clock(tmp_path: Path) -> None:
    """With ``--steps 2:3`` a capture keeps what falls from the start of its step 2 to its end,
    both ends included, on the wall clock (the trace clock is 1 s behind it): ranges of no step
    and operators alike; stages do not narrow it."""
    stem = tmp_path / "rank0_host-a_100_step1"
    ranges = spans(
        Path(f"{stem}.mstx.trace.json"),
        [
            step(1, 0.0),
            step(2, 100.0),
            step(3, 200.0),
            Range(0, "stage", "gen", 2, 110.0, 50.0),
            Range(0, "range", "before", None, 50.0, 5.0),
            Range(0, "range", "at_start", None, 100.0, 5.0),
            Range(0, "range", "inside", None, 105.0, 5.0),
            Range(0, "range", "at_end", None, 200.0, 5.0),
            Range(0, "range", "after", None, 250.0, 5.0),
        ],
    )
    ops = op_trace(
        Path(f"{stem}.pt.trace.json"),
        [
            x("early", 50.0),
            x("at_start", 100.0),
            x("before_stage", 102.0),
            x("at_end", 200.0),
            x("late", 250.0),
        ],
    )
    out = tmp_path / "t.json"
    write_timeline(
        [ranges, TraceData(ops, "torch", 0, "actor", 0, meta=BASE)],
        out,
        detail=None,
        steps=parse_steps("2:3"),
    )
    trace = load(out)
    assert trace["otherData"]["origin_wall_us"] == WALL_US + 100.0
    assert [(e["tid"], e["name"], e["ts"]) for e in slices(trace, 1) if e["tid"] < 10] == [
        (1, "ProfilerStep#2", 0.0),
        (2, "gen", 10.0),
        (3, "at_start", 0.0),
        (3, "inside", 5.0),
        (3, "at_end", 100.0),
    ]
    assert [(e["name"], e["ts"]) for e in detail_events(trace)[1]] == [
        ("at_start", 0.0),
        ("before_stage", 2.0),
        ("at_end", 100.0),
    ]


def test_a_capture_without_steps_in_the_window_is_an_empty_track(tmp_path: Path) -> None:
    """Its track is its header alone: the process's name and place, and the three threads'."""
    ranges = spans(tmp_path / "rank0_host-a_100_step1.mstx.trace.json", [step(1, 0.0)])
    out = tmp_path / "t.json"
    result = write_timeline([ranges], out, steps=parse_steps("5:6"))
    assert result.path == out and result.tracks == ["rank 0 · actor · host-a"]
    assert result.events == 8
    trace = load(out)
    label = "rank 0 · actor · host-a"
    assert trace["traceEvents"] == [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": label}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": 1}},
    ] + [
        e
        for tid, name in ((1, "steps"), (2, "stages"), (3, "ranges"))
        for e in (
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": tid, "args": {"name": name}},
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": 1,
                "tid": tid,
                "args": {"sort_index": tid},
            },
        )
    ]
    assert trace["otherData"] == {
        "origin_wall_us": 0.0,
        "tracks": [label],
        "aligned_on_step_starts": [],
        "warnings": [],
    }


def test_same_named_captures_in_two_folders_are_two_captures(tmp_path: Path) -> None:
    """rank 0 of host-a as actor and as rollout: one file name, two folders, two tracks."""
    actor = range_file(tmp_path, 0, "actor", "host-a")
    rollout = range_file(tmp_path, 0, "rollout", "host-a")
    assert actor.name == rollout.name
    trace, result = merged(tmp_path, tmp_path / "t.json")
    assert list(tracks(trace)) == ["rank 0 · actor · host-a", "rank 0 · rollout · host-a"]
    assert result.warnings == []


def test_track_role_and_host_come_from_metadata_then_folder_and_file_name(tmp_path: Path) -> None:
    """The role: the capture's own, else its folder's (roles not in an RL loop sort after
    those that are). The host: the capture's own, else the one in a ``rank<N>_<host>_<pid>_``
    file name, else none (and the label has no host part)."""
    traces = [
        spans(tmp_path / "rank2_host-s_102_step1.mstx.trace.json", [], 2, "zeta"),
        spans(
            tmp_path / "rank0_host-s_100_step1.mstx.trace.json",
            [],
            0,
            "actor_update",
            role="critic",
            host="host-m",
        ),
        spans(tmp_path / "rank1_host-s_101_step1.mstx.trace.json", [], 1, "reward", host=7),
        spans(tmp_path / "capture.mstx.trace.json", [], 3, "zeta", role="zeta"),
    ]
    result = write_timeline(traces, tmp_path / "t.json")
    assert result.tracks == [
        "rank 0 · critic · host-m",
        "rank 1 · reward · host-s",
        "rank 2 · zeta · host-s",
        "rank 3 · zeta",
    ]


def test_ranks_claimed_twice_warn_in_rank_order_naming_an_unknown_host(tmp_path: Path) -> None:
    def claim(folder: str, rank: int, **meta: Any) -> TraceData:
        return spans(tmp_path / folder / "capture.mstx.trace.json", [step(1, 0.0)], rank, **meta)

    traces = [
        claim("a", 3),
        claim("b", 3, host="host-a"),
        claim("c", 1, host="host-c"),
        claim("d", 1, host="host-d"),
    ]
    out = tmp_path / "t.json"
    result = write_timeline(traces, out)
    warnings = [
        "rank 1 (actor) claimed by 2 hosts (host-c, host-d); kept one track each",
        "rank 3 (actor) claimed by 2 hosts (?, host-a); kept one track each",
    ]
    assert result.tracks == [
        "rank 1 · actor · host-c",
        "rank 1 · actor · host-d",
        "rank 3 · actor",
        "rank 3 · actor · host-a",
    ]
    assert result.warnings == warnings and load(out)["otherData"]["warnings"] == warnings


def unclocked(path: Path, ranges: list[Range], rank: int, kind: str = "spans") -> TraceData:
    return TraceData(path, kind, rank, "actor", 0, ranges=ranges)


def test_captures_without_clock_records_chain_onto_each_others_step_starts(tmp_path: Path) -> None:
    """Rank 0 has a clock record (its step 2 starts twice: the earlier start counts); rank 1
    shares step 2 with it, rank 2 only step 3 with rank 1, rank 3 no step with anyone (its
    first range goes to the earliest step start) and rank 4 has no ranges at all (its trace
    clock starts there too). The unclocked capture listed first does not stop the rest."""

    def path(rank: int, suffix: str = ".mstx.trace.json") -> Path:
        return tmp_path / f"rank{rank}_host_{100 + rank}_step1{suffix}"

    traces = [
        unclocked(path(1), [step(2, 5000.0), step(3, 5100.0)], 1),
        spans(path(0), [step(1, 0.0), step(2, 100.0, 50.0), step(2, 150.0, 50.0)]),
        unclocked(path(2), [step(3, 70_000.0), step(4, 70_100.0)], 2),
        unclocked(path(3), [step(7, 50.0), step(8, 150.0)], 3),
        unclocked(op_trace(path(4, ".pt.trace.json"), [x("aten::mm", 7.0)]), [], 4, "torch"),
    ]
    out = tmp_path / "t.json"
    result = write_timeline(traces, out, detail=None)
    trace = load(out)
    assert trace["otherData"]["origin_wall_us"] == WALL_US
    aligned = " (clock: aligned on step starts)"
    assert result.tracks == ["rank 0 · actor · host"] + [
        f"rank {r} · actor · host{aligned}" for r in (1, 2, 3, 4)
    ]
    starts = [
        [(e["args"]["step"], e["ts"]) for e in slices(trace, pid, tid=1)] for pid in (1, 2, 3, 4)
    ]
    assert starts == [
        [(1, 0.0), (2, 100.0), (2, 150.0)],
        [(2, 100.0), (3, 200.0)],
        [(3, 200.0), (4, 300.0)],
        [(7, 0.0), (8, 100.0)],
    ]
    assert [e["ts"] for e in detail_events(trace, pid=5)[1]] == [7.0]


def test_without_any_clock_record_the_first_capture_keeps_its_own_clock(tmp_path: Path) -> None:
    """The first capture with steps keeps its trace clock as the axis (origin: its first
    step); one with no step at all, and nothing aligned before it, starts at 0."""

    def path(rank: int) -> Path:
        return tmp_path / f"rank{rank}_host_{100 + rank}_step1.mstx.trace.json"

    setup = unclocked(path(1), [Range(1, "range", "setup", None, 40.0, 5.0)], 1)
    out = tmp_path / "t.json"
    write_timeline([unclocked(path(0), [step(1, 500.0), step(2, 600.0)], 0), setup], out)
    trace = load(out)
    assert trace["otherData"]["origin_wall_us"] == 500.0
    assert [e["ts"] for e in slices(trace, 2)] == [0.0]  # put at the first step's start
    write_timeline([setup], out)
    trace = load(out)
    assert trace["otherData"]["origin_wall_us"] == 0.0
    assert [e["ts"] for e in slices(trace, 1)] == [0.0]
