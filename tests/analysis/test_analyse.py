"""``analyse``: per-stage and per-rank answers from real captures and torch_npu layouts."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run, npu_db, npu_text

from mindspeed_prof.analysis.analyse import Captures, analyse, analyse_files
from mindspeed_prof.analysis.ranges import range_rows, stage_rows
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.model import Alloc, CommRow, DeviceRow, Memory, Tally
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables, tables_json
from mindspeed_prof.analysis.rows import InventoryRow, MemoryRow, StepRow, to_json
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.formats.header import CaptureHeader, read_header
from mindspeed_prof.testing.kineto import span, write_trace


def test_stage_rank_covers_every_stage_and_rank_once(run_dir: Path) -> None:
    result = analyse(run_dir)
    rows = tables(result).stage_rank
    assert {(r.stage, r.rank) for r in rows} == {(s, k) for s in STAGES for k in (0, 1)}
    assert all(r.count == 3 for r in rows)  # spans and op trace are not double counted
    assert [r.stage for r in rows][::2] == list(STAGES)


def test_per_step_has_each_step_and_total(run_dir: Path) -> None:
    steps = tables(analyse(run_dir)).per_step
    assert [(r.rank, r.step) for r in steps] == [(k, s) for k in (0, 1) for s in (1, 2, 3)]
    for r in steps:
        assert r.total is not None and r.total >= sum(r.stages[s] for s in STAGES) * 0.99


def test_straggler_named_with_stage_step_rank(run_dir: Path) -> None:
    found = tables(analyse(run_dir)).stragglers
    assert found and all(s.kind == "stage" for s in found)
    assert {(s.name, s.rank) for s in found} >= {("actor_update", 1)}
    assert {s.step for s in found if s.name == "actor_update"} == {1, 2, 3}
    assert all(s.ratio > 1.2 for s in found)


def test_margin_controls_stragglers(run_dir: Path) -> None:
    assert tables(analyse(run_dir), Settings(margin=1000.0)).stragglers == []


def test_top_ops_and_inventory(run_dir: Path) -> None:
    result = analyse(run_dir)
    ops = {o.op: o for o in tables(result).top_ops[:50]}
    assert ops["aten::mm"].count >= 2 * 3 * 6
    inv = tables(result).inventory
    assert {i.kind for i in inv} == {"torch", "spans"} and all(i.bytes > 0 for i in inv)
    assert all(i.steps == [1, 2, 3] for i in inv)


def test_gzip_and_db_captures_read_like_json(tmp_path: Path, run_dir: Path) -> None:
    src = next(run_dir.rglob("rank0_*.pt.trace.json"))
    gz = tmp_path / "integrated" / (src.name + ".gz")
    gz.parent.mkdir()
    with open(src, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    assert analyse(gz).root == gz.parent  # a file's folder is the run's root
    a = tables(analyse(gz)).stage_rank
    db_root = make_run(tmp_path / "db", ranks=(0,), profile_export_type="db", mstx=False)
    b = analyse(db_root)
    assert [r.stage for r in a] == [r.stage for r in tables(b).stage_rank] == list(STAGES)
    assert {i.kind for i in tables(b).inventory} == {"db"} and tables(b).top_ops[:15]


def test_torch_npu_text_and_db_layouts(tmp_path: Path) -> None:
    npu_text(tmp_path, rank=0)
    npu_db(tmp_path, rank=1)
    result = analyse(tmp_path)
    assert not result.bad
    rows = {(r.stage, r.rank): r for r in tables(result).stage_rank}
    assert rows[("actor_update", 0)].total_ms == 5.0
    assert rows[("actor_update", 1)].total_ms == 4.0
    steps = {(r.rank, r.step): r for r in tables(result).per_step}
    assert steps[(0, 2)].total == 9.0005 and steps[(1, 2)].total == 8.0
    assert tables(result).top_ops[:15][0].op == "aten::mm"


def test_raw_npu_capture_says_what_to_run(tmp_path: Path) -> None:
    folder = tmp_path / "integrated" / "rank0_h_1_20261130_ascend_pt"
    (folder / "FRAMEWORK").mkdir(parents=True)
    result = analyse(tmp_path)
    (line,) = result.bad
    assert str(folder) in line and "torch_npu.profiler.profiler.analyse(" in line


def test_empty_window_warns(tmp_path: Path) -> None:
    result = analyse(tmp_path)
    assert not result.traces and tables(result).warnings == [
        f"{tmp_path}: no captures found (is profile: true, and does the window "
        "[profile_step_start, profile_step_end) contain steps that ran?)"
    ]


def test_raw_npu_capture_parsed_with_torch_npu_when_it_imports(tmp_path: Path, monkeypatch) -> None:
    doubles = Path(__file__).resolve().parents[1] / "doubles"
    monkeypatch.syspath_prepend(str(doubles))
    import sys

    try:
        folder = tmp_path / "integrated" / "rank0_h_1_20261130_ascend_pt"
        (folder / "FRAMEWORK").mkdir(parents=True)
        result = analyse(tmp_path)
        assert not result.bad
        assert (folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").is_file()
        assert tables(result).top_ops[:15][0].op == "aten::mm"
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "torch_npu"]:
            sys.modules.pop(name)


def test_warmup_steps_marked_and_left_out_of_stragglers(tmp_path: Path) -> None:
    # 90 ms slow: rank 0's stage would have to stall 60 ms to hide it (30 ms was seen under load)
    make_run(
        tmp_path,
        ranks=(0, 1),
        steps=3,
        warmup_steps=1,
        profile_step_start=2,
        slow={(1, "actor_update"): 3},
    )  # step 1 warmup, [2, 4) measured
    result = analyse(tmp_path)
    assert [(r.rank, r.step) for r in tables(result).per_step if r.warmup] == [(0, 1), (1, 1)]
    assert 1 not in {s.step for s in tables(result).stragglers}
    assert ("actor_update", 2, 1) in {(s.name, s.step, s.rank) for s in tables(result).stragglers}
    given = Settings(include_warmup=True)
    assert ("actor_update", 1, 1) in {
        (s.name, s.step, s.rank) for s in tables(result, given).stragglers
    }


def _memory_trace(
    path: Path,
    stages: dict[str, tuple[float, float]],
    memory: Sequence[tuple[float, float, float | None, float | None]],
) -> Path:
    """Step 1 (0..1000 us) holding ``stages`` (start, end) and an ``aten::empty`` op at
    150..160 us; ``memory``: [memory] events (ts, bytes, allocated, reserved) on its thread."""
    events = [span("ProfilerStep#1", 0, 1000)]
    events += [span(name, lo, hi - lo) for name, (lo, hi) in stages.items()]
    events.append(span("aten::empty", 150, 10, cat="cpu_op"))
    for ts, size, alloc, reserved in memory:
        args = {"Bytes": size, "Device Type": 0}
        args.update(
            {
                k: v
                for k, v in (("Total Allocated", alloc), ("Total Reserved", reserved))
                if v is not None
            }
        )
        events.append({"ph": "i", "name": "[memory]", "ts": ts, "pid": 1, "tid": 1, "args": args})
    return write_trace(path, events)


def _timeline(path: Path, points: list[tuple[float, list[float]]]) -> Path:
    """torch's memory timeline: [times], [sizes by category] (their sum is allocated)."""
    path.write_bytes(
        gzip.compress(json.dumps([[t for t, _ in points], [s for _, s in points]]).encode())
    )
    return path


def test_memory_file_joined_to_its_own_capture(tmp_path: Path) -> None:
    """A timeline joins the trace of its stem: the higher peak of each, the file's timeline and
    stage peaks (from that capture's stages) where it has them, else the trace's."""
    folder = tmp_path / "integrated"
    stages = {"actor_update": (100.0, 400.0), "critic_update": (500.0, 900.0)}
    events = [(155.0, 100.0, 100.0, 4096.0), (600.0, 200.0, 300.0, 8192.0)]
    _memory_trace(folder / "rank0_h_1_step1.pt.trace.json", stages, events)
    _timeline(
        folder / "rank0_h_1_step1.memory_timeline.json.gz",
        [(120.0, [40.0, 40.0]), (450.0, [100.0, 100.0]), (700.0, [10.0, 20.0])],
    )
    # rank 1: stages elsewhere in time, a lower trace peak than its file's
    _memory_trace(
        folder / "rank1_h_1_step1.pt.trace.json",
        {"actor_update": (10.0, 50.0), "critic_update": (60.0, 90.0)},
        [(155.0, 50.0, 50.0, None)],
    )
    _timeline(folder / "rank1_h_1_step1.memory_timeline.json.gz", [(20.0, [500.0])])
    # rank 2: an empty timeline file: everything from the trace's own events
    _memory_trace(folder / "rank2_h_1_step1.pt.trace.json", stages, events)
    _timeline(folder / "rank2_h_1_step1.memory_timeline.json.gz", [])
    # rank 3: neither the events nor the file recorded a level
    _memory_trace(folder / "rank3_h_1_step1.pt.trace.json", stages, [(155.0, 64.0, None, None)])
    _timeline(folder / "rank3_h_1_step1.memory_timeline.json.gz", [])
    result = analyse(tmp_path)
    assert not result.bad and {t.kind for t in result.traces} == {"torch"}
    rows = {(r.rank, r.stage): r for r in tables(result).memory}
    r0 = rows[(0, None)]
    assert (r0.peak_allocated_bytes, r0.peak_reserved_bytes) == (300.0, 8192.0)
    assert r0.source == "timeline" and r0.file == "integrated/rank0_h_1_step1.pt.trace.json"
    assert r0.timeline == [[120.0, 80.0], [450.0, 200.0], [700.0, 30.0]]
    assert r0.top_ops == [Alloc(op="aten::empty", count=1, bytes=100)]
    # the level at each stage's start counts: 80 B in actor_update, 200 B in critic_update
    assert rows[(0, "actor_update")].peak_allocated_bytes == 80.0
    assert rows[(0, "critic_update")].peak_allocated_bytes == 200.0
    assert rows[(1, None)].peak_allocated_bytes == 500.0
    assert rows[(1, None)].peak_reserved_bytes is None
    assert rows[(1, "actor_update")].peak_allocated_bytes == 500.0
    r2 = rows[(2, None)]
    assert (r2.peak_allocated_bytes, r2.peak_reserved_bytes) == (300.0, 8192.0)
    assert r2.timeline == [[155.0, 100.0], [600.0, 300.0]]
    assert rows[(2, "actor_update")].peak_allocated_bytes == 100.0
    assert rows[(2, "critic_update")].peak_allocated_bytes == 300.0
    assert (rows[(3, None)].peak_allocated_bytes, rows[(3, None)].peak_reserved_bytes) == (
        None,
        None,
    )


def test_memory_file_without_a_trace_is_its_own_capture(tmp_path: Path) -> None:
    """A range file is not a trace to join: a timeline beside one (and a second memory file of
    the same stem) each stand as their own capture."""
    folder = tmp_path / "actor"
    write_trace(
        folder / "rank4_h_1_step1.mstx.trace.json",
        [span("ProfilerStep#1", 0, 1000), span("actor_update", 100, 300)],
        mindspeed_prof={"kind": "spans"},
    )
    timeline = _timeline(
        folder / "rank4_h_1_step1.memory_timeline.json.gz", [(150.0, [64.0]), (350.0, [32.0])]
    )
    snapshot = folder / "rank4_h_1_step1.memory_snapshot.pickle"
    snapshot.write_bytes(pickle.dumps({"segments": [{"allocated_size": 16, "total_size": 32}]}))
    result = analyse(tmp_path)
    assert not result.bad
    inv = sorted(tables(result).inventory, key=lambda i: i.file)
    assert [(i.file, i.kind, i.rank, i.group, i.bytes) for i in inv] == [
        (
            "actor/rank4_h_1_step1.memory_snapshot.pickle",
            "memory",
            4,
            "actor",
            snapshot.stat().st_size,
        ),
        (
            "actor/rank4_h_1_step1.memory_timeline.json.gz",
            "memory",
            4,
            "actor",
            timeline.stat().st_size,
        ),
        (
            "actor/rank4_h_1_step1.mstx.trace.json",
            "spans",
            4,
            "actor",
            (folder / "rank4_h_1_step1.mstx.trace.json").stat().st_size,
        ),
    ]
    rows = {(r.source, r.stage): r for r in tables(result).memory}
    assert set(rows) == {("snapshot", None), ("timeline", None), ("timeline", "actor_update")}
    assert rows[("timeline", "actor_update")].peak_allocated_bytes == 64.0
    assert rows[("snapshot", None)].peak_reserved_bytes == 32.0
    assert rows[("timeline", None)].top_ops == [] and rows[("snapshot", None)].timeline == []


def _data(
    rank: int | None, *ranges: tuple[str, str, int | None, float], source: str = "", **fields: Any
) -> TraceData:
    """A capture of ``rank`` holding (kind, name, step, ms) ranges, one after the other."""
    t = TraceData(
        Path(f"run/rank{rank}{source}.pt.trace.json"), "torch", rank, "integrated", 1, **fields
    )
    t.ranges += [
        Range(rank, kind, name, step, 1000.0 * i, ms * 1000.0, source)
        for i, (kind, name, step, ms) in enumerate(ranges)
    ]
    return t


def test_stragglers_sum_a_steps_runs_and_sort_by_time_lost() -> None:
    runs = {0: 10.0, 1: 10.0, 2: 16.0, 3: 30.0}
    traces = [
        _data(
            r,
            ("stage", "actor_update", 1, ms / 2),
            ("stage", "actor_update", 1, ms / 2),
            ("step", "ProfilerStep#1", 1, 100.0 * (r + 1)),  # steps: not a stage
            ("stage", "actor_update", None, 50.0 * r),
        )  # outside every step
        for r, ms in runs.items()
    ]
    traces.insert(0, _data(0, ("stage", "critic_update", 1, 5.0)))  # on one rank only
    found = tables(Captures(root=Path("run"), traces=traces)).stragglers
    # each rank against the median of the *other* ranks: rank 3 against (10, 10, 16)
    assert [(s.kind, s.name, s.step, s.rank, s.ms, s.median_ms) for s in found] == [
        ("stage", "actor_update", 1, 3, 30.0, 10.0),
        ("stage", "actor_update", 1, 2, 16.0, 10.0),
    ]
    assert [(s.ratio, s.excess_ms) for s in found] == [(3.0, 20.0), (1.6, 6.0)]


def test_a_stall_on_one_of_two_ranks_passes_twice_over_and_noise_names_nobody() -> None:
    # the case: a 501 ms stall on rank 0 of two; a median counting rank 0 itself
    # gives 1.98x at most. 13 ms against 7 ms, and 0.4 against 0.33 ms, are noise in a 1 s step.
    traces = [
        _data(
            r,
            ("step", "ProfilerStep#1", 1, 1000.0),
            ("stage", "actor_generate", 1, 520.0 if r == 0 else 19.0),
            ("range", "fwd", 1, 13.0 if r == 0 else 7.0),
            ("range", "tiny", 1, 0.4 if r == 0 else 0.33),
        )
        for r in (0, 1)
    ]
    result = Captures(root=Path("."), traces=traces)
    (s,) = tables(result).stragglers
    assert (s.name, s.rank, s.median_ms, round(s.ratio, 2), s.excess_ms) == (
        "actor_generate",
        0,
        19.0,
        27.37,
        501.0,
    )
    assert tables(result).range_stragglers == []  # 6 ms is under 1% of the 1000 ms step
    given = Settings(noise_ms=0.05)  # the 1% share still holds: 10 ms
    assert tables(result, given).range_stragglers == []
    short = [
        _data(
            r,
            ("step", "ProfilerStep#1", 1, 100.0),
            ("range", "fwd", 1, 13.0 - 6 * r),
            ("range", "tiny", 1, 0.4 - 0.07 * r),
        )
        for r in (0, 1)
    ]
    assert [s.name for s in tables(Captures(root=Path("."), traces=short)).range_stragglers] == [
        "fwd"
    ]  # a 100 ms step: the floor is 1 ms


def test_stragglers_under_the_noise_floor_and_at_zero() -> None:
    small = [_data(r, ("stage", "actor_update", 1, ms)) for r, ms in enumerate((0.5, 0.5, 1.0))]
    assert tables(Captures(root=Path("."), traces=small)).stragglers == []  # 0.5 ms < 1 ms
    small_run = Captures(root=Path("."), traces=small)
    assert [s.rank for s in tables(small_run, Settings(noise_ms=0.5)).stragglers] == [2]
    assert tables(small_run, Settings(noise_ms=0.51)).stragglers == []
    zero = [_data(r, ("stage", "actor_update", 1, ms)) for r, ms in enumerate((0.0, 0.0, 1.0))]
    assert tables(Captures(root=Path("."), traces=zero), Settings(noise_ms=0.0)).stragglers == []


def test_straggler_of_a_clashing_capture_names_its_source() -> None:
    traces = [
        _data(0, ("stage", "actor_update", 1, 10.0), source="h1"),
        _data(0, ("stage", "actor_update", 1, 10.0), source="h2"),
        _data(0, ("stage", "actor_update", 1, 20.0), source="h3"),
    ]
    (s,) = tables(Captures(root=Path("."), traces=traces)).stragglers
    assert (s.rank, s.source, s.ms) == (0, "h3", 20.0)


def test_range_table_leaves_warmup_out_when_asked() -> None:
    meta = CaptureHeader(window=[2, 3], warmup_steps=1)
    result = Captures(
        root=Path("."),
        traces=[_data(0, ("range", "fwd", 1, 8.0), ("range", "fwd", 2, 2.0), meta=meta)],
    )
    assert [r.count for r in tables(result).range_table] == [2]
    assert [(r.count, r.total_ms) for r in range_rows(tables(result).counted)] == [(1, 2.0)]
    given = Settings(include_warmup=True)
    assert [r.count for r in range_rows(tables(result, given).counted)] == [2]


def test_top_tables_keep_the_fifteen_longest() -> None:
    def times() -> dict[str, Tally]:
        return {f"k{i:02d}": Tally(i % 3 + 1, 1000.0 * i) for i in range(20)}

    t = _data(0, kernels=times(), runtime=times(), ops=times())
    result = Captures(root=Path("."), traces=[t, _data(1, kernels={"k00": Tally(4, 99_000.0)})])
    expect = [("k00", 5, 99.0)] + [(f"k{i:02d}", i % 3 + 1, float(i)) for i in range(19, 5, -1)]
    assert [(k.name, k.count, k.device_ms) for k in tables(result).top_kernels[:15]] == expect
    assert [(k.name, k.ms) for k in tables(result).top_runtime[:15]] == [
        (f"k{i:02d}", float(i)) for i in range(19, 4, -1)
    ]
    assert [(k.op, k.self_ms) for k in tables(result).top_ops[:15]] == [
        (f"k{i:02d}", float(i)) for i in range(19, 4, -1)
    ]
    assert len(tables(result).top_ops[:3]) == 3


def test_memory_rows_stages_in_loop_order_defaults_filled() -> None:
    by_stage = {
        "critic_update": 3.0,
        "zeta": 4.0,
        "actor_compute_log_prob": 2.0,
        "actor_generate": 1.0,
    }
    t = _data(0, memory=Memory(source="trace", peak_allocated_bytes=9.0, by_stage=by_stage))
    (whole, *stages) = tables(Captures(root=Path("run"), traces=[t])).memory
    assert whole == MemoryRow(
        rank=0,
        file="rank0.pt.trace.json",
        source="trace",
        stage=None,
        peak_allocated_bytes=9.0,
        peak_reserved_bytes=None,
        top_ops=[],
        timeline=[],
    )
    assert all(
        (r.rank, r.file, r.source, r.peak_reserved_bytes)
        == (0, "rank0.pt.trace.json", "trace", None)
        for r in stages
    )
    assert [(r.stage, r.peak_allocated_bytes) for r in stages] == [
        ("actor_generate", 1.0),
        ("actor_compute_log_prob", 2.0),
        ("critic_update", 3.0),
        ("zeta", 4.0),
    ]


def test_files_named_relative_to_the_root_else_whole(tmp_path: Path) -> None:
    inside, outside = _data(0), _data(1)
    outside.path = tmp_path / "elsewhere.pt.trace.json"
    top = _data(2)
    top.path = Path("run")
    inv = tables(Captures(root=Path("run"), traces=[inside, outside, top])).inventory
    assert [i.file for i in inv] == ["rank0.pt.trace.json", str(outside.path), "run"]


def test_inventory_row_of_a_capture() -> None:
    t = _data(
        3,
        ("step", "ProfilerStep#4", 4, 1.0),
        ("stage", "actor_update", 2, 1.0),
        ("range", "fwd", None, 1.0),
        meta=CaptureHeader(level="level1"),
        clash_label="host-a",
        events=7,
    )
    (row, other) = tables(Captures(root=Path("run"), traces=[t, _data(4)])).inventory
    assert other.source == "" and other.level is None
    assert row == InventoryRow(
        file="rank3.pt.trace.json",
        kind="torch",
        rank=3,
        source="host-a",
        group="integrated",
        bytes=1,
        events=7,
        steps=[2, 4],
        level="level1",
    )


@pytest.mark.parametrize("what", ["ranges", "ops", "kernels", "device", "comm", "memory"])
def test_a_capture_with_any_content_is_not_empty(what: str) -> None:
    content: dict[str, Any] = {
        "ranges": [Range(0, "range", "r", 1, 0.0, 1.0)],
        "ops": {"aten::mm": Tally(1, 1.0)},
        "kernels": {"k": Tally(1, 1.0)},
        "device": [DeviceRow(step=1, compute_ms=0.0, comm_ms=0.0, overlap_ms=0.0, idle_ms=0.0)],
        "comm": [CommRow(name="x", kind="collective", step=1)],
        "memory": Memory(source="trace"),
    }
    full = _data(0, **{what: content[what]})
    empty = _data(1)
    result = Captures(root=Path("run"), traces=[full, empty], clashes=["rank 0 step 1: twice"])
    assert tables(result).warnings == [
        "rank1.pt.trace.json: captured nothing (no ranges, no ops)",
        "rank 0 step 1: twice",
    ]


def test_analyse_files_reads_a_given_list(tmp_path: Path, run_dir: Path) -> None:
    files = sorted(run_dir.rglob("rank1_*.pt.trace.json"))
    result = analyse_files(files, run_dir)
    assert result.root == run_dir
    assert [i.file for i in tables(result).inventory] == [
        str(f.relative_to(run_dir)) for f in files
    ]
    assert tables(result).stragglers == [] and tables(result).ranks == [1]


def test_json_holds_every_table(tmp_path: Path) -> None:
    meta = CaptureHeader(window=[2, 3], warmup_steps=1)
    traces = [
        _data(
            r,
            ("step", "ProfilerStep#1", 1, 20.0),
            ("stage", "actor_update", 1, ms),
            ("range", "fwd", 1, ms),
            meta=meta,
            kernels={"k": Tally(1, 5.0)},
            runtime={"cudaLaunchKernel": Tally(2, 1.0)},
            ops={"aten::mm": Tally(3, 2.0)},
            device=[
                DeviceRow(
                    step=1, stage=None, compute_ms=1.0, comm_ms=0.0, overlap_ms=0.0, idle_ms=0.0
                )
            ],
            comm=[
                CommRow(name="hcom_allReduce_", kind="collective", step=1, count=1, elapse_ms=ms)
            ],
            memory=Memory(source="trace", peak_allocated_bytes=1.0),
        )
        for r, ms in ((0, 1.0), (1, 1.0), (2, 5.0))
    ]
    for t in traces:
        t.classified = {"compute": Tally(1, 5.0)}
    traces[0].classified["deepep"] = Tally(2, 1500.0)
    traces[2].problems.append("rank2: a problem")
    traces[1].notes.append("rank1: a note")
    result = Captures(root=tmp_path, traces=traces, bad=["x: unreadable"])
    tabs = tables(result, Settings(margin=0.5, include_warmup=True))
    doc: dict[str, Any] = tables_json(tabs)  # read as JSON
    assert doc == {
        "root": str(tmp_path),
        "run": None,
        "runs": [],
        "ranks": [0, 1, 2],
        "stage_rank": to_json(tabs.stage_rank),
        "per_step": to_json(tabs.per_step),
        "stragglers": to_json(tabs.stragglers),
        "phases": to_json(tabs.phases),
        "ranges": to_json(tabs.range_table),
        "no_op": to_json(tabs.no_op),
        "range_stragglers": to_json(tabs.range_stragglers),
        "device": to_json(tabs.device),
        "comm": to_json(tabs.comm),
        "classified": [
            {"rule": "deepep", "kind": "comm", "ms": 1.5, "kernels": 2},
            {"rule": "compute", "kind": "compute", "ms": 0.015, "kernels": 3},
        ],
        "top_ops": to_json(tabs.top_ops[:15]),
        "top_kernels": to_json(tabs.top_kernels[:15]),
        "top_runtime": to_json(tabs.top_runtime[:15]),
        "memory": to_json(tabs.memory),
        "inventory": to_json(tabs.inventory),
        "warnings": [],
        "problems": ["rank2: a problem"],
        "skipped": ["x: unreadable"],
        "notes": ["rank1: a note"],
        "margin": 0.5,
        "noise_ms": 1.0,
        "warmup": [(0, 1), (1, 1), (2, 1)],
        "counters": [],
        "throughput": {"model": tabs.throughput.model.json(), "rows": [], "stages": []},
        "ledger": None,
    }
    assert [s["rank"] for s in doc["stragglers"]] == [2]
    assert [(s["range"], s["rank"]) for s in doc["range_stragglers"]] == [("fwd", 2)]
    assert doc["stage_rank"][0]["count"] == 1 and doc["device"][0]["warmup"]
    assert [(d["rank"], d["step"], d["compute_ms"]) for d in doc["device"]] == [
        (0, 1, 1.0),
        (1, 1, 1.0),
        (2, 1, 1.0),
    ]
    assert [(c["rank"], c["name"], c["count"], c["elapse_ms"]) for c in doc["comm"]] == [
        (0, "hcom_allReduce_", 1, 1.0),
        (1, "hcom_allReduce_", 1, 1.0),
        (2, "hcom_allReduce_", 1, 5.0),
    ]
    assert doc["comm"][2] == {  # every column, None where the reader did not give it
        "name": "hcom_allReduce_",
        "kind": "collective",
        "step": 1,
        "count": 1,
        "elapse_ms": 5.0,
        "wait_ms": None,
        "transit_ms": None,
        "sync_ms": None,
        "idle_ms": None,
        "size_mb": None,
        "bandwidth_gbps": None,
        "links": None,
        "link": None,
        "transport": None,
        "rank": 2,
        "source": "",
    }
    assert doc["top_runtime"] == [{"name": "cudaLaunchKernel", "count": 6, "ms": 0.003}]
    assert doc["per_step"][0] == {
        "rank": 0,
        "source": "",
        "step": 1,
        "total": 20.0,
        "actor_update": 1.0,
        "warmup": True,
    }
    json.dumps(doc)  # every table is plain JSON


def test_torch_npu_folder_analysed_alone_is_named(tmp_path: Path) -> None:
    folder = npu_text(tmp_path)
    assert [i.file for i in tables(analyse(folder)).inventory] == [folder.name]


def test_stage_and_step_tables_order_and_clashing_sources() -> None:
    meta = CaptureHeader(window=[2, 3], warmup_steps=1)
    traces = [
        _data(
            r,
            ("step", "ProfilerStep#2", 2, 9.0),
            ("stage", "actor_update", 2, 4.0),
            ("stage", "actor_update", 1, 6.0),
            ("range", "fwd", 2, 1.0),
            meta=meta,
        )
        for r in (10, 2, None)
    ]
    traces += [
        _data(0, ("step", "ProfilerStep#1", 1, 3.0), source="h2"),
        _data(0, ("step", "ProfilerStep#2", 2, 5.0), source="h1"),
    ]
    result = Captures(root=Path("run"), traces=traces)
    rows = tables(result).stage_rank
    assert [(r.rank, r.count, r.mean_ms, r.max_ms) for r in rows] == [
        (2, 2, 5.0, 6.0),
        (10, 2, 5.0, 6.0),
        (None, 2, 5.0, 6.0),
    ]
    assert [(r.rank, r.count) for r in stage_rows(tables(result).counted)] == [
        (2, 1),
        (10, 1),
        (None, 1),
    ]
    steps = tables(result).per_step
    assert [(r.rank, r.source, r.step) for r in steps] == [
        (0, "h1", 2),
        (0, "h2", 1),
        (2, "", 1),
        (2, "", 2),
        (10, "", 1),
        (10, "", 2),
        (None, "", 1),
        (None, "", 2),
    ]
    assert steps[2] == StepRow(
        rank=2, step=1, total=None, stages={"actor_update": 6.0}, warmup=True
    )
    assert steps[3] == StepRow(
        rank=2, step=2, total=9.0, stages={"actor_update": 4.0}, warmup=False
    )
    assert steps[2].json() == {
        "rank": 2,
        "source": "",
        "step": 1,
        "actor_update": 6.0,
        "warmup": True,
    }
    clash = [_data(0, ("stage", "actor_update", 1, 1.0), source=h) for h in ("h1", "h2")]
    assert [r.source for r in tables(Captures(root=Path("."), traces=clash)).stage_rank] == [
        "h1",
        "h2",
    ]


def test_memory_file_joins_the_json_trace_before_a_db_of_the_same_capture(tmp_path: Path) -> None:
    root = make_run(tmp_path, ranks=(0,), steps=1, profile_export_type="db", mstx=False)
    (db,) = root.rglob("*.pt.trace.db")
    stem = db.name[: -len(".pt.trace.db")]
    trace = _memory_trace(
        db.with_name(stem + ".pt.trace.json"), {}, [(155.0, 100.0, 100.0, 4096.0)]
    )
    _timeline(db.with_name(stem + ".memory_timeline.json.gz"), [(120.0, [80.0])])
    (row,) = [r for r in tables(analyse(root)).memory if r.stage is None]
    assert row.file == str(trace.relative_to(root))
    assert (row.peak_allocated_bytes, row.peak_reserved_bytes) == (100.0, 4096.0)


def test_range_file_stands_for_the_op_trace_of_its_own_folder_only() -> None:
    def capture(folder: str, kind: str, ms: float) -> TraceData:
        suffix = ".mstx.trace.json" if kind == "spans" else ".pt.trace.json"
        t = TraceData(Path(folder) / f"rank0_h_1_step1{suffix}", kind, 0, folder, 1)
        t.ranges.append(Range(0, "stage", "actor_update", 1, 0.0, ms * 1000.0))
        return t

    result = Captures(
        root=Path("."),
        traces=[
            capture("actor", "spans", 1.0),
            capture("actor", "torch", 2.0),
            capture("critic", "torch", 4.0),
        ],
    )
    assert sorted(r.dur for r in tables(result).ranges) == [1000.0, 4000.0]


def test_warmup_only_from_a_well_formed_window_and_count() -> None:
    metas = [
        {"window": [5, 6], "warmup_steps": 2},
        {"window": [1, 3], "warmup_steps": 0},
        {"window": [1, 3], "warmup_steps": 1.5},
        {"window": [1, 3], "warmup_steps": None},
        {"window": None, "warmup_steps": 1},
        {"window": [], "warmup_steps": 1},
        {"window": ["1", 3], "warmup_steps": 1},
        {"warmup_steps": 1},
    ]
    traces = [_data(rank, meta=read_header(meta, "x")[0]) for rank, meta in enumerate(metas)]
    assert tables(Captures(root=Path("."), traces=traces)).warmup == {(0, 3), (0, 4)}


def test_missing_path_is_named(tmp_path: Path) -> None:
    result = analyse(tmp_path / "nope")
    assert result.bad == [f"{tmp_path / 'nope'}: no such file or directory"]
    assert not result.traces


def test_analyse_files_joins_a_memory_file_listed_before_its_trace(tmp_path: Path) -> None:
    trace = _memory_trace(
        tmp_path / "rank0_h_1_step1.pt.trace.json",
        {"actor_update": (100.0, 400.0)},
        [(155.0, 100.0, 100.0, 4096.0)],
    )
    timeline = _timeline(tmp_path / "rank0_h_1_step1.memory_timeline.json.gz", [(120.0, [300.0])])
    result = analyse_files([timeline, trace], tmp_path)
    assert [(t.kind, t.memory and t.memory.source) for t in result.traces] == [
        ("torch", "timeline")
    ]
    assert tables(result).memory[0].peak_allocated_bytes == 300.0


def test_warmup_of_one_role_is_not_another_roles_at_the_same_rank() -> None:
    """Two roles at rank 0, only the actor with a warmup step: its rows alone are marked."""
    from mindspeed_prof.analysis.readers.ranks import separate

    traces = []
    for role, warmup in (("actor", 1), ("rollout", 0)):
        t = TraceData(
            Path(f"run/{role}/rank0_h_1_step1.pt.trace.json"),
            "torch",
            0,
            role,
            1,
            meta=CaptureHeader(role=role, window=[2, 3], warmup_steps=warmup),
        )
        t.ranges = [
            Range(0, "step", "ProfilerStep#1", 1, 0.0, 1000.0),
            Range(0, "step", "ProfilerStep#2", 2, 1000.0, 1000.0),
            Range(0, "stage", "actor_update", 2, 1100.0, 100.0),  # two runs in step 2
            Range(0, "stage", "actor_update", 2, 1300.0, 200.0),
        ]
        t.device = [
            DeviceRow(step=s, stage=None, compute_ms=1.0, comm_ms=0.0, overlap_ms=0.0, idle_ms=0.0)
            for s in (1, 2)
        ]
        traces.append(t)
    result = Captures(root=Path("run"), traces=traces)
    assert separate(traces, result.root) == []
    marked = [("actor", 1)]
    assert [(r.source, r.step) for r in tables(result).per_step if r.warmup] == marked
    assert [(r.source, r.step) for r in tables(result).device if r.warmup] == marked
    assert tables(result).warmup == {(0, 1)}
    assert [(r.source, r.step) for r in tables(result).counted if r.kind == "step"] == [
        ("actor", 2),
        ("rollout", 1),
        ("rollout", 2),
    ]
    assert [(r.source, r.step, r.stages.get("actor_update")) for r in tables(result).per_step] == [
        ("actor", 1, None),
        ("actor", 2, pytest.approx(0.3)),
        ("rollout", 1, None),
        ("rollout", 2, pytest.approx(0.3)),
    ]
