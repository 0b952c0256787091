"""A range file's text and the whole-file write: times, edges and the write aside."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.formats.header import CaptureHeader


def test_range_times_keep_their_leading_zeros() -> None:
    """Nanoseconds are written as microseconds: 1,005 ns is 1.005 us (``1005e-3``)."""
    from mindspeed_prof.capture.buffer import RangeBuffer
    from mindspeed_prof.capture.trace_file import trace_body

    buf = RangeBuffer()
    buf.wall0_ns = buf.perf0_ns  # trace time = the recorded time
    key, mark = buf.key("r"), buf.key("m", "mark")
    lines = trace_body(
        [(3, [(key, 9, 2_000_050, 2_001_055), (key, 8, 7_000, 7_999), (mark, 9, 4_000_007, -1)])],
        buf,
        pid=1,
    )
    events = [json.loads(line) for line in lines]
    assert [(e.get("ts"), e.get("dur")) for e in events] == [
        (2000.05, 1.005),
        (7.0, 0.999),
        (4000.007, None),
    ]
    assert [(e["ph"], e["pid"], e["tid"], e["name"]) for e in events] == [
        ("X", 1, 9, "r"),
        ("X", 1, 8, "r"),
        ("i", 1, 9, "m"),
    ]
    assert '"ts": 2000050e-3, "dur": 1005e-3' in lines[0] and '"ts": 4000007e-3' in lines[2]
    assert [e["args"] for e in events] == [{"step": 3}] * 3


def test_trace_body_edges_a_zero_end_is_a_range_and_long_ranges_keep_their_ms() -> None:
    """Only -1 marks an instant: a range ending at 0 ns is a range of 0 us; a 2 ms range is
    2000 us."""
    from mindspeed_prof.capture.buffer import RangeBuffer
    from mindspeed_prof.capture.trace_file import trace_body

    buf = RangeBuffer()
    buf.wall0_ns = buf.perf0_ns
    key = buf.key("r")
    assert buf.keys[key] == ("r", "user_annotation")
    lines = trace_body([(None, [(key, 1, 0, 0), (key, 1, 1_000_000, 3_000_000)])], buf, pid=1)
    assert [(e["ph"], e["ts"], e["dur"]) for e in map(json.loads, lines)] == [
        ("X", 0.0, 0.0),
        ("X", 1000.0, 2000.0),
    ]
    assert '"dur": 2000000e-3' in lines[1]


def test_write_trace_makes_its_folders_writes_aside_and_has_the_header(
    tmp_path: Path, monkeypatch
) -> None:
    """The file is a Chrome trace in ms with our header; it is written as ``<name>.tmp`` first
    (what ``doctor`` knows as a leftover when the process died before the rename), and a write
    or rename that fails leaves nothing."""
    from types import SimpleNamespace

    from mindspeed_prof.capture import trace_file
    from mindspeed_prof.capture.buffer import RangeBuffer
    from mindspeed_prof.capture.trace_file import write_trace

    buf = RangeBuffer()
    path = write_trace(tmp_path / "a" / "b" / "t.json", [], buf, CaptureHeader(rank=3))
    again = write_trace(
        tmp_path / "a" / "b" / "u.json", [], buf, CaptureHeader()
    )  # the folder exists
    data = json.loads(path.read_text())
    assert (data["schemaVersion"], data["displayTimeUnit"], data["traceEvents"]) == (1, "ms", [])
    meta = data["mindspeed_prof"]
    assert (meta["kind"], meta["format"], meta["rank"]) == ("spans", 2, 3) and again.exists()

    renamed: list[tuple[str, str]] = []

    def no_rename(src: str, dst: str) -> None:
        renamed.append((Path(src).name, Path(dst).name))
        assert Path(src).read_bytes().endswith(b'"closed": true}\n')  # whole before the rename
        raise OSError("failed at the rename")

    monkeypatch.setattr(trace_file, "os", SimpleNamespace(getpid=os.getpid, replace=no_rename))
    with pytest.raises(OSError, match="at the rename"):
        write_trace(tmp_path / "v.json", [], buf, CaptureHeader())
    assert renamed == [("v.json.tmp", "v.json")]
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([0, 1]),
            st.sampled_from([7, 2**40]),
            st.integers(-(10**19), 10**19),
            st.integers(-(10**7), 10**19),
        ),
        max_size=20,
    ),
    st.sampled_from([None, 0, 5]),
    st.booleans(),
)
def test_a_repeated_range_is_written_as_its_first_line(events, step, wall) -> None:
    """A (key, thread) seen once in a call is written from its kept line start: each event
    gives the same line as when it is the first of its (key, thread) (the ``_RANGE`` path),
    for any time (negative, below 1 us, past 2**63 ns) and with the times of ``%de-3``."""
    from mindspeed_prof.capture.buffer import RangeBuffer
    from mindspeed_prof.capture.trace_file import _RANGE, trace_body

    buf = RangeBuffer()
    if wall:
        buf.wall0_ns = buf.perf0_ns
    keys = [buf.key("r%s"), buf.key('"q"', "stage")]
    evs = [(keys[k], tid, t0, t0 + d if d >= 0 else d) for k, tid, t0, d in events]
    lines = trace_body([(step, evs)], buf, pid=3)
    alone = [trace_body([(step, [e])], buf, pid=3)[0] for e in evs]
    assert lines == alone
    offset = buf.wall0_ns - buf.perf0_ns
    for (key, tid, t0, t1), line in zip(evs, lines):
        if t1 >= 0:
            ts, dur = t0 + offset, t1 - t0
            name, cat = buf.keys[key]
            tail = "}" if step is None else f', "args": {{"step": {step}}}}}'
            assert line == _RANGE % (
                "X",
                3,
                tid,
                f', "cat": {json.dumps(cat)}, "name": {json.dumps(name)}',
                ts,
                dur,
                tail,
            )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, 0, 5, 6]),
            st.lists(
                st.tuples(
                    st.integers(0, 4),
                    st.sampled_from([7, 8, 2**40]),
                    st.integers(-(10**19), 10**19),
                    st.one_of(st.integers(-(10**7), 10**19), st.just(None), st.sampled_from([-1])),
                ),
                max_size=12,
            ),
        ),
        max_size=5,
    ),
    st.integers(0, 5),
    st.booleans(),
)
def test_kept_line_starts_give_each_event_its_line_alone(chunks, split, wall) -> None:
    """Over chunks of plain, step, iteration, mark and count events, written in two calls
    that share their caches (as the range file's writer does), every line is the one the event
    gets alone in a call of its own with no cache (the long way: ``_RANGE``, ``_MARK``, a
    count); a step range's line has its chunk's step in its name, as ``_RANGE`` writes it."""
    from mindspeed_prof.capture.buffer import STEP_RANGE, RangeBuffer
    from mindspeed_prof.capture.trace_file import _RANGE, trace_body

    buf = RangeBuffer()
    if wall:
        buf.wall0_ns = buf.perf0_ns
    keys = [
        buf.key("r"),
        buf.key(STEP_RANGE, "step"),
        buf.key("iteration#3", "iteration"),
        buf.key("m", "mark"),
        buf.key("c", "count"),
    ]
    made = []
    for step, events in chunks:
        evs = []
        for k, tid, t0, d in events:
            if k == 4 or d is None:  # a count: its own step and stage
                evs.append((keys[4], tid, t0, (1.5, step, "s")))
            else:
                evs.append((keys[k], tid, t0, t0 + d if d >= 0 else d))
        made.append((step, evs))
    labels: dict[int, tuple[str, ...]] = {}
    heads: dict[tuple[int, int], str] = {}
    lines = trace_body(made[:split], buf, 3, labels, heads)
    lines += trace_body(made[split:], buf, 3, labels, heads)
    alone = [trace_body([(step, [e])], buf, pid=3)[0] for step, evs in made for e in evs]
    assert lines == alone
    offset = buf.wall0_ns - buf.perf0_ns
    for step, evs in made:
        for key, tid, t0, t1 in evs:
            if key == keys[1] and type(t1) is int and t1 >= 0:
                ts, dur = t0 + offset, t1 - t0
                tail = "}" if step is None else f', "args": {{"step": {step}}}}}'
                label = f', "cat": "step", "name": "{STEP_RANGE}#{step}"'
                line = _RANGE % (
                    "X",
                    3,
                    tid,
                    label,
                    ts,
                    dur,
                    tail,
                )
                assert line in lines


def _old_times(text: str) -> str:
    """A range file's times as format 2 wrote them before ``e-3``: ``%d.%03d``."""

    def three_decimals(m: re.Match[str]) -> str:
        ns = int(m.group(2))
        return f"{m.group(1)}{ns // 1000}.{ns % 1000:03d}"

    return re.sub(r'("(?:ts|dur)": )(\d+)e-3', three_decimals, text)


def test_analyse_json_reads_the_e3_times_as_it_read_three_decimals(tmp_path: Path) -> None:
    """A capture's range file (steps, stages, nested and id-based ranges on two threads,
    marks, counts, decode iterations) and the same file with its times written ``%d.%03d``
    give the same ``analyse --json``, byte for byte: a JSON reader reads ``1234e-3`` as the
    number ``1.234``."""
    import threading

    from invariants_run import cli

    from mindspeed_prof import Profiler, mstx

    new, old = tmp_path / "new", tmp_path / "old"
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_step_start": 1,
                "profile_step_end": 6,
                "profile_save_path": str(new),
            }
        },
        rank=0,
    )

    def other() -> None:
        with mstx.range("loader"):
            mstx.mark("batch")

    for step in range(1, 7):
        with prof.step(step):
            with prof.stage("actor_generate"):
                for i in range(3):
                    with prof.iteration(i), mstx.range("decode"):
                        pass
                prof.count("tokens", [1.0, 2.5, 3.0 * step])
            with prof.stage("actor_train"):
                rid = mstx.range_start("update")
                with mstx.range("fwd"), mstx.range("fwd"):
                    mstx.mark("tick")
                thread = threading.Thread(target=other)
                thread.start()
                thread.join()
                mstx.range_end(rid)
    prof.close()
    files = sorted(new.rglob("*.mstx.trace.json"))
    assert files and all("e-3" in f.read_text() for f in files)
    for f in new.rglob("*"):
        if f.is_file():
            copy = old / f.relative_to(new)
            copy.parent.mkdir(parents=True, exist_ok=True)
            text = f.read_text() if f.name.endswith(".json") else None
            if text is not None and f.name.endswith(".mstx.trace.json"):
                text = _old_times(text)
                assert "e-3" not in text
            copy.write_bytes(f.read_bytes() if text is None else text.encode())
    got = cli("analyse", str(new), "--json", "--jobs", "1")
    want = cli("analyse", str(old), "--json", "--jobs", "1")
    assert got.code == want.code == 0, got.err
    sizes = re.compile(r'"bytes": \d+')  # the files' sizes: the only thing that differs
    assert sizes.sub("", got.out.replace(str(new), "ROOT")) == sizes.sub(
        "", want.out.replace(str(old), "ROOT")
    )
    assert len(sizes.findall(got.out)) == len(files)
