"""Custom ranges: per name and rank, self time where they nest, stragglers, warmup, bad ranges."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.ranges import p95, range_rows, self_times, stage_of
from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.testing.kineto import span, write_trace


def test_mstx_ranges_of_a_real_capture(run_dir: Path) -> None:
    rows = tables(analyse(run_dir)).range_table
    assert {(r.name, r.rank) for r in rows} == {("<b>custom</b>", 0), ("<b>custom</b>", 1)}
    for r in rows:  # one per stage and step, once although op trace and range file both hold it
        assert r.count == 3 * 6 and r.stage and r.max_ms >= r.p95_ms >= 0
        assert r.total_ms == pytest.approx(r.mean_ms * r.count)


def _nested(tmp_path: Path, rank: int = 0, scale: float = 1.0, **meta) -> Path:
    """Step 1..3, stage actor_update; ``outer`` holds ``inner`` twice; ``other`` on thread 2."""
    events = []
    for step in (1, 2, 3):
        t = step * 100_000
        events += [
            span(f"ProfilerStep#{step}", t, 90_000),
            span("actor_update", t + 1000, 80_000),
            span("outer", t + 2000, 10_000 * scale),
            span("inner", t + 3000, 4000 * scale),
            span("inner", t + 8000, 3000 * scale),
            span("other", t + 2500, 5000, tid=2),
        ]
    return write_trace(
        tmp_path / f"rank{rank}_h_1_step1.pt.trace.json",
        events,
        mindspeed_prof={"rank": rank, **meta},
    )


def test_self_time_where_ranges_nest_and_stage_found(tmp_path: Path) -> None:
    rows = {r.name: r for r in tables(analyse(_nested(tmp_path))).range_table}
    assert rows["outer"].total_ms == pytest.approx(30.0)
    assert rows["outer"].self_ms == pytest.approx(9.0)  # 10 - 4 - 3 per run
    assert rows["inner"].self_ms == rows["inner"].total_ms == pytest.approx(21.0)
    assert rows["other"].self_ms == pytest.approx(15.0)  # another thread: not nested
    assert {r.stage for r in rows.values()} == {"actor_update"}
    assert [r.name for r in tables(analyse(tmp_path)).range_table] == ["outer", "inner", "other"]


def test_p95_matches_numpy(tmp_path: Path) -> None:
    durs = [1000.0 * d for d in (3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9)]
    events = [span("r", 10_000 * i, d) for i, d in enumerate(durs)]
    (row,) = tables(analyse(write_trace(tmp_path / "rank0.pt.trace.json", events))).range_table
    ms = [d / 1000 for d in durs]
    assert row.p95_ms == pytest.approx(float(np.percentile(ms, 95)))
    assert (row.count, row.max_ms, row.mean_ms) == (15, 9.0, pytest.approx(np.mean(ms)))


def test_range_stragglers_skip_warmup_steps(tmp_path: Path) -> None:
    meta: dict[str, Any] = {"window": [2, 3], "warmup_steps": 1}
    _nested(tmp_path, rank=0, **meta)
    _nested(tmp_path, rank=1, **meta)
    _nested(tmp_path, rank=2, scale=2.0, **meta)  # rank 2's ranges take twice as long
    result = analyse(tmp_path)
    found = {(s.kind, s.name, s.step, s.rank) for s in tables(result).range_stragglers}
    assert found == {("range", name, step, 2) for name in ("outer", "inner") for step in (2, 3)}
    assert [r.warmup for r in tables(result).per_step if r.rank == 0] == [True, False, False]
    given = Settings(include_warmup=True)
    assert {s.step for s in tables(result, given).range_stragglers} == {1, 2, 3}


def test_json_key_ranges(tmp_path: Path, capsys) -> None:
    _nested(tmp_path)
    assert main(["analyse", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {
        "name",
        "rank",
        "count",
        "total_ms",
        "mean_ms",
        "p95_ms",
        "max_ms",
        "self_ms",
        "stage",
    } <= set(out["ranges"][0])


def test_bad_ranges_named_rest_analysed(tmp_path: Path, capsys) -> None:
    events = [
        span("ProfilerStep#1", 0, 100_000),
        span("actor_update", 10, 5000),
        span("backwards", 50_000, -20),
        {"ph": "X", "name": "no_dur", "ts": 5},
        span("ok", 100, 300),
    ]
    path = write_trace(tmp_path / "rank0.pt.trace.json", events)
    result = analyse(path)
    assert [r.name for r in tables(result).range_table] == ["ok"]
    assert len(tables(result).problems) == 2
    assert main(["analyse", str(path)]) == 3
    err = capsys.readouterr().err
    assert "negative dur" in err and "'backwards'" in err and "without ts or dur" in err


def test_report_escapes_range_names(run_dir: Path, tmp_path: Path) -> None:
    from mindspeed_prof.views.html import write_report

    html = (
        write_report(report(analyse(run_dir)), tmp_path / "r.html").read_text().replace("<wbr>", "")
    )
    assert "&lt;b&gt;custom&lt;/b&gt;" in html and "<b>custom</b>" not in html


def _r(name: str, ts: float, dur: float, kind: str = "range", rank: int = 0) -> Range:
    return Range(rank, kind, name, 1, ts, dur, tid="1")


def test_p95_is_numpys_linear_percentile_from_two_values_up() -> None:
    rng = np.random.default_rng(7)
    for n in (2, 3, 7, 40):
        values = list(rng.uniform(0, 100, n))
        assert p95(values) == pytest.approx(float(np.percentile(values, 95)))
    assert p95([4.0]) == 4.0


def test_self_times_by_hand_in_any_list_order() -> None:
    """Children come off their parent's time: nested, starting together (the longer is the
    parent), running past the parent's end (only the overlap), covering it whole (zero)."""
    cases = [
        ([_r("c", 2, 3), _r("p", 0, 10)], [3.0, 7.0]),
        ([_r("c", 0, 4), _r("p", 0, 10)], [4.0, 6.0]),
        ([_r("p", 0, 10), _r("c", 8, 5)], [8.0, 5.0]),
        ([_r("p", 0, 10), _r("c", 0, 10)], [0.0, 10.0]),
    ]
    for ranges, want in cases:
        assert self_times(ranges) == want


def test_self_times_at_epoch_microseconds_are_exact() -> None:
    """At 2**51 us a double holds 0.5 us steps: a child starting 0.25 us before its parent's
    end is nested in it (the parent's end summed there rounds to the child's start)."""
    epoch = float(2**51)
    assert self_times([_r("p", epoch, 10.25), _r("c", epoch + 10.0, 1.0)]) == [10.0, 1.0]


def test_stage_of_is_the_run_holding_the_start_edges_included() -> None:
    stages = [_r("a_stage", 20, 10, "stage"), _r("b_stage", 0, 10, "stage")]  # names unsorted
    ranges = [_r("x", 5, 1), _r("y", 10, 1), _r("z", 25, 1), _r("w", 15, 1), _r("v", 5, 1, rank=3)]
    assert stage_of(ranges, stages) == ["b_stage", "b_stage", "a_stage", None, None]


def test_range_rows_name_every_stage_and_order_ties_by_rank() -> None:
    ranges = [
        _r("a_stage", 0, 10, "stage"),
        _r("b_stage", 20, 10, "stage"),
        _r("loss", 1, 2),
        _r("loss", 21, 2),
        _r("a_stage", 0, 10, "stage", rank=10),
        _r("loss", 1, 4, rank=10),
        _r("a_stage", 0, 10, "stage", rank=2),
        _r("loss", 1, 4, rank=2),
    ]
    rows = range_rows(ranges)
    assert [(r.rank, r.stage) for r in rows] == [
        (0, "a_stage, b_stage"),
        (2, "a_stage"),
        (10, "a_stage"),
    ]
