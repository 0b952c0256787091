"""Hostile traces: memory bounded whatever the input, bad events named one by one, the rest kept."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mindspeed_prof.analysis.readers import BadFile, TraceData, read, stream
from mindspeed_prof.analysis.readers.events import Event
from mindspeed_prof.analysis.readers.fold import Collector
from mindspeed_prof.analysis.readers.fold.batch import MAX_DUR_US
from mindspeed_prof.analysis.readers.host_ops import MAX_DEPTH


def _op(name: str, ts: float, dur: float) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def test_ops_that_all_start_together_keep_the_stack_bounded() -> None:
    """Memory that grew with the file: every op starting at one time nested in the one
    before (a stack as deep as the file)."""
    fold = Collector()
    n = 3 * MAX_DEPTH
    fold.add([Event(ph="X", cat="cpu_op", name="a", ts=1.0, dur=0.5, pid=1, tid=1)] * n)
    assert max(len(t.stack) for t in fold.host.threads.values()) <= MAX_DEPTH + 1
    data = TraceData(Path("same.json"), "torch", 0, "", 0)
    fold.finish(data, None)
    assert data.ops["a"].count == n
    assert any(f"nested over {MAX_DEPTH} deep" in note for note in data.notes)


def test_a_compressed_bomb_of_valid_events_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "_FLOOR", 1 << 20)
    path = tmp_path / "bomb.json.gz"
    with gzip.open(path, "wt", compresslevel=9) as f:
        f.write('{"traceEvents": [' + ",".join([json.dumps(_op("a", 1.0, 0.5))] * 100_000) + "]}")
    assert path.stat().st_size * 100 < 8e6  # inflates to 8.5 MB: a ratio of over 100
    with pytest.raises(BadFile, match="decompression bomb"):
        read(path)


def test_nan_and_endless_events_are_named_and_the_rest_is_read(tmp_path: Path) -> None:
    good = [json.dumps(_op("a", i, 1)) for i in range(0, 30, 3)]
    bad = [
        '{"ph": "X", "cat": "cpu_op", "name": "n", "ts": NaN, "dur": 1}',
        json.dumps(_op("huge", 1, 1e300)),
    ]
    for where in ("middle", "end"):
        events = good[:5] + bad + good[5:] if where == "middle" else good + bad
        path = tmp_path / f"{where}.json"
        path.write_text('{"traceEvents": [' + ", ".join(events) + '], "after": 1}')
        data = read(path)
        assert data.ops["a"].count == 10 and "huge" not in data.ops
        assert any("1 events not valid JSON" in p and "NaN" in p for p in data.problems)
        assert any(
            f"longer than {MAX_DUR_US / 3.6e9:.0f} hours" in p and "'huge'" in p
            for p in data.problems
        )
