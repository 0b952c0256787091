"""Another tool's events into ranges: B/E matched per pid and tid, unmatched ends named, ids of
any type and size, steps and stages, ranks from process names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.generic.events import Event
from mindspeed_prof.analysis.readers.generic.fold import Fold
from mindspeed_prof.analysis.readers.sniff import CHROME, TRACE, TRACE_LIST, kind_of

BIG = 2**64 + 5  # past what any fixed-width integer holds


def _write(path: Path, events: list[dict[str, object]], wrap: bool = True) -> Path:
    path.write_text(json.dumps({"traceEvents": events} if wrap else events))
    return path


def test_begin_end_pairs_match_per_thread_and_unmatched_ends_are_named(tmp_path: Path) -> None:
    events = [
        {"ph": "B", "name": "outer", "pid": "rank3", "tid": "t1", "ts": 0},
        {"ph": "B", "name": "other thread", "pid": "rank3", "tid": "t2", "ts": 1},
        {"ph": "B", "name": "inner", "pid": "rank3", "tid": "t1", "ts": 2},
        {"ph": "E", "pid": "rank3", "tid": "t1", "ts": 5},  # ends inner
        {"ph": "E", "pid": "rank3", "tid": "t2", "ts": 7},  # ends other thread
        {"ph": "E", "pid": "rank3", "tid": "t1", "ts": 10},  # ends outer
        {"ph": "E", "name": "stray", "pid": "rank3", "tid": "t1", "ts": 11},
        {"ph": "B", "name": "cut short", "pid": "rank3", "tid": "t1", "ts": 12},
    ]
    data = read(_write(tmp_path / "phases.json", events))
    assert data.kind == "chrome" and data.rank == 3
    got = sorted((r.name, r.ts, r.dur, r.tid) for r in data.ranges)
    assert got == [("inner", 2, 3, "t1"), ("other thread", 1, 6, "t2"), ("outer", 0, 10, "t1")]
    assert data.problems == [
        f"{data.path}: 1 end events ('E') match no begin ('B') on their thread, ignored "
        "(first: 'stray')",
        f"{data.path}: 1 begin events ('B') never end, ignored (first: 'cut short')",
    ]


@pytest.mark.parametrize("pid", ["rank3", "Rank 3", "[rank3] python", "actor_rank_3", 3])
def test_a_process_name_gives_the_rank(tmp_path: Path, pid: object) -> None:
    name = pid if isinstance(pid, str) else "worker [rank3]"
    events = [
        {"ph": "M", "name": "process_name", "pid": pid, "args": {"name": name}},
        {"ph": "X", "name": "a", "pid": pid, "tid": 1, "ts": 1, "dur": 2},
    ]
    assert read(_write(tmp_path / "t.json", events)).rank == 3


def test_the_capture_fields_then_the_folder_then_the_file(tmp_path: Path) -> None:
    one = [{"ph": "X", "name": "a", "pid": 0, "tid": 0, "ts": 1, "dur": 2}]
    folder = tmp_path / "rank_5" / "x"
    folder.mkdir(parents=True)
    assert read(_write(folder / "trace_rank2.json", one), tmp_path).rank == 5
    assert read(_write(tmp_path / "trace_rank2.json", one), tmp_path).rank == 2
    own = tmp_path / "own" / "rank_5"
    own.mkdir(parents=True)
    path = own / "t.json"
    path.write_text(json.dumps({"distributedInfo": {"rank": 7}, "traceEvents": one}))
    assert read(path, tmp_path).rank == 7
    # the analysed folder's own name is the user's: not a rank
    assert read(_write(folder / "t.json", one), folder).rank is None


def test_several_ranks_in_one_file(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "name": "train", "pid": f"rank{r}", "tid": 0, "ts": r, "dur": 5}
        for r in range(3)
    ]
    data = read(_write(tmp_path / "t.json", events))
    assert data.rank is None
    assert sorted(-1 if r.rank is None else r.rank for r in data.ranges) == [0, 1, 2]


@pytest.mark.parametrize("tid", [2**63 + 17, 2**64 - 1, BIG, -(2**63) - 1, "lane 7", 3.0])
def test_ids_of_any_type_and_size(tmp_path: Path, tid: object) -> None:
    events: list[dict[str, object]] = [
        {"ph": "X", "name": "k", "pid": BIG, "tid": tid, "ts": 1, "dur": 2, "cat": "x"},
        {"ph": "B", "name": "b", "pid": BIG, "tid": tid, "ts": 4},
        {"ph": "E", "pid": BIG, "tid": tid, "ts": 6},
    ]
    for wrap in (True, False):
        path = _write(tmp_path / f"t{wrap}.json", events, wrap)
        assert kind_of(path) == CHROME
        data = read(path)
        assert not data.problems
        assert sorted((r.name, r.tid) for r in data.ranges) == [("b", str(tid)), ("k", str(tid))]


def test_steps_hold_stages_of_their_process(tmp_path: Path) -> None:
    events: list[dict[str, object]] = []
    for pid in ("rank0", "rank1"):
        for step in (1, 2):
            t = step * 100
            events += [
                {"ph": "B", "name": "step", "pid": pid, "tid": "main", "ts": t},
                {
                    "ph": "X",
                    "name": "update weights from distributed",
                    "pid": pid,
                    "tid": "main",
                    "ts": t + 10,
                    "dur": 30,
                },
                {"ph": "X", "name": "rollout", "pid": pid, "tid": "main", "ts": t + 45, "dur": 40},
                {"ph": "E", "pid": pid, "tid": "main", "ts": t + 90},
            ]
    events.append(
        {"ph": "X", "name": "checkpoint", "pid": "rank0", "tid": "main", "ts": 500, "dur": 5}
    )
    data = read(_write(tmp_path / "t.json", events))
    got = sorted((r.rank, r.kind, r.name, r.step) for r in data.ranges)
    assert got == sorted(
        [(rank, "step", f"step {s}", s) for rank in (0, 1) for s in (1, 2)]
        + [
            (rank, "stage", name, s)
            for rank in (0, 1)
            for s in (1, 2)
            for name in ("weight_sync", "actor_generate")
        ]
        + [(0, "range", "checkpoint", None)]
    )


def test_counters_and_instants_are_counted_not_timed(tmp_path: Path) -> None:
    events = [{"ph": "C", "name": "mem", "pid": 1, "ts": t, "args": {"gib": t}} for t in range(4)]
    events += [
        {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 2, "s": "t"},
        {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 3},
    ]
    data = read(_write(tmp_path / "t.json", events))
    assert [r.name for r in data.ranges] == ["a"]
    assert f"{data.path}: 4 counter samples not read" in data.notes


def test_whose_trace_it_is(tmp_path: Path) -> None:
    torch = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 1}
    ]
    theirs = [{"ph": "B", "name": "phase", "pid": 1, "tid": 1, "ts": 0}]
    meta_only = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}}]
    assert kind_of(_write(tmp_path / "a.json", torch)) == TRACE
    assert kind_of(_write(tmp_path / "b.json", torch, wrap=False)) == TRACE_LIST
    assert kind_of(_write(tmp_path / "c.json", meta_only + theirs)) == CHROME
    assert kind_of(_write(tmp_path / "d.json", meta_only)) == TRACE  # nothing says: as before
    assert kind_of(_write(tmp_path / "e.json", theirs + torch)) == TRACE  # torch's among them


_EVENT = st.fixed_dictionaries(
    {
        "ph": st.sampled_from(["B", "E", "X", "i", "C"]),
        "tid": st.sampled_from([0, 1, "t"]),
        "ts": st.floats(0, 1e6, allow_nan=False),
        "dur": st.floats(0, 1e3, allow_nan=False),
    }
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_EVENT, max_size=60))
def test_every_duration_event_is_a_range_or_named(raw: list[dict[str, object]]) -> None:
    """Ranges + unmatched ends + never-ended begins account for every B, E and X event."""
    fold = Fold()
    fold.add(
        [
            Event(
                ph=str(e["ph"]),
                name="n",
                pid=1,
                tid=e["tid"],  # type: ignore[arg-type]
                ts=e["ts"],  # type: ignore[arg-type]
                dur=e["dur"],  # type: ignore[arg-type]
            )
            for e in raw
        ]
    )
    begins = sum(e["ph"] == "B" for e in raw)
    ends = sum(e["ph"] == "E" for e in raw)
    xs = sum(e["ph"] == "X" for e in raw)
    negative = fold.negative.count
    assert fold.pairs + fold.unclosed().count + negative == begins  # an E before its B
    assert fold.pairs + fold.unmatched.count + negative == ends
    assert len(fold.spans) == xs + fold.pairs
