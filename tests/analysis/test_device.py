"""Device breakdown of CUDA Kineto traces: agrees with HTA, per step and stage, bad input named."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mindspeed_prof.testing.kineto import cuda_trace, write_cuda_trace

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.device import kind_of, merge, overlap, total
from mindspeed_prof.cli import main
from mindspeed_prof.config.schema import STAGES

pytestmark = pytest.mark.filterwarnings("ignore::Warning:hta.*")  # HTA's own pandas deprecations


@pytest.fixture(scope="module")
def cuda_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cuda")
    for rank, seed in ((0, 5), (1, 11)):
        write_cuda_trace(root / f"rank{rank}.pt.trace.json", rank=rank, seed=seed, steps=4)
    return root


def _sums(rows: list[dict], rank: int) -> dict[str, float]:
    steps = [r for r in rows if r["rank"] == rank and r["stage"] is None and r["step"] is not None]
    return {k: 1000 * sum(r[k] for r in steps) for k in steps[0] if k.endswith("_ms")}


def test_agrees_with_hta_temporal_breakdown_and_overlap(cuda_dir: Path) -> None:
    logging.disable(logging.WARNING)
    try:
        from hta.trace_analysis import TraceAnalysis

        hta = TraceAnalysis(trace_dir=str(cuda_dir), include_last_profiler_step=True)
        breakdown = hta.get_temporal_breakdown(visualize=False).set_index("rank")
        overlap_pct = hta.get_comm_comp_overlap(visualize=False).set_index("rank")
    finally:
        logging.disable(logging.NOTSET)
    rows = analyse(cuda_dir).device()
    for rank in (0, 1):
        ours, ref = _sums(rows, rank), breakdown.loc[rank]
        assert ours["compute_ms"] == pytest.approx(ref["compute_time(us)"], rel=0.01)
        assert ours["idle_ms"] == pytest.approx(ref["idle_time(us)"], rel=0.01)
        assert ours["busy_ms"] - ours["compute_ms"] == pytest.approx(
            ref["non_compute_time(us)"], rel=0.01)
        assert ours["span_ms"] == pytest.approx(ref["kernel_time(us)"], rel=0.01)
        assert 100 * ours["overlap_ms"] / ours["comm_ms"] == pytest.approx(
            overlap_pct.loc[rank, "comp_comm_overlap_pctg"], rel=0.01)
        assert ours["comm_ms"] > 0 and ours["memcpy_ms"] > 0 and ours["idle_ms"] > 0


def test_rows_per_step_and_stage(cuda_dir: Path) -> None:
    rows = [r for r in analyse(cuda_dir).device() if r["rank"] == 0]
    assert [r["step"] for r in rows if r["stage"] is None] == [1, 2, 3, 4]
    staged = {(r["step"], r["stage"]) for r in rows if r["stage"] is not None}
    assert staged == {(s, name) for s in (1, 2, 3, 4) for name in STAGES}
    for r in rows:
        assert r["busy_ms"] + r["idle_ms"] == pytest.approx(r["span_ms"])
        assert r["overlap_ms"] <= min(r["comm_ms"], r["compute_ms"]) + 1e-9
    for step in (1, 2, 3, 4):  # a stage's device time is a part of its step's
        whole = next(r for r in rows if r["step"] == step and r["stage"] is None)
        assert sum(r["compute_ms"] for r in rows if r["step"] == step and r["stage"]) == (
            pytest.approx(whole["compute_ms"], rel=0.05))


def test_three_top_lists_are_apart(cuda_dir: Path) -> None:
    result = analyse(cuda_dir)
    host = {o["op"] for o in result.top_ops(50)}
    kernels = {k["name"] for k in result.top_kernels(50)}
    runtime = {k["name"] for k in result.top_runtime(50)}
    assert host == {"aten::mm"}
    assert runtime == {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"}
    assert "ncclDevKernel_AllReduce_Sum_f32_RING_LL" in kernels and "Memset (Device)" in kernels
    trace = cuda_trace(rank=0, seed=5, steps=4)
    device_us = sum(e["dur"] for e in trace["traceEvents"]
                    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    ours = analyse(cuda_dir / "rank0.pt.trace.json").top_kernels(100)
    assert sum(k["device_ms"] for k in ours) == pytest.approx(device_us / 1000)


def test_cpu_only_capture_says_no_device_data(run_dir: Path, capsys) -> None:
    result = analyse(run_dir)
    assert result.device() == [] and not result.has_device and result.top_kernels() == []
    assert main(["analyse", str(run_dir)]) == 0
    assert "No device data" in capsys.readouterr().out


def test_stage_recorded_as_cpu_op_counts(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#4", "ts": 0, "dur": 100,
               "pid": 1, "tid": 1},
              {"ph": "X", "cat": "cpu_op", "name": "actor_update", "ts": 10, "dur": 50,
               "pid": 1, "tid": 1}]
    path = tmp_path / "worker0.1700000000.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    rows = analyse(path).stage_rank()
    assert [(r["stage"], r["count"], r["total_ms"]) for r in rows] == [("actor_update", 1, 0.05)]


def test_device_without_steps_and_overlapping_collectives_are_named(tmp_path: Path,
                                                                    capsys) -> None:
    trace = cuda_trace(rank=0, seed=2, steps=2, with_steps=False)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    nccl = next(e for e in kernels if e["name"].startswith("nccl"))
    trace["traceEvents"].append({**nccl, "ts": nccl["ts"] + 1})  # a clash on the same stream
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(trace))
    result = analyse(path)
    (problem,) = result.problems()
    (note,) = result.notes()  # no steps is how the trace is, not a part left unread
    assert str(path) in problem and "overlap" in problem
    assert str(path) in note and "no ProfilerStep" in note
    (row,) = [r for r in result.device() if r["stage"] is None]
    assert row["step"] is None and row["compute_ms"] > 0  # the rest is still analysed
    assert main(["analyse", str(path)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err == [f"mindspeed-prof: skipped {result.shown(problem)}",
                   f"mindspeed-prof: note: {result.shown(note)}"]
    assert all(line.startswith("mindspeed-prof: skipped rank0.pt.trace.json: ")
               or line.startswith("mindspeed-prof: note: rank0.pt.trace.json: ") for line in err)


def test_a_collective_clash_found_after_other_kernels_on_its_stream() -> None:
    from mindspeed_prof.analysis.device import DeviceOps

    ops = DeviceOps()
    ops.add(7, 0.0, 5.0, "ampere_sgemm", 0.0)
    ops.add(7, 6.0, 9.0, "ncclDevKernel_AllReduce", 6.0)
    ops.add(7, 8.0, 12.0, "ncclDevKernel_AllGather", 8.0)  # starts before the last one ends
    ops.add(8, 0.0, 1.0, "ncclDevKernel_AllReduce", 0.0)  # another stream: no clash
    ops.add(7, 12.0, 13.0, "ncclDevKernel_Broadcast", 12.0)  # starts as the last one ends
    assert ops.comm_clashes() == ["ncclDevKernel_AllGather"]
    ops.close()


def test_launch_at_a_steps_end_and_a_sub_microsecond_step() -> None:
    from mindspeed_prof.analysis.device import DeviceOps, breakdown

    ops = DeviceOps()
    ops.add(1, 0.25, 0.5, "ampere_sgemm", 10.0)  # launched as step 1's host range ends
    ops.add(1, 0.5, 0.75, "ampere_sgemm", 10.5)  # after it: outside every step
    rows = breakdown(ops, [(1, 0.0, 10.0)], [])
    ops.close()
    assert [(r["step"], r["span_ms"], r["compute_ms"]) for r in rows] == [
        (1, 0.00025, 0.00025), (None, 0.00025, 0.00025)]


def test_kernel_kinds_follow_hta_names() -> None:
    assert kind_of("ncclDevKernel_AllGather_RING_LL") == "comm"
    assert kind_of("Memcpy DtoD (Device -> Device)") == "memcpy"
    assert kind_of("Memset (Device)") == "memcpy"
    assert kind_of("ampere_sgemm_128x64_tn") == "compute"
    assert kind_of("cudaStreamSync") == "other"


spans = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20)).map(
    lambda p: (float(p[0]), float(p[0] + p[1]))), max_size=12)


@given(spans, spans)
def test_interval_algebra_matches_counting_unit_cells(a: list, b: list) -> None:
    cells_a = {c for lo, hi in a for c in range(int(lo), int(hi))}
    cells_b = {c for lo, hi in b for c in range(int(lo), int(hi))}
    ma, mb = merge(a), merge(b)
    both = overlap(ma, mb)
    # the fewest intervals: none touches the next, no empty piece of an overlap
    assert all(x[1] < y[0] for m in (ma, both) for x, y in zip(m, m[1:]))
    assert all(lo < hi for lo, hi in both)
    assert total(ma) == len(cells_a)
    assert total(overlap(ma, mb)) == len(cells_a & cells_b)
    assert total(ma, 10, 30) == len({c for c in cells_a if 10 <= c < 30})


def test_other_trainers_trace_without_stages(tmp_path: Path) -> None:
    names = ("forward", "backward", "Optimizer.step#AdamW.step")
    trace = cuda_trace(rank=3, seed=4, steps=3, stages=names)
    path = tmp_path / "worker0.1700000000.pt.trace.json"
    path.write_text(json.dumps(trace))
    result = analyse(path)
    assert result.ranks == [3] and result.stage_rank() == []
    ranges = {r["name"]: r for r in result.range_table()}
    assert set(ranges) == set(names)
    assert all(r["count"] == 3 and r["stage"] is None for r in ranges.values())
    rows = result.device()
    assert [r["step"] for r in rows] == [1, 2, 3] and all(r["stage"] is None for r in rows)
    assert result.top_ops() and result.top_kernels() and not result.problems()


def test_text_fits_80_columns_and_report_has_the_sections(cuda_dir: Path, tmp_path: Path) -> None:
    from rich.console import Console

    from mindspeed_prof.analysis.render import print_analysis
    from mindspeed_prof.analysis.report import write_report

    result = analyse(cuda_dir)
    with open(tmp_path / "out.txt", "w") as out:
        console = Console(width=80, record=True, file=out)
        print_analysis(result, console)
    text = console.export_text()
    assert "Device time per step" in text and "Top 10 device kernels" in text
    lines = [line for line in text.splitlines() if str(cuda_dir) not in line]  # paths unbroken
    assert max(len(line) for line in lines) <= 80
    html = write_report(result, tmp_path / "r.html").read_text()
    for section in ("id='device'", "Device time (ms)", "Top device kernels", "Top runtime",
                    "Top host ops", "Custom ranges"):
        assert section in html
    assert "<script" not in html and "<link" not in html and 'src="http' not in html


def test_torch_npu_rows_without_copies_print_chart_and_compare(tmp_path: Path, capsys) -> None:
    from capture_fixtures import npu_text

    npu_text(tmp_path / "a", rank=0)
    npu_text(tmp_path / "b", rank=0)
    (row,) = analyse(tmp_path / "a").device()
    assert row["memcpy_ms"] is None and row["compute_ms"] == 8.0  # from step_trace_time.csv
    assert main(["analyse", str(tmp_path / "a"), "--html", str(tmp_path / "r.html")]) == 0
    assert "Device time per step" in capsys.readouterr().out
    assert "id='device'" in (tmp_path / "r.html").read_text()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    (dev,) = json.loads(capsys.readouterr().out)["device"]
    assert dev["a_compute_ms"] == dev["b_compute_ms"] == 8.0 and dev["a_memcpy_ms"] is None


def _reference(ops: list[tuple[float, float, str, float]], steps: list[tuple[int, float, float]],
               stages: list[tuple[str, int | None, float, float]]) -> list[dict]:
    """The breakdown by whole lists (merge, overlap, total), as it was before streaming."""
    def row(mine: list, lo: float, hi: float) -> dict:
        sets = {k: merge([(t, e) for t, e, n, _ in mine if kind_of(n) == k])
                for k in ("compute", "comm", "memcpy")}
        busy = total(merge([(t, e) for t, e, _, _ in mine]), lo, hi)
        return {"span_ms": (hi - lo) / 1e3, "busy_ms": busy / 1e3,
                "compute_ms": total(sets["compute"], lo, hi) / 1e3,
                "comm_ms": total(sets["comm"], lo, hi) / 1e3,
                "overlap_ms": total(overlap(sets["comm"], sets["compute"]), lo, hi) / 1e3,
                "memcpy_ms": total(sets["memcpy"], lo, hi) / 1e3, "idle_ms": (hi - lo - busy) / 1e3}

    steps = sorted(steps, key=lambda s: s[1])
    per: dict = {}
    for op in ops:
        n = next((s[0] for s in reversed(steps) if s[1] <= op[3]), None)
        n = n if n is not None and op[3] <= next(s for s in steps if s[0] == n)[2] else None
        per.setdefault(n, []).append(op)
    stepped = [o for n, g in per.items() if n is not None for o in g]
    firsts = sorted((min(o[0] for o in g), n) for n, g in per.items() if n is not None)
    last = max((o[1] for o in stepped), default=0.0)
    rows = []
    for k, (lo, n) in enumerate(firsts):
        hi = firsts[k + 1][0] if k + 1 < len(firsts) else last
        whole = row(stepped, lo, hi)
        rows.append({"step": n, "stage": None, **whole})
    if None in per:
        out = per[None]
        rows.append({"step": None, "stage": None,
                     **row(out, min(o[0] for o in out), max(o[1] for o in out))})
    for name, step, ts, dur in stages:
        mine = [o for o in ops if ts <= o[3] <= ts + dur]
        if mine:
            rows.append({"step": step, "stage": name, **row(
                mine, min(o[0] for o in mine), max(o[1] for o in mine))})
    return rows


_NAMES = ["ampere_sgemm", "ncclDevKernel_AllReduce_Sum", "Memcpy HtoD", "cudaStreamSync"]
_ops = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 40), st.sampled_from(_NAMES),
                          st.integers(-20, 20), st.integers(0, 3)), max_size=60)
_windows = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 150)), max_size=5)


@settings(max_examples=200, deadline=None)
@given(_ops, _windows, _windows, st.integers(1, 8))
def test_sweep_breakdown_equals_whole_list_breakdown(raw: list, step_spans: list,
                                                     stage_spans: list, block: int) -> None:
    """Any order on any stream, any slice/spill block size: the rows of the list algorithm."""
    import mindspeed_prof.analysis.device as device

    # a quarter-microsecond grid: pieces shorter than 1 us, still exact in binary floats
    ops = [(t / 4, (t + d) / 4, name, (t + lag) / 4) for t, d, name, lag, _ in raw]
    steps = [(i + 1, float(s), float(s + d)) for i, (s, d) in enumerate(step_spans)]
    stages = [(STAGES[i % len(STAGES)], i, float(s), float(d))
              for i, (s, d) in enumerate(stage_spans)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device, "SLICE", block)
        store = device.DeviceOps()
        for (ts, end, name, launch), (*_, stream) in zip(ops, raw):
            where = store.add(stream, ts, end, name, ts)
            store.set_launch(where, launch)  # late, maybe into a spilled block
        got = device.breakdown(store, steps, stages)
        store.close()
    want = _reference(ops, steps, stages)
    assert [(r["step"], r["stage"]) for r in got] == [(r["step"], r["stage"]) for r in want]
    for g, w in zip(got, want):
        assert g == pytest.approx(w, abs=1e-9)


def test_streams_spilled_in_blocks_give_the_same_rows(cuda_dir: Path, monkeypatch) -> None:
    import mindspeed_prof.analysis.device as device

    whole = analyse(cuda_dir, cache=False).device()
    monkeypatch.setattr(device, "SLICE", 7)
    assert analyse(cuda_dir, cache=False).device() == whole
