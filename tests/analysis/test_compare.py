"""``compare A B``: the CI gate at its edge, warnings when runs differ, warmup left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.compare import (
    Side,
    captured,
    compare_runs,
    few_steps,
    side_of,
    slower_than,
)
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.model import DeviceRow, Memory
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.rows import DeviceMeans, Peaks, SideBySide
from mindspeed_prof.cli import main
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.testing.kineto import span, write_cuda_trace, write_trace


def _run(
    root: Path,
    update_us: float = 10_000.0,
    range_us: float = 2000.0,
    first: float = 1.0,
    ranks: tuple[int, ...] = (0,),
    steps: tuple[int, ...] = (1, 2, 3, 4),
    slow_steps: int = 1,
    **meta,
) -> Path:
    """Steps with actor_update (``first`` x longer in the first ``slow_steps`` steps) holding a
    range ``fwd``."""
    for rank in ranks:
        events = []
        for step in steps:
            t, k = step * 1_000_000, first if step in steps[:slow_steps] else 1.0
            events += [
                span(f"ProfilerStep#{step}", t, 900_000),
                span("actor_update", t + 10, update_us * k),
                span("fwd", t + 20, range_us * k),
            ]
        write_trace(
            root / f"rank{rank}_h_1_step1.pt.trace.json",
            events,
            mindspeed_prof={"rank": rank, "level": "level1", **meta},
        )
    return root


@pytest.mark.parametrize(
    ("b_us", "code"), [(110_000.0 * (1 - 1e-6), 0), (110_000.0 * (1 + 1e-6), 4)]
)
def test_fail_over_at_its_edge(tmp_path: Path, b_us: float, code: int, capsys) -> None:
    a = _run(tmp_path / "a", update_us=100_000.0)
    b = _run(tmp_path / "b", update_us=b_us)
    assert main(["compare", str(a), str(b), "--fail-over", "0.1"]) == code
    err = capsys.readouterr().err
    assert ("slower: stage 'actor_update' rank 0" in err) == (code == 4)
    assert main(["compare", str(a), str(b)]) == 0  # no gate without --fail-over


def test_fail_over_on_a_range(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a", range_us=200_000.0)
    b = _run(tmp_path / "b", range_us=200_000.0 * 1.051)
    assert main(["compare", str(a), str(b), "--fail-over", "0.05"]) == 4
    assert "range 'fwd' rank 0" in capsys.readouterr().err
    assert main(["compare", str(a), str(b), "--fail-over", "0.06"]) == 0


@pytest.mark.parametrize("noise", [None, "0.5"])
def test_fail_over_holds_on_noise_and_fails_on_a_regression_over_the_floor(
    tmp_path: Path, noise: str | None, capsys
) -> None:
    # the case: 0.092 -> 0.097 ms is +5.4%, and 5 us of a 900 ms step is noise
    a = _run(tmp_path / "a", range_us=92.0)
    b = _run(tmp_path / "b", range_us=97.0)
    flag = ["--noise-ms", noise] if noise else []
    assert main(["compare", str(a), str(b), "--fail-over", "0.05", *flag]) == 0
    # 9 ms is the floor here (1% of the step): 10 ms more fails, 8 ms more does not
    c = _run(tmp_path / "c", range_us=102.0 + 10_000.0)
    d = _run(tmp_path / "d", range_us=92.0 + 8_000.0)
    assert main(["compare", str(a), str(c), "--fail-over", "0.05", *flag]) == 4
    assert main(["compare", str(a), str(d), "--fail-over", "0.05", *flag]) == 0
    err = capsys.readouterr().err
    assert err.count("slower: range 'fwd' rank 0") == 1
    assert "+40.0 ms over 4 runs" in err  # impact: 10 ms more in each of 4 steps


def test_noise_flag_raises_the_floor(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", range_us=100_000.0)
    b = _run(tmp_path / "b", range_us=120_000.0)  # +20 ms, +20%
    assert main(["compare", str(a), str(b), "--fail-over", "0.1"]) == 4
    assert main(["compare", str(a), str(b), "--fail-over", "0.1", "--noise-ms", "25"]) == 0


def test_warns_once_per_difference(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a", ranks=(0, 1))
    b = _run(tmp_path / "b", ranks=(0,), steps=(1, 2), level="level0")
    assert main(["compare", str(a), str(b)]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if "warning" in x]
    assert [x.split("runs differ in ")[1].split(":")[0] for x in lines] == [
        "steps",
        "level",
        "ranks",
    ]


def test_warmup_left_out_unless_asked(tmp_path: Path) -> None:
    meta: dict[str, Any] = {"window": [7, 10], "warmup_steps": 6}
    steps = tuple(range(1, 10))
    a = _run(tmp_path / "a", steps=steps, **meta)
    b = _run(tmp_path / "b", first=5.0, slow_steps=6, steps=steps, **meta)  # the warmup steps
    assert main(["compare", str(a), str(b), "--fail-over", "0.01"]) == 0
    assert main(["compare", str(a), str(b), "--fail-over", "0.01", "--include-warmup"]) == 4


def test_json_has_stages_ranges_device_memory(tmp_path: Path, capsys) -> None:
    a = write_cuda_trace(tmp_path / "a" / "rank0.pt.trace.json", seed=1).parent
    b = write_cuda_trace(tmp_path / "b" / "rank0.pt.trace.json", seed=2).parent
    assert main(["compare", str(a), str(b), "--json", "--fail-over", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"rows", "ranges", "device", "memory", "warnings", "slower"} <= set(out)
    (dev,) = out["device"]
    assert dev["rank"] == 0 and dev["a_compute_ms"] > 0 and dev["b_comm_ms"] > 0
    assert {r["stage"] for r in out["rows"]} and out["slower"] == []
    assert main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "Device ms per step" in text and "->" in text


def _traces(
    root: Path,
    rank: int | None,
    stages: dict[str, list[float]] | None = None,
    ranges: dict[str, list[float]] | None = None,
    **fields: Any,
) -> TraceData:
    """One capture of ``rank``: each stage's and range's runs (ms), one per step from 1."""
    t = TraceData(root / f"rank{rank}.mstx.trace.json", "spans", rank, "integrated", 1, **fields)
    for kind, runs in (("stage", stages or {}), ("range", ranges or {})):
        for name, ms in runs.items():
            t.ranges += [
                Range(rank, kind, name, step, step * 1e6, m * 1000.0)
                for step, m in enumerate(ms, 1)
            ]
    return t


def _analysis(root: Path, *traces: TraceData, include_warmup: bool = False) -> Side:
    root.mkdir(parents=True, exist_ok=True)
    return side_of(
        Captures(root=root, traces=list(traces)), Settings(include_warmup=include_warmup)
    )


def test_rows_sorted_by_name_then_rank_unknown_rank_last(tmp_path: Path) -> None:
    ranks = (10, 2, None, 0, 1)
    a = _analysis(
        tmp_path / "a",
        *[_traces(tmp_path, r, {"actor_update": [8.0]}, {"fwd": [2.0]}) for r in ranks],
    )
    found = compare_runs(a, a)
    assert [(r.kind, r.name, r.rank) for r in found.rows] == [
        ("stage", "actor_update", k) for k in (0, 1, 2, 10, None)
    ]
    assert [(r.kind, r.name, r.rank) for r in found.ranges] == [
        ("range", "fwd", k) for k in (0, 1, 2, 10, None)
    ]


@pytest.mark.parametrize("include_warmup", [False, True])
def test_warmup_steps_in_stage_and_range_means_only_when_asked(
    tmp_path: Path, include_warmup: bool
) -> None:
    meta = CaptureHeader(window=[2, 3], warmup_steps=1)
    a = _analysis(
        tmp_path / "a",
        _traces(
            tmp_path, 0, {"actor_update": [40.0, 10.0, 10.0]}, {"fwd": [4.0, 1.0, 1.0]}, meta=meta
        ),
        include_warmup=include_warmup,
    )
    found = compare_runs(a, a)
    (stage,), (rng,) = found.rows, found.ranges
    assert stage.a_mean_ms == (20.0 if include_warmup else 10.0)
    assert rng.a_mean_ms == (2.0 if include_warmup else 1.0)


def test_threshold_reaches_stage_and_range_rows(tmp_path: Path) -> None:
    a = _analysis(
        tmp_path / "a", _traces(tmp_path, 0, {"actor_update": [100.0] * 6}, {"fwd": [100.0] * 6})
    )
    b = _analysis(
        tmp_path / "b", _traces(tmp_path, 0, {"actor_update": [105.0] * 6}, {"fwd": [105.0] * 6})
    )
    assert [r.regression for r in compare_runs(a, b).rows] == [False]  # +5%, under 10%
    found = compare_runs(a, b, threshold=0.04)
    assert [r.regression for r in found.rows + found.ranges] == [True, True]


def test_one_step_a_side_calls_nothing_slower_and_says_so(tmp_path: Path) -> None:
    a = _analysis(tmp_path / "a", _traces(tmp_path, 0, {"actor_update": [100.0]}))
    b = _analysis(tmp_path / "b", _traces(tmp_path, 0, {"actor_update": [150.0]}))
    found = compare_runs(a, b, threshold=0.04)
    assert [r.regression for r in found.rows] == [False] and slower_than(found, 0.04) == []
    assert (few_steps(found, 0.04) or "").startswith("A holds 1 step, B 1: too few for the gate")


def _device(
    step: int | None, compute: float, stage: str | None = None, memcpy: float | None = 0.5
) -> DeviceRow:
    return DeviceRow(
        step=step,
        stage=stage,
        compute_ms=compute,
        comm_ms=compute / 10,
        overlap_ms=compute / 20,
        memcpy_ms=memcpy,
        idle_ms=1.0,
    )


@pytest.mark.parametrize("include_warmup", [False, True])
def test_device_means_per_rank_over_whole_steps(tmp_path: Path, include_warmup: bool) -> None:
    meta = CaptureHeader(window=[2, 4], warmup_steps=1)
    rows = [
        _device(1, 500.0),
        _device(2, 10.0),
        _device(3, 20.0, memcpy=None),
        _device(None, 1000.0),  # launched outside every step
        _device(2, 7.0, stage="actor_update"),
    ]
    a = _analysis(
        tmp_path / "a",
        _traces(tmp_path, 1, meta=meta, device=rows),
        _traces(
            tmp_path, None, device=[_device(1, 3.0, memcpy=None), _device(2, 5.0, memcpy=None)]
        ),
        include_warmup=include_warmup,
    )
    b = _analysis(tmp_path / "b", _traces(tmp_path, 1, device=[_device(1, 30.0)]))
    dev = compare_runs(a, b).device
    mean = (500.0 + 10.0 + 20.0) / 3 if include_warmup else 15.0
    assert [d.rank for d in dev] == [1, None]
    first, second = dev[0].a, dev[1].a
    assert isinstance(first, DeviceMeans) and isinstance(second, DeviceMeans)
    assert isinstance(dev[0].b, DeviceMeans) and isinstance(dev[1].b, DeviceMeans)
    assert first.compute_ms == pytest.approx(mean)
    assert first.comm_ms == pytest.approx(mean / 10)
    assert first.overlap_ms == pytest.approx(mean / 20)
    assert first.memcpy_ms == 0.5  # a step without copies (None) is left out of the mean
    assert dev[0].b.compute_ms == 30.0
    assert second.compute_ms == 4.0 and second.memcpy_ms is None
    assert dev[1].b == DeviceMeans()  # rank None is not in B: every mean None
    assert dev[1].json()["b_compute_ms"] is None


def test_memory_peaks_per_rank_the_highest_whole_capture_peak(tmp_path: Path) -> None:
    def mem(alloc: float | None, reserved: float | None, **by_stage: float) -> dict[str, Any]:
        return {
            "memory": Memory(
                source="trace",
                peak_allocated_bytes=alloc,
                peak_reserved_bytes=reserved,
                by_stage=by_stage,
            )
        }

    a = _analysis(
        tmp_path / "a",
        _traces(tmp_path, 0, **mem(900.0, 1000.0, actor_update=900.0)),
        _traces(tmp_path, 0, **mem(700.0, None, actor_update=700.0)),
        _traces(tmp_path, 1, **mem(0.0, 64.0)),
        _traces(tmp_path, None, **mem(None, None)),
    )
    b = _analysis(
        tmp_path / "b", _traces(tmp_path, 0, **mem(1200.0, 2048.0)), _traces(tmp_path, 1)
    )  # rank 1 recorded no memory in B
    found = compare_runs(a, b).memory
    assert found == [
        SideBySide(
            rank=0,
            a=Peaks(peak_allocated_bytes=900.0, peak_reserved_bytes=1000.0),
            b=Peaks(peak_allocated_bytes=1200.0, peak_reserved_bytes=2048.0),
        ),
        SideBySide(rank=1, a=Peaks(peak_allocated_bytes=0.0, peak_reserved_bytes=64.0), b=Peaks()),
        SideBySide(rank=None, a=Peaks(), b=Peaks()),
    ]
    assert [r.json() for r in found] == [
        {
            "rank": 0,
            "a_peak_allocated_bytes": 900.0,
            "a_peak_reserved_bytes": 1000.0,
            "b_peak_allocated_bytes": 1200.0,
            "b_peak_reserved_bytes": 2048.0,
        },
        {
            "rank": 1,
            "a_peak_allocated_bytes": 0.0,
            "a_peak_reserved_bytes": 64.0,
            "b_peak_allocated_bytes": None,
            "b_peak_reserved_bytes": None,
        },
        {
            "rank": None,
            "a_peak_allocated_bytes": None,
            "a_peak_reserved_bytes": None,
            "b_peak_allocated_bytes": None,
            "b_peak_reserved_bytes": None,
        },
    ]


def _manifest(folder: Path, name: str, overrides: list, captures: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(
        json.dumps(
            {
                "status": "completed",
                "job": {"name": "train", "num": 0, "overrides": overrides},
                "captures": captures,
            }
        )
    )


def test_captured_reads_presets_and_backends_from_manifests(tmp_path: Path) -> None:
    root = tmp_path / "a"
    (root / "0").mkdir(parents=True)
    (root / "0" / "manifest.json").write_text("{not json")  # skipped, the rest still read
    (root / "1").mkdir()
    (root / "1" / "manifest.json").write_text("[1, 2]")  # not an object: skipped
    _manifest(
        root / "2",
        "manifest.json",
        ["trainer.lr=0.1", "profiler=mstx_light", 3],
        [{"backend": "mstx", "step": 1}, {"step": 2}, "odd"],
    )
    _manifest(
        root,
        "manifest.rank1.json",
        ["profiler_config=npu_level1"],
        [{"backend": "torch_npu"}, {"backend": ""}],
    )
    (root / "notes.json").write_text(json.dumps({"job": {"overrides": ["profiler=other"]}}))
    t = _traces(
        root,
        3,
        {"actor_update": [1.0, 1.0], "critic_update": [1.0]},
        {"fwd": [1.0]},
        meta=CaptureHeader(level="level1"),
    )
    t.ranges.append(Range(3, "step", "ProfilerStep#7", 7, 7e6, 10.0))
    u = TraceData(
        root / "rank4.json", "torch", 4, "integrated", 1, meta=CaptureHeader(level="level0")
    )
    got = captured(_analysis(root, t, u))
    assert got == {
        "steps": [1, 2, 7],
        "level": ["level0", "level1"],
        "preset": ["mstx_light", "npu_level1"],
        "backend": ["mstx", "spans", "torch", "torch_npu"],
        "ranks": [3, 4],
        "stages": ["actor_update", "critic_update"],
    }


def test_compare_runs_says_what_each_run_captured(tmp_path: Path) -> None:
    _manifest(tmp_path / "a", "manifest.json", ["profiler=mstx_light"], [])
    _manifest(tmp_path / "b", "manifest.json", ["profiler=npu_level1"], [])
    a = _analysis(tmp_path / "a", _traces(tmp_path / "a", 0, {"actor_update": [1.0]}))
    b = _analysis(tmp_path / "b", _traces(tmp_path / "b", 0, {"actor_update": [1.0]}))
    found = compare_runs(a, b)
    assert found.captured["a"]["preset"] == ["mstx_light"]
    assert found.captured["b"]["preset"] == ["npu_level1"]
    assert found.warnings == ["runs differ in preset: A mstx_light; B npu_level1"]
    assert found.json()["captured"] == found.captured
    assert found.json()["warnings"] == found.warnings


def test_slower_than_is_strictly_over_the_fraction(tmp_path: Path) -> None:
    a = _analysis(tmp_path / "a", _traces(tmp_path, 0, {"actor_update": [100.0] * 6}))
    b = _analysis(tmp_path / "b", _traces(tmp_path, 0, {"actor_update": [110.0] * 6}))
    found = compare_runs(a, b)
    assert found.rows[0].change == pytest.approx(0.1)
    assert slower_than(found, 0.1) == []  # exactly at the fraction is not slower
    assert slower_than(found, 0.0999) == [
        "stage 'actor_update' rank 0: 100.000 ms -> 110.000 ms (+10.0% a step, over 10.0%; "
        "+60.0 ms over 6 runs; p=0.00108 over 6 and 6 steps, 1 rows asked)"
    ]


def test_two_captures_without_steps_show_their_device_table(tmp_path: Path, capsys) -> None:
    """Two real captures without steps (AlexNet, simple add; rank 0 each): the device table
    compares them per capture, each side's one whole row; a side with steps against one
    without is said to compare unlike things."""
    from corpus import unpack

    a = unpack("kineto_cuda_alexnet", tmp_path / "a")
    b = unpack("kineto_cuda_simple_add", tmp_path / "b")
    found = compare_runs(side_of(analyse(a, cache=False)), side_of(analyse(b, cache=False)))
    (row,) = found.device
    whole_a = [r for r in tables(analyse(a, cache=False)).device if r.whole]
    whole_b = [r for r in tables(analyse(b, cache=False)).device if r.whole]
    assert row.rank == 0 and isinstance(row.a, DeviceMeans) and isinstance(row.b, DeviceMeans)
    assert (row.a.compute_ms, row.b.compute_ms) == (whole_a[0].compute_ms, whole_b[0].compute_ms)
    assert found.device_per == {"a": "capture", "b": "capture"}
    assert not any("device time is per" in w for w in found.warnings)
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "Device ms per capture, A -> B" in out and "capture without steps" in out
    stepped = unpack("kineto_nccl_rank0_of_2", tmp_path / "s")
    mixed = compare_runs(side_of(analyse(stepped, cache=False)), side_of(analyse(b, cache=False)))
    assert mixed.device_per == {"a": "step", "b": "capture"}
    assert (
        "device time is per step in A and per capture in B (a capture without steps is "
        "one whole): its table compares unlike things"
    ) in mixed.warnings


def _jittery(root: Path, seed: int, run: str, planted_ms: float = 0.0) -> Path:
    """Two ranks, six steps of the RL loop on the fake clock: each stage its own length (2-20
    ms) with 0.2 ms of jitter, and in half of (rank, stage) a one-off 15 ms stall at a random
    step (a thread that waited for a core); ``planted_ms`` more in rank 0's actor_update, every
    step."""
    import random

    from capture_fixtures import make_run

    from mindspeed_prof.config.schema import STAGES

    base = {s: random.Random(f"{seed}-{s}").uniform(2.0, 20.0) for s in STAGES}
    stalls = {
        (rank, s): rng.randrange(1, 7) if rng.random() < 0.5 else None
        for rank in (0, 1)
        for s in STAGES
        if (rng := random.Random(f"{seed}-{run}-{rank}-{s}"))
    }

    def work(rank: int, step: int, stage: str) -> float:
        jitter = random.Random(f"{seed}-{run}-{rank}-{step}-{stage}").gauss(0.0, 0.2)
        stall = 15.0 if stalls[(rank, stage)] == step else 0.0
        extra = planted_ms if (rank, stage) == (0, "actor_update") else 0.0
        return max(base[stage] + jitter, 0.1) + stall + extra

    return make_run(root, steps=6, work=work, profile_level="level_none")


@pytest.mark.parametrize("seed", range(4))
def test_two_runs_of_one_config_pass_on_a_jittery_machine(
    tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _jittery(tmp_path / "a", seed, "a"), _jittery(tmp_path / "b", seed, "b")
    assert main(["compare", str(a), str(b), "--fail-over", "0.05"]) == 0
    assert "slower:" not in capsys.readouterr().err
    # the stalls move the means: a gate on one mean against a fixed floor failed here
    from mindspeed_prof.analysis.analyse import analyse

    found = compare_runs(side_of(analyse(a)), side_of(analyse(b)))
    assert any(
        r.change is not None
        and r.change > 0.05
        and r.a_mean_ms is not None
        and r.b_mean_ms is not None
        and r.b_mean_ms - r.a_mean_ms >= found.floor_ms
        for r in found.rows
    )


@pytest.mark.parametrize("seed", range(2))
def test_a_stage_30_ms_slower_over_six_steps_fails_the_gate(
    tmp_path: Path, seed: int, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _jittery(tmp_path / "a", seed, "a")
    b = _jittery(tmp_path / "b", seed, "b", planted_ms=30.0)
    assert main(["compare", str(a), str(b), "--fail-over", "0.05"]) == 4
    slower = [line for line in capsys.readouterr().err.splitlines() if "slower:" in line]
    assert len(slower) == 1 and "stage 'actor_update' rank 0:" in slower[0]
    assert "p=0.00" in slower[0] and "over 6 and 6 steps" in slower[0]
