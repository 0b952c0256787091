"""Host findings: a stage's time that no operator ran, with the ranges that hold it, on a
hand-made trace to the microsecond and on a real stage-scoped capture of a planted stall."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import answered

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.findings import find, host
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.testing.kineto import span, write_trace


def _trace(path: Path, stall_us: float, ops_us: float = 30_000.0) -> Path:
    """Steps 1-2: actor_update holds ops for ``ops_us`` (one nested in another), then the
    custom range ``reward_wait`` holding ``inner`` and a stall of ``stall_us`` with no op."""
    events = []
    for step in (1, 2):
        t = step * 1_000_000
        stage = ops_us + stall_us + 5000
        events += [
            span(f"ProfilerStep#{step}", t, stage + 1000),
            span("actor_update", t + 100, stage),
            span("aten::mm", t + 200, ops_us, cat="cpu_op"),
            span("aten::empty", t + 300, 100, cat="cpu_op"),  # nested: counted once
            span("reward_wait", t + 200 + ops_us, stall_us + 2000),
            span("inner", t + 300 + ops_us, 1000),
        ]
    return write_trace(path, events, mindspeed_prof={"rank": 0, "level": "level1"})


def test_the_stall_is_named_with_its_range_and_the_numbers_add_up(tmp_path: Path) -> None:
    result = analyse(_trace(tmp_path / "rank0.pt.trace.json", stall_us=200_000.0))
    (row,) = tables(result).no_op
    # per execution: 235 ms; ops cover 30 ms; the rest, 205 ms, ran no operator
    assert (row.stage, row.count) == ("actor_update", 2)
    assert row.total_ms == pytest.approx(470.0) and row.no_op_ms == pytest.approx(410.0)
    assert row.share == pytest.approx(410.0 / 470.0)
    # reward_wait holds 202 ms an execution of it, 1 of them inside "inner": 201 + 1
    assert row.ranges == pytest.approx({"reward_wait": 402.0, "inner": 2.0})
    (stage,) = tables(result).stage_rank
    assert stage.no_op_ms is not None and stage.no_op_ms == pytest.approx(410.0)
    assert stage.total_ms - stage.no_op_ms == pytest.approx(60.0)  # what the ops explain
    (f,) = [f for f in find(*answered(result))[0] if f.rule == "host.no_op"]
    assert f.title == (
        "actor_update ran no operator for 205.0 of 235.0 ms per execution "
        "(87%) on rank 0: host-side Python, waits or sleeps, in range "
        "'reward_wait' 201.0 ms, range 'inner' 1.0 ms"
    )
    assert f.severity == "high" and f.impact_ms == pytest.approx(205.0) and f.ranks == [0]


@pytest.mark.parametrize(
    ("stall_us", "found"),
    [
        # 60 ms of ops in a stage of 65 + stall ms, 5 + stall of them with no op: MIN_SHARE (20%)
        # is reached at a 10 ms stall
        (9_900.0, False),
        (10_100.0, True),
        (0.0, False),
    ],
)
def test_the_share_of_no_op_time_that_names_a_stage(
    tmp_path: Path, stall_us: float, found: bool
) -> None:
    result = analyse(_trace(tmp_path / "rank0.pt.trace.json", stall_us=stall_us, ops_us=60_000.0))
    (row,) = tables(result).no_op
    assert (row.share >= host.MIN_SHARE) is found
    assert bool(host.no_op(*answered(result))) is found


def test_captures_without_operators_have_no_no_op_time(run_dir: Path) -> None:
    result = analyse(run_dir)  # level0 op traces beside range files: ops are recorded
    assert tables(result).no_op and all(r.no_op_ms >= 0.0 for r in tables(result).no_op)
    light = [t for t in result.traces if t.kind == "spans"]
    assert all(r.bare is None for t in light for r in t.ranges)  # a range file alone knows none


def test_a_stage_scoped_capture_of_a_planted_stall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case, as a trainer runs it: level1 capture of actor_update, a 200 ms wait
    in it. The stage table says how much of the stage ran no operator, the finding where."""
    import torch

    cfg = {
        "profile": True,
        "mstx": True,
        "stage": "actor_update",
        "profile_level": "level1",
        "profile_step_start": 1,
        "profile_step_end": 3,
        "profile_save_path": str(tmp_path),
    }
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in (1, 2):
            with prof.step(step), prof.stage("actor_update"):
                torch.randn(64, 64) @ torch.randn(64, 64)
                with mstx.range("reward_wait"):
                    time.sleep(0.2)
    (row,) = tables(analyse(tmp_path)).no_op
    assert row.count == 2 and row.no_op_ms >= 400.0  # a sleep runs no operator, whatever the load
    assert row.ranges["reward_wait"] >= 400.0 and row.no_op_ms <= row.total_ms
    assert main(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "actor_update ran no operator for" in out and "'reward_wait'" in out
    assert "no op" in out.split("Stage time per rank")[1].splitlines()[2]  # its column
    assert main(["analyse", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["no_op"][0]["stage"] == "actor_update" and doc["stage_rank"][0]["no_op_ms"] > 0
