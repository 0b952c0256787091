"""Operator self time against a hand-built trace: a parent's children are subtracted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.model import Tally
from mindspeed_prof.analysis.report.tables import tables


def op(name: str, ts: float, dur: float, tid: int = 1, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


#: aten::linear [0, 100) holds aten::mm [10, 70), which holds aten::copy_ [20, 30), and
#: aten::add [75, 95). On another thread, aten::mm [50, 90) overlaps the linear in time but is
#: not its child. Expected self times (us) by hand:
EVENTS = [
    op("aten::linear", 0, 100),
    op("aten::mm", 10, 60),
    op("aten::copy_", 20, 10),
    op("aten::add", 75, 20),
    op("aten::mm", 50, 40, tid=2),
    op("aten::linear", 200, 30),
]  # a second linear with no children
SELF = {
    "aten::linear": Tally(2, (100 - 60 - 20) + 30),
    "aten::mm": Tally(2, (60 - 10) + 40),
    "aten::copy_": Tally(1, 10),
    "aten::add": Tally(1, 20),
}


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "integrated" / "rank0_h_1_step1.pt.trace.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"traceEvents": EVENTS}))
    return path


def test_self_time_subtracts_direct_children_only(trace: Path) -> None:
    ops = read(trace).ops
    assert {k: (t.count, pytest.approx(t.total)) for k, t in ops.items()} == {
        k: (t.count, t.total) for k, t in SELF.items()
    }


def test_self_times_sum_to_busy_time_per_thread(trace: Path) -> None:
    # thread 1 is busy [0, 100) and [200, 230); thread 2 [50, 90)
    assert sum(t.total for t in read(trace).ops.values()) == pytest.approx(100 + 30 + 40)


def test_top_ops_ranks_by_self_time(trace: Path) -> None:
    rows = tables(analyse(trace.parent.parent)).top_ops[:15]
    assert [(r.op, r.count, r.self_ms) for r in rows] == [
        ("aten::mm", 2, pytest.approx(0.090)),
        ("aten::linear", 2, pytest.approx(0.050)),
        ("aten::add", 1, pytest.approx(0.020)),
        ("aten::copy_", 1, pytest.approx(0.010)),
    ]
