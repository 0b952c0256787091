"""Chrome traces read a slice at a time: the same events as decoding whole, hostile files
refused."""

from __future__ import annotations

import dataclasses
import gc
import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis import readers
from mindspeed_prof.analysis.readers import BadFile, read
from mindspeed_prof.analysis.readers import stream as stream_mod
from mindspeed_prof.analysis.readers.events import Event, decode_events
from mindspeed_prof.analysis.readers.events import TraceTop as _Trace
from mindspeed_prof.analysis.readers.fold import collect
from mindspeed_prof.analysis.readers.kineto.chrome import read_json
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.stream import INFLATE_ENV, TraceStream
from mindspeed_prof.analysis.readers.window import Window
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.testing.kineto import cuda_trace, span, write_trace

# strings that look like event boundaries, brackets, escapes and the key itself
_TRICKY = st.sampled_from(
    [
        "}, {",
        '},{"ph": "X"}',
        "[",
        "]",
        "{",
        '"',
        "\\",
        "traceEvents",
        '"traceEvents": [',
        "aten::mm",
        "é✓",
        "\n",
        "",
    ]
)
_TEXT = st.lists(_TRICKY, max_size=4).map("".join)
_NESTED = st.recursive(
    st.integers(0, 9) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _events(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for i in range(draw(st.integers(0, 25))):
        ev: dict[str, Any] = {
            "ph": draw(st.sampled_from(["X", "i", "M"])),
            "name": draw(_TEXT),
            "cat": draw(st.sampled_from(["cpu_op", "kernel", "user_annotation"])),
            "ts": float(i * 10),
            "dur": draw(st.integers(0, 30)),
            "pid": 1,
            "tid": draw(st.integers(1, 2)),
        }
        if draw(st.booleans()):  # args with what Event does not read: nested objects in lists
            ev["args"] = {
                "correlation": i,
                "frames": draw(st.lists(_NESTED, max_size=3)),
                "note": draw(_TEXT),
            }
        out.append(ev)
    return out


def _dump(draw: st.DrawFn, value: Any) -> str:
    return json.dumps(
        value,
        ensure_ascii=draw(st.booleans()),
        separators=draw(st.sampled_from([(",", ":"), (", ", ": "), (",\n  ", ": ")])),
    )


@st.composite
def _documents(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    events = draw(_events())
    if draw(st.booleans()):
        return _dump(draw, events), events
    before = draw(
        st.dictionaries(
            st.sampled_from(["schemaVersion", "deviceProperties", "note"]), _NESTED, max_size=3
        )
    )
    after = (
        {
            "baseTimeNanoseconds": 1700000000000000000,
            "traceName": draw(_TEXT),
            "distributedInfo": {"rank": 3},
        }
        if draw(st.booleans())
        else {}
    )
    text = _dump(draw, {**before, "traceEvents": events, **after})
    return (draw(st.sampled_from(["", " \n"])) + text), events


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_documents(), chunk=st.integers(8, 300))
def test_any_chunk_size_gives_the_events_of_the_whole_file(
    tmp_path_factory: pytest.TempPathFactory, doc: tuple[str, list[dict[str, Any]]], chunk: int
) -> None:
    text, events = doc
    path = tmp_path_factory.mktemp("s") / "t.json"
    path.write_text(text)
    whole = decode_events(text.encode())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(stream_mod, "CHUNK", chunk)
        s = TraceStream(path, Event, _Trace)
        got = [e for batch in s.batches() for e in batch]
    assert got == whole and len(got) == len(events)
    if '"traceEvents"' in text[:1] or text.lstrip().startswith("{"):
        ref = json.loads(text)
        assert s.top is not None
        assert s.top.baseTimeNanoseconds == ref.get("baseTimeNanoseconds")
        assert s.top.distributedInfo == ref.get("distributedInfo")


def _torch_like(tmp_path: Path, name: str = "rank0.pt.trace.json") -> Path:
    trace = cuda_trace(rank=0, seed=2, steps=3)
    host = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"]
    for k, e in enumerate(host[:40]):  # allocations inside some host ops
        trace["traceEvents"].append(
            {
                "ph": "i",
                "name": "[memory]",
                "pid": e["pid"],
                "tid": e["tid"],
                "ts": e["ts"] + 1,
                "args": {
                    "Bytes": 1024 * (k + 1),
                    "Total Allocated": 4096.0 * k,
                    "Total Reserved": 8192.0 * k,
                    "Device Type": 1,
                },
            }
        )
    trace["baseTimeNanoseconds"] = 1_700_000_000_000_000_000
    path = tmp_path / name
    path.write_text(json.dumps(trace))
    return path


def _whole(path: Path) -> TraceData:
    raw = path.read_bytes()
    top = json.loads(raw)
    meta = CaptureHeader(base_time_ns=top["baseTimeNanoseconds"])
    if "world_size" in top.get("distributedInfo", {}):  # what the job recorded, as read whole
        meta.world_size = top["distributedInfo"]["world_size"]
    names = {d["name"] for d in top.get("deviceProperties", [])}
    if len(names) == 1:
        meta.device_name = names.pop()
    data = TraceData(path, "torch", 0, "", len(raw), events=len(top["traceEvents"]), meta=meta)
    collect(data, decode_events(raw), None)
    return data


@pytest.mark.parametrize("chunk", [4096, 50_000, 1 << 22])
def test_streamed_trace_data_equals_whole_decoding(tmp_path: Path, monkeypatch, chunk: int) -> None:
    path = _torch_like(tmp_path)
    monkeypatch.setattr(stream_mod, "CHUNK", chunk)
    got = read_json(path, "", path.stat().st_size)
    want = _whole(path)
    assert dataclasses.asdict(got) == dataclasses.asdict(want)
    assert got.device and got.memory is not None and got.memory.top_ops
    assert got.ops["aten::mm"].count > 0
    assert got.meta.base_time_ns == 1_700_000_000_000_000_000


def test_keys_after_the_array_and_a_decoy_key_before_it(tmp_path: Path) -> None:
    events = [span("ProfilerStep#1", 0, 100), span("actor_update", 10, 50)]
    path = tmp_path / "trace.json"
    path.write_text(
        json.dumps(
            {
                "note": "traceEvents",
                "nested": {"traceEvents": [span("x", 1, 1)]},
                "traceEvents": events,
                "distributedInfo": {"rank": 5},
                "mindspeed_prof": {"kind": "spans", "step": 1},
            }
        )
    )
    data = read(path)
    assert data.rank == 5 and data.kind == "spans" and data.events == 2
    assert [(r.kind, r.name) for r in data.ranges] == [
        ("step", "ProfilerStep#1"),
        ("stage", "actor_update"),
    ]


def test_bare_list_and_gzip_read_like_the_object(tmp_path: Path) -> None:
    path = _torch_like(tmp_path)
    events = json.loads(path.read_text())["traceEvents"]
    bare = tmp_path / "rank0_bare.json"  # the rank from its name: a list has no distributedInfo
    bare.write_text(json.dumps(events))
    packed = tmp_path / "rank0.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    ref = read(path)
    for other in (read(bare), read(packed)):
        assert (other.ranges, other.ops, other.device, other.memory) == (
            ref.ranges,
            ref.ops,
            ref.device,
            ref.memory,
        )


def test_no_size_limit_for_json(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(readers, "MAX_BYTES", 100)
    path = write_trace(tmp_path / "t.json", [span("ProfilerStep#1", 0, 10)] * 20)
    assert read(path).events == 20


def test_decompression_bomb_stops_at_the_ratio(tmp_path: Path, monkeypatch) -> None:
    body = b'{"traceEvents": [' + b",".join([b'{"ph": "i", "name": "x"}'] * 400_000) + b"]}"
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(body, 9))
    monkeypatch.setattr(stream_mod, "_FLOOR", 1 << 20)
    monkeypatch.setenv(INFLATE_ENV, "20")
    t0 = time.perf_counter()
    with pytest.raises(
        BadFile,
        match=r"bomb\.json\.gz: inflates to more than .*decompression "
        rf"bomb \({INFLATE_ENV}",
    ):
        read(path)
    assert time.perf_counter() - t0 < 5
    monkeypatch.setenv(INFLATE_ENV, "0")  # no limit
    assert read(path).events == 400_000
    monkeypatch.setenv(INFLATE_ENV, "lots")
    with pytest.raises(BadFile, match=f"{INFLATE_ENV}='lots': expected a number"):
        read(path)


def test_truncated_file_is_named(tmp_path: Path, monkeypatch) -> None:
    path = _torch_like(tmp_path)
    raw = path.read_bytes()
    monkeypatch.setattr(stream_mod, "CHUNK", 10_000)
    for cut in (len(raw) // 3, len(raw) - 3):
        path.write_bytes(raw[:cut])
        with pytest.raises(BadFile, match=rf"^{path}: "):
            read(path)
    path.write_bytes(raw[: len(raw) - 3])
    with pytest.raises(BadFile, match="cut short or malformed near its end"):
        read(path)
    assert gc.isenabled()  # paused while reading, back on after a failure too


def test_hostile_starts_refused_after_one_chunk(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(stream_mod, "MAX_PIECE", 1 << 20)
    cases = {
        "text.json": b"hello " * 1000,
        "garbage.json": b"[" + b"x" * 5_000_000,
        "nokey.json": b'{"other": "' + b"y" * 5_000_000 + b'"}',
        "huge_event.json": b'{"traceEvents": [{"name": "' + b"z" * 5_000_000 + b'"}]}',
    }
    for name, raw in cases.items():
        path = tmp_path / name
        path.write_bytes(raw)
        t0 = time.perf_counter()
        with pytest.raises(BadFile, match=rf"^{path}: "):
            read(path)
        assert time.perf_counter() - t0 < 5, name


def test_object_without_events_over_several_chunks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(stream_mod, "CHUNK", 64)
    path = tmp_path / "rank2.pt.trace.json"
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "deviceProperties": ["x" * 50] * 10,
                "distributedInfo": {"rank": 2},
            }
        )
    )
    data = read(path)
    assert data.events == 0 and data.rank == 2 and data.ranges == []


@pytest.mark.parametrize("sep", [",", " ,\n", "\n,  ", "\t, "])
@pytest.mark.parametrize("chunk", [7, 40, 333])
def test_slices_decoded_in_place_leave_the_next_ones_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sep: str, chunk: int
) -> None:
    """Each slice is decoded from the buffer with the byte after its last event set to ``]``
    for the while: whitespace before or after the comma, events longer than a chunk (the
    buffer grows) and the rest of the file all read as a whole decode has them."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "n" * (k % 5) * 60, "ts": k, "dur": 1}
        for k in range(60)
    ]
    text = '{"traceEvents": [' + sep.join(json.dumps(e) for e in events) + '], "closed": true}'
    path = tmp_path / "t.json"
    path.write_text(text)
    monkeypatch.setattr(stream_mod, "CHUNK", chunk)
    s = TraceStream(path, Event, _Trace)
    got = [e for batch in s.batches() for e in batch]
    assert got == decode_events(text.encode()) and len(got) == 60
    assert s.top is not None and s.top.closed is True


class _Seen(Window):
    """The window, each one made kept (to read how large its buffer grew)."""

    made: list[_Seen] = []

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        _Seen.made.append(self)


def _event_text(k: int) -> str:
    return json.dumps({"ph": "X", "cat": "cpu_op", "name": f"op{k}", "ts": k, "dur": 1})


def test_a_small_file_is_held_in_a_buffer_of_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file smaller than a chunk is held in a buffer of its size, not with a chunk of room
    (a small capture's buffer was mostly zeros, written for nothing); a larger one grows it by
    what is left to read."""
    monkeypatch.setattr(stream_mod, "CHUNK", 4096)
    monkeypatch.setattr(stream_mod, "Window", _Seen)
    for events in (40, 230):  # 2.8 and 16 KB
        text = '{"traceEvents": [' + ", ".join(_event_text(k) for k in range(events)) + "]}"
        path = tmp_path / f"t{events}.json"
        path.write_text(text)
        _Seen.made = []
        got = [e for batch in TraceStream(path, Event, _Trace).batches() for e in batch]
        assert got == decode_events(text.encode())
        assert [len(w.buf) <= len(text) + 2 for w in _Seen.made] == [True]


def test_a_file_that_grows_while_read_is_read_whole_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file still being written as it is read: what was appended after its size was taken
    (here: the rest, and its end) is read too, in chunks (not a byte at a time past the size
    it had)."""
    monkeypatch.setattr(stream_mod, "CHUNK", 4096)
    fills: list[None] = []
    fill = Window.fill
    monkeypatch.setattr(Window, "fill", lambda w: fills.append(fill(w)))
    path = tmp_path / "live.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(_event_text(k) for k in range(150)))
    got: list[Event] = []
    for batch in TraceStream(path, Event, _Trace).batches():
        if not got:
            with path.open("a") as f:  # appended before the rest is read
                f.write(",\n" + ",\n".join(_event_text(k) for k in range(150, 600)) + "]}")
        got.extend(batch)
    assert [e.name for e in got] == [f"op{k}" for k in range(600)]
    assert len(fills) < 2 * path.stat().st_size / 4096 + 4
