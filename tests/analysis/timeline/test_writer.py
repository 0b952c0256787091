"""A timeline's JSON writer: chunked writes that stay one JSON array."""

from __future__ import annotations

import io
import json

import pytest

from mindspeed_prof.analysis.timeline import writer
from mindspeed_prof.analysis.timeline.event import TraceEvent


def test_writer_writes_a_chunk_at_every_chunk_size_and_stays_one_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(writer, "_CHUNK", 3)
    f = io.BytesIO()
    w = writer.JsonWriter(f)
    events: list[TraceEvent] = [{"ph": "X", "pid": n} for n in range(7)]
    for n, event in enumerate(events, start=1):
        w.add(event)
        assert w.count == n - n % 3 and bool(f.getvalue()) == (n >= 3)
    w.flush()
    w.flush()  # nothing pending: nothing written
    assert w.count == 7 and json.loads(b"[" + f.getvalue() + b"]") == events
