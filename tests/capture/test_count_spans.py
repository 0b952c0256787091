"""Counts in the range file: complete JSON after every write, on a full disk too, holding the
counts that fit (``spans.SpanRecorder`` with ``RangeBuffer.add_count``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import FullDisk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof.capture.buffer import RangeBuffer
from mindspeed_prof.capture.spans import SpanRecorder
from mindspeed_prof.formats.header import CaptureHeader


def counts(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "C"]


def test_the_range_file_is_complete_json_after_every_flush(tmp_path: Path) -> None:
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", CaptureHeader(rank=0))
    for step in (1, 2, 3):
        rec.step = step
        rec.buffer.add_count("reward", [0.25] * step, step, "actor_generate")
        with rec.range("r"):
            rec.buffer.add_count('we"ird\nname', 1, None, None)
        rec.flush()
        events = json.loads(rec.path.read_text())["traceEvents"]
        assert len(events) == 3 * step
    rec.close()
    got = json.loads(rec.path.read_text())
    assert got["closed"] is True
    assert [e["args"] for e in counts(got)][:2] == [
        {"values": [0.25], "step": 1, "stage": "actor_generate"},
        {"value": 1},
    ]
    assert counts(got)[1]["name"] == 'we"ird\nname'


values = st.one_of(
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=5),
)
steps_of_counts = st.lists(
    st.lists(st.tuples(st.text(max_size=8), values), max_size=4), min_size=1, max_size=5
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps_of_counts, room=st.integers(0, 2_000))
def test_a_full_disk_leaves_complete_json_holding_the_counts_that_fit(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[list[tuple[str, Any]]],
    room: int,
) -> None:
    """Counts and ranges, flushed step by step to a disk with ``room`` bytes: the file is
    complete JSON holding the first events of the file a roomy disk gets."""
    from mindspeed_prof.capture import buffer, spans

    folder = tmp_path_factory.mktemp("disk")
    real_open = open

    def write(path: Path, size: int | None) -> None:
        def on_disk(file: Path, mode: str, buffering: int = -1) -> Any:
            raw = real_open(file, mode, buffering=buffering)
            return raw if size is None else FullDisk(raw, size)

        buf = RangeBuffer()
        buf.wall0_ns = buf.perf0_ns = 0
        with monkeypatch.context() as mp:
            mp.setattr(spans, "open", on_disk, raising=False)
            mp.setattr(spans, "perf_counter_ns", lambda: 1_000)
            mp.setattr(buffer, "perf_counter_ns", lambda: 1_000)
            try:
                rec = SpanRecorder(path, CaptureHeader(rank=0), buffer=buf)
            except OSError:
                return
            for step, counted in enumerate(steps, 1):
                rec.step = step
                for name, value in counted:
                    buf.add_count(name, value, step, "actor_generate")
                    buf.events.append((buf.key(name), 7, 0, 500))
                try:
                    rec.flush()
                except OSError:
                    pass
            try:
                rec.close()
            except OSError:
                pass

    full, cut = folder / "full.json", folder / "cut.json"
    write(full, None)
    write(cut, room)
    whole = json.loads(full.read_text())["traceEvents"]
    if not cut.exists():
        assert room < 200  # not even the header fitted
        return
    kept = json.loads(cut.read_bytes())["traceEvents"]
    assert kept == whole[: len(kept)]
    for e in kept:
        if e["ph"] == "C":
            value = e["args"].get("value", e["args"].get("values"))
            assert value is not None and e["args"]["stage"] == "actor_generate"
