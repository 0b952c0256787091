"""Device breakdown of CUDA Kineto traces: agrees with HTA, per step and stage, bad input named."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
from corpus import pending
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_store import Store, set_of

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers.classify import classifier
from mindspeed_prof.analysis.readers.device.breakdown import overlap, total
from mindspeed_prof.analysis.readers.events import DEVICE_CATS
from mindspeed_prof.analysis.readers.intervals import merge
from mindspeed_prof.analysis.readers.model import DeviceRow
from mindspeed_prof.analysis.readers.ranks import rank_of
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.testing.kineto import cuda_trace, span, write_cuda_trace, write_trace

pytestmark = pytest.mark.filterwarnings("ignore::Warning:hta.*")  # HTA's own pandas deprecations
_STORE = Store("hta_breakdown", "holistictraceanalysis")


@pytest.fixture(scope="module")
def cuda_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cuda")
    for rank, seed in ((0, 5), (1, 11)):
        write_cuda_trace(root / f"rank{rank}.pt.trace.json", rank=rank, seed=seed, steps=4)
    return root


#: The breakdown's columns of a CUDA trace's rows, and what the rest hold (torch_npu's only).
_MS = ("span_ms", "busy_ms", "compute_ms", "comm_ms", "overlap_ms", "memcpy_ms", "idle_ms")
_UNSET = {
    "comm_exposed_ms": None,
    "step_ms": None,
    "bubble_ms": None,
    "preparing_ms": None,
    "comm_exposed_no_recv_ms": None,
    "rank": None,
    "source": "",
    "warmup": False,
    "whole": False,
}


def _sums(rows: list[DeviceRow], rank: int) -> dict[str, float]:
    steps = [r for r in rows if r.rank == rank and r.stage is None and r.step is not None]
    assert all(getattr(r, k) is not None for r in steps for k in _MS)
    return {k: 1000 * sum(getattr(r, k) for r in steps) for k in _MS}


def _hta_overlap_live(root: Path) -> dict[str, Any]:
    """HTA's temporal breakdown and communication/computation overlap of ``root``, per rank."""
    from hta.trace_analysis import TraceAnalysis

    logging.disable(logging.WARNING)
    try:
        hta = TraceAnalysis(trace_dir=str(root), include_last_profiler_step=True)
        breakdown = hta.get_temporal_breakdown(visualize=False).set_index("rank")
        overlap_pct = hta.get_comm_comp_overlap(visualize=False).set_index("rank")
    finally:
        logging.disable(logging.NOTSET)
    return {
        "ranks": [
            [
                int(rank),
                {
                    k: float(breakdown.loc[rank, k])
                    for k in (
                        "compute_time(us)",
                        "idle_time(us)",
                        "non_compute_time(us)",
                        "kernel_time(us)",
                    )
                }
                | {"overlap_pct": float(overlap_pct.loc[rank, "comp_comm_overlap_pctg"])},
            ]
            for rank in breakdown.index
        ]
    }


@pytest.mark.reference
def test_agrees_with_hta_temporal_breakdown_and_overlap(cuda_dir: Path) -> None:
    got = _STORE.figures(_hta_overlap_live, cuda_dir, _test_name())
    breakdown = {rank: figures for rank, figures in got["ranks"]}
    rows = tables(analyse(cuda_dir)).device
    for rank in (0, 1):
        ours, ref = _sums(rows, rank), breakdown[rank]
        assert ours["compute_ms"] == pytest.approx(ref["compute_time(us)"], rel=0.01)
        assert ours["idle_ms"] == pytest.approx(ref["idle_time(us)"], rel=0.01)
        assert ours["busy_ms"] - ours["compute_ms"] == pytest.approx(
            ref["non_compute_time(us)"], rel=0.01
        )
        assert ours["span_ms"] == pytest.approx(ref["kernel_time(us)"], rel=0.01)
        assert 100 * ours["overlap_ms"] / ours["comm_ms"] == pytest.approx(
            ref["overlap_pct"], rel=0.01
        )
        assert ours["comm_ms"] > 0 and ours["memcpy_ms"] > 0 and ours["idle_ms"] > 0


def test_rows_per_step_and_stage(cuda_dir: Path) -> None:
    rows = [r for r in tables(analyse(cuda_dir)).device if r.rank == 0]
    assert [r.step for r in rows if r.stage is None] == [1, 2, 3, 4]
    staged = {(r.step, r.stage) for r in rows if r.stage is not None}
    assert staged == {(s, name) for s in (1, 2, 3, 4) for name in STAGES}
    for r in rows:
        assert r.busy_ms is not None and r.span_ms is not None  # a CUDA trace's rows have them
        assert r.busy_ms + r.idle_ms == pytest.approx(r.span_ms)
        assert r.overlap_ms <= min(r.comm_ms, r.compute_ms) + 1e-9
    for step in (1, 2, 3, 4):  # a stage's device time is a part of its step's
        whole = next(r for r in rows if r.step == step and r.stage is None)
        assert sum(r.compute_ms for r in rows if r.step == step and r.stage) == (
            pytest.approx(whole.compute_ms, rel=0.05)
        )


def test_three_top_lists_are_apart(cuda_dir: Path) -> None:
    result = analyse(cuda_dir)
    host = {o.op for o in tables(result).top_ops[:50]}
    kernels = {k.name for k in tables(result).top_kernels[:50]}
    runtime = {k.name for k in tables(result).top_runtime[:50]}
    assert host == {"aten::mm"}
    assert runtime == {"cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync"}
    assert "ncclDevKernel_AllReduce_Sum_f32_RING_LL" in kernels and "Memset (Device)" in kernels
    trace = cuda_trace(rank=0, seed=5, steps=4)
    device_us = sum(
        e["dur"]
        for e in trace["traceEvents"]
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
    )
    ours = tables(analyse(cuda_dir / "rank0.pt.trace.json")).top_kernels[:100]
    assert sum(k.device_ms for k in ours) == pytest.approx(device_us / 1000)


def test_cpu_only_capture_says_no_device_data(run_dir: Path, capsys) -> None:
    result = analyse(run_dir)
    assert (
        tables(result).device == []
        and not result.has_device
        and tables(result).top_kernels[:15] == []
    )
    assert main(["analyse", str(run_dir)]) == 0
    assert "No device data" in capsys.readouterr().out


def test_stage_recorded_as_cpu_op_counts(tmp_path: Path) -> None:
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "ProfilerStep#4",
            "ts": 0,
            "dur": 100,
            "pid": 1,
            "tid": 1,
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "actor_update",
            "ts": 10,
            "dur": 50,
            "pid": 1,
            "tid": 1,
        },
    ]
    path = tmp_path / "worker0.1700000000.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    rows = tables(analyse(path)).stage_rank
    assert [(r.stage, r.count, r.total_ms) for r in rows] == [("actor_update", 1, 0.05)]


def test_device_without_steps_and_overlapping_collectives_are_named(tmp_path: Path, capsys) -> None:
    trace = cuda_trace(rank=0, seed=2, steps=2, with_steps=False)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    nccl = next(e for e in kernels if e["name"].startswith("nccl"))
    trace["traceEvents"].append({**nccl, "ts": nccl["ts"] + 1})  # a clash on the same stream
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps(trace))
    result = analyse(path)
    (problem,) = tables(result).problems
    (note,) = tables(result).notes  # no steps is how the trace is, not a part left unread
    assert str(path) in problem and "overlap" in problem
    assert str(path) in note and "no ProfilerStep" in note
    (row,) = [r for r in tables(result).device if r.stage is None]
    assert row.step is None and row.compute_ms > 0  # the rest is still analysed
    assert main(["analyse", str(path)]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"mindspeed-prof: skipped {result.shown(problem)}",
        f"mindspeed-prof: note: {result.shown(note)}",
    ]
    assert all(
        line.startswith("mindspeed-prof: skipped rank0.pt.trace.json: ")
        or line.startswith("mindspeed-prof: note: rank0.pt.trace.json: ")
        for line in err
    )


def test_a_collective_clash_found_after_other_kernels_on_its_stream() -> None:
    from mindspeed_prof.analysis.readers.device.ops import DeviceOps

    ops = DeviceOps()
    ops.add((0, 7), 0.0, 5.0, "ampere_sgemm", 0.0)
    ops.add((0, 7), 6.0, 9.0, "ncclDevKernel_AllReduce", 6.0)
    ops.add((0, 7), 8.0, 12.0, "ncclDevKernel_AllGather", 8.0)  # starts before the last one ends
    ops.add((0, 8), 0.0, 1.0, "ncclDevKernel_AllReduce", 0.0)  # another stream: no clash
    ops.add((0, 7), 12.0, 13.0, "ncclDevKernel_Broadcast", 12.0)  # starts as the last one ends
    assert ops.comm_clashes() == ["ncclDevKernel_AllGather"]
    ops.close()


def test_launch_at_a_steps_end_and_a_sub_microsecond_step() -> None:
    from mindspeed_prof.analysis.readers.device.breakdown import breakdown
    from mindspeed_prof.analysis.readers.device.ops import DeviceOps

    ops = DeviceOps()
    ops.add((0, 1), 0.25, 0.5, "ampere_sgemm", 10.0)  # launched as step 1's host range ends
    ops.add((0, 1), 0.5, 0.75, "ampere_sgemm", 10.5)  # after it: outside every step
    rows = breakdown(ops, [(1, 0.0, 10.0)], [])
    ops.close()
    assert [(r.step, r.span_ms, r.compute_ms) for r in rows] == [
        (1, 0.00025, 0.00025),
        (None, 0.00025, 0.00025),
    ]


def test_kernel_kinds_follow_hta_names() -> None:
    assert classifier().kind_of("ncclDevKernel_AllGather_RING_LL") == "comm"
    assert classifier().kind_of("Memcpy DtoD (Device -> Device)") == "memcpy"
    assert classifier().kind_of("Memset (Device)") == "memcpy"
    assert classifier().kind_of("ampere_sgemm_128x64_tn") == "compute"
    assert classifier().kind_of("cudaStreamSync") == "other"


spans = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 20)).map(
        lambda p: (float(p[0]), float(p[0] + p[1]))
    ),
    max_size=12,
)


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
    assert tables(result).ranks == [3] and tables(result).stage_rank == []
    ranges = {r.name: r for r in tables(result).range_table}
    assert set(ranges) == set(names)
    assert all(r.count == 3 and r.stage is None for r in ranges.values())
    rows = tables(result).device
    assert [r.step for r in rows] == [1, 2, 3] and all(r.stage is None for r in rows)
    assert (
        tables(result).top_ops[:15]
        and tables(result).top_kernels[:15]
        and not tables(result).problems
    )


def test_text_fits_80_columns_and_report_has_the_sections(cuda_dir: Path, tmp_path: Path) -> None:
    from rich.console import Console

    from mindspeed_prof.views.html import write_report
    from mindspeed_prof.views.text import print_analysis

    result = analyse(cuda_dir)
    with open(tmp_path / "out.txt", "w") as out:
        console = Console(width=80, record=True, file=out)
        print_analysis(report(result), console)
    text = console.export_text()
    assert "Device time per step" in text and "Top 10 device kernels" in text
    lines = [line for line in text.splitlines() if str(cuda_dir) not in line]  # paths unbroken
    assert max(len(line) for line in lines) <= 80
    html = write_report(report(result), tmp_path / "r.html").read_text()
    for section in (
        "id='device'",
        "Device time (ms)",
        "Top device kernels",
        "Top runtime",
        "Top host ops",
        "Custom ranges",
    ):
        assert section in html
    assert "<script" not in html and "<link" not in html and 'src="http' not in html


def test_torch_npu_rows_without_copies_print_chart_and_compare(tmp_path: Path, capsys) -> None:
    from capture_fixtures import npu_text

    npu_text(tmp_path / "a", rank=0)
    npu_text(tmp_path / "b", rank=0)
    (row,) = tables(analyse(tmp_path / "a")).device
    assert row.memcpy_ms is None and row.compute_ms == 8.0  # from step_trace_time.csv
    assert main(["analyse", str(tmp_path / "a"), "--html", str(tmp_path / "r.html")]) == 0
    assert "Device time per step" in capsys.readouterr().out
    assert "id='device'" in (tmp_path / "r.html").read_text()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    (dev,) = json.loads(capsys.readouterr().out)["device"]
    assert dev["a_compute_ms"] == dev["b_compute_ms"] == 8.0 and dev["a_memcpy_ms"] is None


def _reference(
    ops: list[tuple[float, float, str, float]],
    steps: list[tuple[int, float, float]],
    stages: list[tuple[str, int | None, float, float]],
) -> list[dict]:
    """The breakdown by whole lists (merge, overlap, total), as it was before streaming."""

    def row(mine: list, lo: float, hi: float) -> dict:
        sets = {
            k: merge([(t, e) for t, e, n, _ in mine if classifier().kind_of(n) == k])
            for k in ("compute", "comm", "memcpy")
        }
        busy = total(merge([(t, e) for t, e, _, _ in mine]), lo, hi)
        return {
            "span_ms": (hi - lo) / 1e3,
            "busy_ms": busy / 1e3,
            "compute_ms": total(sets["compute"], lo, hi) / 1e3,
            "comm_ms": total(sets["comm"], lo, hi) / 1e3,
            "overlap_ms": total(overlap(sets["comm"], sets["compute"]), lo, hi) / 1e3,
            "memcpy_ms": total(sets["memcpy"], lo, hi) / 1e3,
            "idle_ms": (hi - lo - busy) / 1e3,
        }

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
        rows.append(
            {
                "step": None,
                "stage": None,
                **row(out, min(o[0] for o in out), max(o[1] for o in out)),
            }
        )
    for name, step, ts, dur in stages:
        mine = [o for o in ops if ts <= o[3] <= ts + dur]
        if mine:
            rows.append(
                {
                    "step": step,
                    "stage": name,
                    **row(mine, min(o[0] for o in mine), max(o[1] for o in mine)),
                }
            )
    return rows


_NAMES = ["ampere_sgemm", "ncclDevKernel_AllReduce_Sum", "Memcpy HtoD", "cudaStreamSync"]
_ops = st.lists(
    st.tuples(
        st.integers(0, 400),
        st.integers(0, 40),
        st.sampled_from(_NAMES),
        st.integers(-20, 20),
        st.integers(0, 3),
    ),
    max_size=60,
)
_windows = st.lists(st.tuples(st.integers(0, 400), st.integers(0, 150)), max_size=5)


@settings(max_examples=200, deadline=None)
@given(_ops, _windows, _windows, st.integers(1, 8))
def test_sweep_breakdown_equals_whole_list_breakdown(
    raw: list, step_spans: list, stage_spans: list, block: int
) -> None:
    """Any order on any stream, any slice/spill block size: the rows of the list algorithm."""
    import mindspeed_prof.analysis.readers.device.breakdown as device
    import mindspeed_prof.analysis.readers.device.ops as device_ops

    # a quarter-microsecond grid: pieces shorter than 1 us, still exact in binary floats
    ops = [(t / 4, (t + d) / 4, name, (t + lag) / 4) for t, d, name, lag, _ in raw]
    steps = [(i + 1, float(s), float(s + d)) for i, (s, d) in enumerate(step_spans)]
    stages: list[tuple[str, int | None, float, float]] = [
        (STAGES[i % len(STAGES)], i, float(s), float(d)) for i, (s, d) in enumerate(stage_spans)
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(device_ops, "SLICE", block)
        store = device_ops.DeviceOps()
        for (ts, end, name, launch), (*_, stream) in zip(ops, raw):
            where = store.add(stream, ts, end, name, ts)
            store.set_launch(where, launch)  # late, maybe into a spilled block
        got = device.breakdown(store, steps, stages)
        store.close()
    want = _reference(ops, steps, stages)
    assert [(r.step, r.stage) for r in got] == [(r["step"], r["stage"]) for r in want]
    for g, w in zip(got, want):
        fields = msgspec.structs.asdict(g)
        assert {k: fields.pop(k) for k in w} == w  # the same floats: sums in the same order
        assert fields == _UNSET  # a CUDA trace's rows give none of torch_npu's columns


def test_streams_spilled_in_blocks_give_the_same_rows(cuda_dir: Path, monkeypatch) -> None:
    import mindspeed_prof.analysis.readers.device.ops as device_ops

    whole = tables(analyse(cuda_dir, cache=False)).device
    monkeypatch.setattr(device_ops, "SLICE", 7)
    assert tables(analyse(cuda_dir, cache=False)).device == whole


# Hand-made traces, one per way HTA's temporal breakdown and ours can part: the figures are
# checked by hand (in the docstrings) and HTA 0.5.0's own figure is asserted beside ours.

_T0 = 1_000_000_000  # us: HTA downcasts small integer columns (an int8 ts + dur overflows)


def _x(
    name: str, ts: float, dur: float, cat: str, tid: int = 1, pid: int = 1, **args: object
) -> dict:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "ts": _T0 + ts,
        "dur": dur,
        "pid": pid,
        "tid": tid,
        "args": args,
    }


def _launch(corr: int, ts: float, name: str = "cudaLaunchKernel") -> dict:
    return _x(name, ts, 1, "cuda_runtime", correlation=corr)


def _op(
    corr: int, ts: float, dur: float, name: str = "gemm", stream: int = 7, cat: str = "kernel"
) -> dict:
    return _x(name, ts, dur, cat, tid=stream, pid=0, correlation=corr, stream=stream, device=0)


_TWO_STEPS = [
    _x("ProfilerStep#1", 0, 100, "user_annotation"),
    _x("ProfilerStep#2", 100, 100, "user_annotation"),
]


def _hand_trace(tmp_path: Path, events: list[dict]) -> Path:
    root = tmp_path / "trace"
    write_trace(root / "rank-0.json", events, distributedInfo={"rank": 0})
    return root


def _ours(root: Path) -> dict[str | None, dict[str, float]]:
    """Microseconds summed over the whole-step rows ('steps') and the row without a step."""
    out: dict[str | None, dict[str, float]] = {}
    for r in tables(analyse(root, cache=False)).device:
        if r.stage is None:
            assert r.busy_ms is not None and r.span_ms is not None
            s = out.setdefault(
                "steps" if r.step is not None else None,
                dict.fromkeys(("compute", "noncompute", "idle", "span"), 0.0),
            )
            s["compute"] += 1000 * r.compute_ms
            s["noncompute"] += 1000 * (r.busy_ms - r.compute_ms)
            s["idle"] += 1000 * r.idle_ms
            s["span"] += 1000 * r.span_ms
    return out


def _hta(root: Path, label: str = "", sets: tuple[str, ...] = ()) -> dict[int, dict[str, float]]:
    """HTA's temporal breakdown per rank, every step included; kept in tests/fixtures/reference
    (``reference_store``)."""
    got = _STORE.figures(
        _hta_live,
        root,
        label or _test_name(),
        sets,
        f"HTA_DISABLE_NS_ROUNDING={os.environ.get('HTA_DISABLE_NS_ROUNDING')}",
    )
    if "error" in got:
        raise RuntimeError(got["error"])
    return {rank: figures for rank, figures in got["ranks"]}


def _test_name() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0].rsplit("::", 1)[-1]


def _hta_live(root: Path) -> dict[str, Any]:
    """HTA's temporal breakdown of ``root`` as JSON, or the error it raised."""
    from hta.trace_analysis import TraceAnalysis

    logging.disable(logging.WARNING)
    try:
        df = TraceAnalysis(
            trace_dir=str(root), include_last_profiler_step=True
        ).get_temporal_breakdown(visualize=False)
    except Exception as err:  # noqa: BLE001 - HTA cannot load every trace: kept as the figure
        return {"error": type(err).__name__}
    finally:
        logging.disable(logging.NOTSET)
    return {
        "ranks": [
            [
                int(r["rank"]),
                {
                    "compute": float(r["compute_time(us)"]),
                    "noncompute": float(r["non_compute_time(us)"]),
                    "idle": float(r["idle_time(us)"]),
                    "span": float(r["kernel_time(us)"]),
                },
            ]
            for _, r in df.iterrows()
        ]
    }


def _us(compute: float, noncompute: float, idle: float, span: float) -> dict[str, float]:
    return {"compute": compute, "noncompute": noncompute, "idle": idle, "span": span}


@pytest.mark.reference
def test_ops_launched_before_the_capture_are_no_steps_and_hta_agrees(tmp_path: Path) -> None:
    """An op whose correlation id no launch in the trace carries was launched before the capture
    began: the tail of the step before it, still running (HTA's trace_diff/test.json runs 614
    such ops for the first 39 ms of its first step, negative_queue_length's 872 for 155 ms).
    No traced step launched it, so it is no step's: the row without a step holds it. It used to
    count from its own start, in the step it ran in: compute 4.5% of the span over HTA's.

    Steps [0, 100) and [100, 200); own ops [20, 30], [60, 70], [120, 130]; the op of
    correlation 5 (no launch) runs [32, 50] on another stream. Steps: span 20..130 = 110,
    compute 30, idle 80. Row without a step: the 18 us op."""
    events = [
        *_TWO_STEPS,
        _launch(11, 10),
        _op(11, 20, 10),
        _launch(12, 15),
        _op(12, 60, 10),
        _op(5, 32, 18, stream=8),
        _launch(21, 110),
        _op(21, 120, 10),
    ]
    root = _hand_trace(tmp_path, events)
    ours = _ours(root)
    assert ours["steps"] == pytest.approx(_us(30, 0, 80, 110))
    assert ours[None] == pytest.approx(_us(18, 0, 0, 18))
    assert _hta(root)[0] == pytest.approx(ours["steps"])
    # a trace that records no launches at all: every op counts from its own start
    bare = [e for e in events if e["cat"] != "cuda_runtime"]
    assert _ours(_hand_trace(tmp_path / "bare", bare))["steps"] == pytest.approx(
        _us(48, 0, 62, 110)
    )


@pytest.mark.reference
def test_ops_launched_in_one_step_and_run_in_the_next_agree_with_hta(tmp_path: Path) -> None:
    """Step 1 launches [20, 30] and, at 90, [105, 135]; step 2 launches [140, 150] and an NCCL
    kernel [125, 135] on another stream. Step 1's window runs to step 2's first op (125): busy
    30, idle 75; step 2's [125, 150]: compute 20 (the tail of step 1's op and its own), comm 10
    overlapping it, idle 5. Summed: compute 50, idle 80, span 130, as HTA has it."""
    events = [
        *_TWO_STEPS,
        _launch(11, 10),
        _op(11, 20, 10),
        _launch(12, 90),
        _op(12, 105, 30),
        _launch(21, 110),
        _op(21, 140, 10),
        _launch(22, 115),
        _op(22, 125, 10, name="ncclDevKernel_AllReduce", stream=13),
    ]
    root = _hand_trace(tmp_path, events)
    rows = [r for r in tables(analyse(root, cache=False)).device if r.stage is None]
    assert [r.step for r in rows] == [1, 2]
    for row, want in zip(rows, ((105, 30, 0, 0, 75), (25, 20, 10, 10, 5))):
        got = [
            1e3 * getattr(row, k)
            for k in ("span_ms", "compute_ms", "comm_ms", "overlap_ms", "idle_ms")
        ]
        assert got == pytest.approx(want)
    assert _hta(root)[0] == pytest.approx(_ours(root)["steps"]) == _us(50, 0, 80, 130)


@pytest.mark.reference
def test_hta_is_wrong_on_fractional_microseconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTA is wrong: where times have fractions (Kineto's ns-resolution traces) it moves each
    event's start up and its end down to whole microseconds (a workaround for torch's
    overlapping events), so short kernels shrink, the 0.5 us one [20.3, 20.8] to [21, 20]:
    minus 1 us. Ops [20.3, 20.8], [30.5, 40.25], [120.5, 121.25]: compute 0.5 + 9.75 + 0.75 =
    11, span 121.25 - 20.3 = 100.95, idle 89.95; HTA: compute -1 + 9 + 0 = 8, span 100, idle
    92. On its ns_resolution_trace that is 0.7% of the span in compute, 0.95% in idle. With
    its rounding off (HTA_DISABLE_NS_ROUNDING=1) it agrees."""
    events = [
        *_TWO_STEPS,
        _launch(11, 10.5),
        _op(11, 20.3, 0.5),
        _launch(12, 11.5),
        _op(12, 30.5, 9.75),
        _launch(21, 110.5),
        _op(21, 120.5, 0.75),
    ]
    root = _hand_trace(tmp_path, events)
    assert _ours(root)["steps"] == pytest.approx(_us(11, 0, 89.95, 100.95))
    assert _hta(root)[0] == pytest.approx(_us(8, 0, 92, 100))
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    assert _hta(root)[0] == pytest.approx(_us(11, 0, 89.95, 100.95))


def test_device_times_at_epoch_microseconds_keep_their_fractions(tmp_path: Path) -> None:
    """Kineto writes epoch microseconds (1.7e15): a double there holds 0.25 us steps, so an end
    summed as ts + dur rounds (20.3 to 20.25). Ops are kept relative to the first one, where
    ts + dur is exact: ten 0.3 us kernels are 3 us, not 2.5 (the ns_resolution trace's compute
    came out 20 us, 0.004%, over HTA's; now they agree to the digit)."""
    t = 1_712_195_495_519_689.0  # a whole microsecond: exact in a double
    events = [span("ProfilerStep#1", t, 100.0)]
    for k in range(10):
        events += [
            span("cudaLaunchKernel", t + k, 0.5, cat="cuda_runtime", correlation=k),
            {
                **span("gemm", t + 20 + k, 0.3, cat="kernel", tid=7, correlation=k, stream=7),
                "pid": 0,
            },
        ]
    (row,) = tables(
        analyse(write_trace(tmp_path / "rank0.pt.trace.json", events), cache=False)
    ).device
    assert row.compute_ms * 1e3 == pytest.approx(3.0, abs=1e-9)
    assert row.span_ms is not None and row.span_ms * 1e3 == pytest.approx(9.3, abs=1e-9)


@pytest.mark.reference
def test_hta_is_wrong_to_count_cuda_sync_events_as_device_time(tmp_path: Path) -> None:
    """HTA is wrong: it takes every event with a stream and a correlation id for device work,
    and so counts CUDA sync records, the host's waits: a Stream Sync [36, 50] as 14 us of
    non-compute, a Stream Wait Event [60, 62] as 2 us of compute (its name has no 'Sync'), a
    Context Sync [180, 190] on stream 4294967295 (-1 written unsigned) as 10 us that stretch
    its span. The device runs [20, 30] and [120, 130] only: compute 20, idle 90, span 110.
    HTA: compute 22, non-compute 24, idle 124, span 170 (HTA's critical_path traces: 2.7% of
    the span in idle)."""
    events = [
        *_TWO_STEPS,
        _launch(11, 10),
        _op(11, 20, 10),
        _launch(12, 35, "cudaStreamSynchronize"),
        _launch(13, 59, "cudaStreamWaitEvent"),
        _op(12, 36, 14, name="Stream Sync", cat="cuda_sync"),
        _op(13, 60, 2, name="Stream Wait Event", cat="cuda_sync"),
        _launch(21, 110),
        _op(21, 120, 10),
        _launch(22, 179, "cudaDeviceSynchronize"),
        _op(22, 180, 10, name="Context Sync", stream=4294967295, cat="cuda_sync"),
    ]
    root = _hand_trace(tmp_path, events)
    assert _ours(root) == {"steps": pytest.approx(_us(20, 0, 90, 110))}
    assert _hta(root)[0] == pytest.approx(_us(22, 24, 124, 170))


@pytest.mark.reference
def test_hta_is_wrong_to_count_host_ops_that_carry_a_stream(tmp_path: Path) -> None:
    """HTA is wrong: a host op with a ``stream`` argument (Triton's launcher op, as in HTA's
    triton_example) counts as device work. The host op [10, 60] launches a kernel [60, 62];
    step 2's runs [120, 130]: compute 12, idle 58, span 70. HTA: compute 62, span 120."""
    events = [
        *_TWO_STEPS,
        _x("triton_poi_fused_add_0", 10, 50, "cpu_op", stream=0),
        _launch(11, 55, "cuLaunchKernel"),
        _op(11, 60, 2, name="triton_poi_fused_add_0"),
        _launch(21, 110),
        _op(21, 120, 10),
    ]
    root = _hand_trace(tmp_path, events)
    assert _ours(root) == {"steps": pytest.approx(_us(12, 0, 58, 70))}
    assert _hta(root)[0] == pytest.approx(_us(62, 0, 58, 120))


@pytest.mark.reference
def test_hta_is_wrong_to_end_the_last_step_where_its_device_annotation_ends(tmp_path: Path) -> None:
    """HTA is wrong: it ends the traced steps at the latest end of any 'ProfilerStep' event,
    Kineto's device-side copy (``gpu_user_annotation``, [120, 260]) included, so a launch at 230,
    after the last step ended on the host at 200, counts. Steps: [20, 30] and [120, 130]:
    compute 20, idle 90, span 110; the op launched at 230 ([240, 250]) is the row without a
    step. HTA: compute 30, idle 200, span 230."""
    events = [
        *_TWO_STEPS,
        _launch(11, 10),
        _op(11, 20, 10),
        _launch(21, 110),
        _op(21, 120, 10),
        _x("ProfilerStep#2", 120, 140, "gpu_user_annotation", tid=7, pid=0),
        _launch(31, 230),
        _op(31, 240, 10),
    ]
    root = _hand_trace(tmp_path, events)
    ours = _ours(root)
    assert ours["steps"] == pytest.approx(_us(20, 0, 90, 110))
    assert ours[None] == pytest.approx(_us(10, 0, 0, 10))
    assert _hta(root)[0] == pytest.approx(_us(30, 0, 200, 230))


@pytest.mark.reference
def test_ops_launched_outside_every_step_are_the_row_without_a_step(tmp_path: Path) -> None:
    """Not an error on either side, a different scope: HTA counts every op launched before the
    last step ends, from before the first step too; here a step's row counts the ops its host
    range launched and the rest form the row without a step. An op launched at -10 runs
    [5, 15]; the steps' run [20, 30] and [120, 130]: steps compute 20, idle 90, span 110, the
    row without a step 10. HTA: compute 30, idle 95, span 125 (no trace of HTA's has such ops)."""
    events = [
        *_TWO_STEPS,
        _launch(3, -10),
        _op(3, 5, 10),
        _launch(11, 10),
        _op(11, 20, 10),
        _launch(21, 110),
        _op(21, 120, 10),
    ]
    root = _hand_trace(tmp_path, events)
    ours = _ours(root)
    assert ours["steps"] == pytest.approx(_us(20, 0, 90, 110))
    assert ours[None] == pytest.approx(_us(10, 0, 0, 10))
    assert _hta(root)[0] == pytest.approx(_us(30, 0, 95, 125))


@pytest.mark.reference
def test_kinetos_first_format_categories_are_device_ops_as_hta_has_them(tmp_path: Path) -> None:
    """PyTorch 1.8's Kineto wrote 'Kernel', 'Memcpy', 'Memset' and 'Runtime' (HTA's
    trace_file_list trace): they used to give no device rows at all. A kernel [20, 30], a copy
    [120, 130]: compute 10, non-compute 10, idle 90, span 110, as HTA has it."""
    events = [
        _x("ProfilerStep#1", 0, 100, "Operator"),
        _x("ProfilerStep#2", 100, 100, "Operator"),
        _x("cudaLaunchKernel", 10, 1, "Runtime", correlation=11),
        _x("gemm", 20, 10, "Kernel", tid=7, pid=0, correlation=11, stream=7),
        _x("cudaMemcpyAsync", 110, 1, "Runtime", correlation=21),
        _x(
            "Memcpy HtoD (Pinned -> Device)",
            120,
            10,
            "Memcpy",
            tid=7,
            pid=0,
            correlation=21,
            stream=7,
        ),
    ]
    root = _hand_trace(tmp_path, events)
    assert _ours(root) == {"steps": pytest.approx(_us(10, 10, 90, 110))}
    assert _hta(root)[0] == _ours(root)["steps"]


@pytest.fixture(scope="module")
def hta_corpus() -> Path:
    """Real traces (HTA's own test data among them), a set per folder."""
    root = Path(__file__).resolve().parents[3] / "fixtures" / "corpus"
    if not root.is_dir():
        pytest.skip("no trace corpus in tests/fixtures/corpus")
    return root


def _kineto_sets(root: Path) -> list[list[Path]]:
    """The Chrome traces under ``root``, a set of ranks per folder; a folder whose files are not
    one rank each (two captures of one worker, ranks unnamed) gives a set per file. Sets marked
    pending in sets.json are left out."""
    held = pending()
    folders: dict[Path, list[Path]] = {}
    for p in sorted(root.rglob("*")):
        if (
            p.is_file()
            and p.name.endswith((".json", ".json.gz"))
            and (p.relative_to(root).parts[0] not in held)
        ):
            folders.setdefault(p.parent, []).append(p)
    out = []
    for files in folders.values():
        ranks = [rank_of(f, None, _distributed_info(f)) for f in files] if len(files) > 1 else [0]
        distinct = None not in ranks and len(set(ranks)) == len(ranks)
        out += [files] if distinct else [[f] for f in files]
    return out


def _distributed_info(path: Path) -> dict | None:
    import gzip

    raw = path.read_bytes()
    trace = json.loads(gzip.decompress(raw) if path.name.endswith(".gz") else raw)
    return trace.get("distributedInfo") if isinstance(trace, dict) else None


def _for_hta(files: list[Path], dst: Path) -> int:
    """A copy of the set's traces without what HTA is shown above to miscount: CUDA sync
    records, device-side step annotations, ``stream`` on host events. Returns how many
    ProfilerStep names they hold (HTA keeps only the steps' ops where there are two or more)."""
    import gzip
    import re

    dst.mkdir(parents=True)
    steps: set[str] = set()
    for f in files:
        gz = f.name.endswith(".gz")
        trace = json.loads(gzip.decompress(f.read_bytes()) if gz else f.read_bytes())
        if not isinstance(trace, dict):
            continue
        kept = []
        for e in trace.get("traceEvents", []):
            if e.get("cat") in ("cuda_sync", "gpu_user_annotation"):
                continue
            if e.get("ph") == "X" and re.match(r"ProfilerStep#\d+$", str(e.get("name"))):
                steps.add(e["name"])
            args = e.get("args")
            if e.get("cat") not in DEVICE_CATS and isinstance(args, dict) and "stream" in args:
                e = {**e, "args": {k: v for k, v in args.items() if k != "stream"}}
            kept.append(e)
        text = json.dumps({**trace, "traceEvents": kept})  # uncompressed: quicker, either side
        (dst / f.name.removesuffix(".gz")).write_text(text)
    return len(steps)


def _hta_of_set(files: list[Path]) -> dict[str, Any]:
    """HTA's temporal breakdown of a set's copy for HTA (``_for_hta``), or why there is none."""
    with tempfile.TemporaryDirectory() as work:
        if _for_hta(files, Path(work) / "hta") < 2:
            return {"few_steps": True}
        return _hta_live(Path(work) / "hta")


@pytest.mark.reference
def test_agrees_with_hta_on_real_traces(
    hta_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every set HTA can load with two steps or more (it keeps only the steps' ops then): per
    rank, compute, idle and span summed over our whole-step rows within 1% of the rank's kernel
    span of HTA's temporal breakdown, every step included. HTA reads the traces with its
    rounding of fractional microseconds off and without the events it miscounts (the tests
    above)."""
    import shutil

    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    compared, skipped = [], []
    for k, files in enumerate(_kineto_sets(hta_corpus)):
        name = "/".join(
            files[0].relative_to(hta_corpus).parts[:-1]
            + ((files[0].name,) if len(files) == 1 else ())
        )
        got = _STORE.figures(
            _hta_of_set,
            files,
            name,
            set_of(files[0]),
            "HTA_DISABLE_NS_ROUNDING=1",
            (_for_hta, _hta_live),
        )
        if "few_steps" in got:
            skipped.append(f"{name}: fewer than two steps")
            continue
        if "error" in got:  # HTA cannot load every trace
            skipped.append(f"{name}: HTA cannot load it ({got['error']})")
            continue
        ref = {rank: figures for rank, figures in got["ranks"]}
        mine = tmp_path / f"ours{k}"
        mine.mkdir()
        for f in files:
            shutil.copy(f, mine / f.name)
        rows = [
            r
            for r in tables(analyse(mine, cache=False)).device
            if r.stage is None and r.step is not None
        ]
        ours: dict = {}
        for r in rows:
            s = ours.setdefault(r.rank, dict.fromkeys(("compute", "idle", "span"), 0.0))
            for key in s:
                s[key] += 1000 * getattr(r, f"{key}_ms")
        if len(ref) == len(ours) == 1:  # one rank each: ours may be unnamed (None)
            ref = {next(iter(ours)): next(iter(ref.values()))}
        assert set(ref) == set(ours), name
        for rank, want in ref.items():
            for key in ("compute", "idle", "span"):
                assert abs(ours[rank][key] - want[key]) <= 0.01 * want["span"], (
                    name,
                    rank,
                    key,
                    ours[rank][key],
                    want[key],
                )
        compared.append(name)
    if not compared:
        pytest.skip(f"no set HTA could compare: {'; '.join(skipped)[:200]}")
