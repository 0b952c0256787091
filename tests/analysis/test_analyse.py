"""``analyse``: per-stage and per-rank answers from real captures and torch_npu layouts."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from capture_fixtures import make_run, npu_db, npu_text

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.config.schema import STAGES


def test_stage_rank_covers_every_stage_and_rank_once(run_dir: Path) -> None:
    result = analyse(run_dir)
    rows = result.stage_rank()
    assert {(r["stage"], r["rank"]) for r in rows} == {(s, k) for s in STAGES for k in (0, 1)}
    assert all(r["count"] == 3 for r in rows)  # spans and op trace are not double counted
    assert [r["stage"] for r in rows][::2] == list(STAGES)


def test_per_step_has_each_step_and_total(run_dir: Path) -> None:
    steps = analyse(run_dir).per_step()
    assert [(r["rank"], r["step"]) for r in steps] == [(k, s) for k in (0, 1) for s in (1, 2, 3)]
    for r in steps:
        assert r["total"] >= sum(r[s] for s in STAGES) * 0.99


def test_straggler_named_with_stage_step_rank(run_dir: Path) -> None:
    found = analyse(run_dir).stragglers()
    assert found and {(s["stage"], s["rank"]) for s in found} >= {("actor_update", 1)}
    assert {s["step"] for s in found if s["stage"] == "actor_update"} == {1, 2, 3}
    assert all(s["ratio"] > 1.2 for s in found)


def test_margin_controls_stragglers(run_dir: Path) -> None:
    assert analyse(run_dir, margin=1000.0).stragglers() == []


def test_top_ops_and_inventory(run_dir: Path) -> None:
    result = analyse(run_dir)
    ops = {o["op"]: o for o in result.top_ops(50)}
    assert ops["aten::mm"]["count"] >= 2 * 3 * 6
    inv = result.inventory()
    assert {i["kind"] for i in inv} == {"torch", "spans"} and all(i["bytes"] > 0 for i in inv)
    assert all(i["steps"] == [1, 2, 3] for i in inv)


def test_gzip_and_db_captures_read_like_json(tmp_path: Path, run_dir: Path) -> None:
    src = next(run_dir.rglob("rank0_*.pt.trace.json"))
    gz = tmp_path / "integrated" / (src.name + ".gz")
    gz.parent.mkdir()
    with open(src, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    a = analyse(gz).stage_rank()
    db_root = make_run(tmp_path / "db", ranks=(0,), profile_export_type="db", mstx=False)
    b = analyse(db_root)
    assert [r["stage"] for r in a] == [r["stage"] for r in b.stage_rank()] == list(STAGES)
    assert {i["kind"] for i in b.inventory()} == {"db"} and b.top_ops()


def test_torch_npu_text_and_db_layouts(tmp_path: Path) -> None:
    npu_text(tmp_path, rank=0)
    npu_db(tmp_path, rank=1)
    result = analyse(tmp_path)
    assert not result.bad
    rows = {(r["stage"], r["rank"]): r for r in result.stage_rank()}
    assert rows[("actor_update", 0)]["total_ms"] == 5.0
    assert rows[("actor_update", 1)]["total_ms"] == 4.0
    steps = {(r["rank"], r["step"]): r for r in result.per_step()}
    assert steps[(0, 2)]["total"] == 9.0005 and steps[(1, 2)]["total"] == 8.0
    assert result.top_ops()[0]["op"] == "aten::mm"


def test_raw_npu_capture_says_what_to_run(tmp_path: Path) -> None:
    folder = tmp_path / "integrated" / "rank0_h_1_20261130_ascend_pt"
    (folder / "FRAMEWORK").mkdir(parents=True)
    result = analyse(tmp_path)
    (line,) = result.bad
    assert str(folder) in line and "torch_npu.profiler.profiler.analyse(" in line


def test_empty_window_warns(tmp_path: Path) -> None:
    result = analyse(tmp_path)
    assert not result.traces and "no captures found" in result.warnings()[0]


def test_raw_npu_capture_parsed_with_torch_npu_when_it_imports(tmp_path: Path,
                                                               monkeypatch) -> None:
    doubles = Path(__file__).resolve().parents[1] / "doubles"
    monkeypatch.syspath_prepend(str(doubles))
    import sys

    try:
        folder = tmp_path / "integrated" / "rank0_h_1_20261130_ascend_pt"
        (folder / "FRAMEWORK").mkdir(parents=True)
        result = analyse(tmp_path)
        assert not result.bad
        assert (folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").is_file()
        assert result.top_ops()[0]["op"] == "aten::mm"
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "torch_npu"]:
            sys.modules.pop(name)


def test_warmup_steps_marked_and_left_out_of_stragglers(tmp_path: Path) -> None:
    make_run(tmp_path, ranks=(0, 1), steps=3, warmup_steps=1, slow={(1, "actor_update"): 1})
    result = analyse(tmp_path)
    assert [(r["rank"], r["step"]) for r in result.per_step() if r["warmup"]] == [(0, 1), (1, 1)]
    assert 1 not in {s["step"] for s in result.stragglers()}
    assert ("actor_update", 2, 1) in {(s["stage"], s["step"], s["rank"])
                                      for s in result.stragglers()}
    result.include_warmup = True
    assert ("actor_update", 1, 1) in {(s["stage"], s["step"], s["rank"])
                                      for s in result.stragglers()}
