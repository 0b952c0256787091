"""The span recorder's file is complete JSON after every flush."""

from __future__ import annotations

import json
from pathlib import Path

from mindspeed_prof.capture.spans import SpanRecorder


def test_valid_after_each_flush_and_counts(tmp_path: Path) -> None:
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", {"rank": 2})
    data = json.loads(rec.path.read_text())
    assert data["traceEvents"] == [] and data["distributedInfo"] == {"rank": 2}
    for step in (1, 2):
        rec.step = step
        with rec.range(f"r{step}", "stage"):
            pass
        rec.mark("m")
        rec.flush()
        events = json.loads(rec.path.read_text())["traceEvents"]
        assert len(events) == 2 * step
    assert events[0]["name"] == "r1" and events[0]["cat"] == "stage"
    assert events[0]["args"] == {"step": 1} and events[1]["ph"] == "i"
    assert rec.count == 4
    rec.close()
    rec.close()


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    rec = SpanRecorder(tmp_path / "s.json", {})
    for name in ('"]}', "\x00\n", "</script>"):
        with rec.range(name):
            pass
    rec.close()
    names = [e["name"] for e in json.loads(rec.path.read_text())["traceEvents"]]
    assert names == ['"]}', "\x00\n", "</script>"]


def test_hts_regex_finds_rank(tmp_path: Path) -> None:
    import re

    rec = SpanRecorder(tmp_path / "s.json", {"rank": 7})
    rec.close()
    assert re.search(r'"rank":\s+(\d+)', rec.path.read_text()).group(1) == "7"
