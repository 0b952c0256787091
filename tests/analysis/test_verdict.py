"""The verdict: each part from hand-made captures, and its lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import answered

from mindspeed_prof.analysis.analyse import Captures
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.kineto.chrome import device_memory
from mindspeed_prof.analysis.readers.model import DeviceRow, Memory
from mindspeed_prof.analysis.verdict import bound_of, verdict
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.views.words import verdict_lines


def _data(
    rank: int | None,
    *ranges: tuple[str, str, int | None, float],
    meta: CaptureHeader | None = None,
    **fields: Any,
) -> TraceData:
    """A capture of ``rank`` holding (kind, name, step, ms) ranges."""
    t = TraceData(
        Path(f"run/rank{rank}.pt.trace.json"),
        "torch",
        rank,
        "integrated",
        1,
        meta=meta or CaptureHeader(),
        **fields,
    )
    t.ranges += [
        Range(rank, kind, name, step, 1000.0 * i, ms * 1000.0)
        for i, (kind, name, step, ms) in enumerate(ranges)
    ]
    return t


def _steps(rank: int, generate: list[float], update: float = 10.0) -> TraceData:
    out: list[tuple[str, str, int | None, float]] = []
    for step, ms in enumerate(generate, start=1):
        out += [
            ("step", f"ProfilerStep#{step}", step, ms + update + 5.0),
            ("stage", "actor_generate", step, ms),
            ("stage", "actor_update", step, update),
        ]
    return _data(rank, *out)


def test_step_slowest_and_straggler_of_a_slow_stage_on_one_rank() -> None:
    result = Captures(
        root=Path("run"), traces=[_steps(0, [20.0, 20.0, 20.0]), _steps(1, [20.0, 220.0, 20.0])]
    )
    v = verdict(*answered(result))
    assert v.step is not None
    # per step: its slowest rank's (35, 235, 35: rank 1 gates step 2, both ranks the tied
    # steps 1 and 3), then the median over steps
    assert (v.step.median_ms, v.step.min_ms, v.step.max_ms, v.step.steps, v.step.ranks) == (
        35.0,
        35.0,
        235.0,
        3,
        2,
    )
    assert v.step.spread == pytest.approx(200.0 / 35.0)
    assert (v.step.gated_by, v.step.gated, v.step.fastest_ms) == (1, 3, 35.0)
    assert v.slowest is not None
    # per step, on its slowest rank: 20, 220, 20; the other rank 20; no rank named behind
    assert (v.slowest.kind, v.slowest.name, v.slowest.rank) == ("stage", "actor_generate", None)
    assert (v.slowest.ms, v.slowest.others_ms) == (20.0, 20.0)
    assert v.slowest.share == pytest.approx(20.0 / 35.0)
    # behind in one step of three: a one-off, not a straggler
    assert v.straggler is None and v.behind is None and v.one_off is not None
    assert (v.one_off.name, v.one_off.rank, v.one_off.step, v.one_off.excess_ms) == (
        "actor_generate",
        1,
        2,
        200.0,
    )
    lines = dict(verdict_lines(v))
    assert lines["straggler"] == (
        "no consistent straggler (largest one-off: rank 1 at stage actor_generate, step 2: "
        "220.0 ms against 20.0 ms on the other ranks (11.0x, +200.0 ms))"
    )
    assert lines["slowest"].startswith("stage actor_generate: ")


def test_ranks_taking_turns_as_the_slowest_are_said_so_not_an_unknown_rank() -> None:
    result = Captures(
        root=Path("run"),
        traces=[_steps(0, [21.0, 20.0, 21.0, 20.0]), _steps(1, [20.0, 21.0, 20.0, 21.0])],
    )
    v = verdict(*answered(result))
    assert v.step is not None and (v.step.gated_by, v.step.gated, v.step.tied) == (None, 2, 2)
    assert (
        "ranks take turns as the slowest (2 ranks in 2 of 4 each)"
        in (dict(verdict_lines(v))["step"])
    )
    one = Captures(
        root=Path("run"),
        traces=[_steps(0, [21.0, 20.0, 21.0, 21.0]), _steps(1, [20.0, 21.0, 20.0, 20.0])],
    )
    w = verdict(*answered(one))
    assert w.step is not None and (w.step.gated_by, w.step.gated, w.step.tied) == (0, 3, 1)
    assert "rank 0 slowest in 3 of 4" in dict(verdict_lines(w))["step"]


def test_ranks_as_slow_in_every_step_are_said_to_tie_not_to_take_turns() -> None:
    """One step, every rank's as long (a torch_npu capture of one step on many ranks): neither
    "take turns" nor a fastest rank's step beside it; two ranks of three tied in every step:
    that they tie, and the fastest rank's step."""
    same = verdict(
        *answered(Captures(root=Path("run"), traces=[_steps(r, [20.0]) for r in (0, 1, 2)]))
    )
    assert same.step is not None and (same.step.tied, same.step.gated) == (3, 1)
    assert dict(verdict_lines(same))["step"] == (
        "35.0 ms (1 step on 3 ranks, each step its slowest rank's); every rank as slow in the step"
    )
    two = Captures(
        root=Path("run"),
        traces=[_steps(0, [20.0, 20.0]), _steps(1, [20.0, 20.0]), _steps(2, [18.0, 18.0])],
    )
    line = dict(verdict_lines(verdict(*answered(two))))["step"]
    assert line.endswith(
        "; 2 ranks tie as the slowest in every step, the fastest rank's step 33.0 ms"
    )


def test_one_step_names_no_straggler_and_gives_the_rank_furthest_behind() -> None:
    """One step cannot tell a straggler from a one-off: none named, the rank behind is given as
    such, not as a one-off."""
    result = Captures(
        root=Path("run"), traces=[_steps(0, [20.0]), _steps(1, [20.0]), _steps(2, [30.0])]
    )
    v = verdict(*answered(result))
    assert v.straggler is None and v.one_off is not None and v.steps == 1
    assert dict(verdict_lines(v))["straggler"] == (
        "none named on 1 step (a straggler needs 3; furthest behind: rank 2 at stage "
        "actor_generate, step 1: 30.0 ms against 20.0 ms on the other ranks (1.5x, +10.0 ms))"
    )


def test_a_rank_behind_in_every_step_is_the_straggler_and_its_step_is_the_jobs() -> None:
    result = Captures(
        root=Path("run"),
        traces=[_steps(0, [20.0, 21.0, 20.0, 19.0]), _steps(1, [60.0, 61.0, 220.0, 59.0])],
    )
    v = verdict(*answered(result))
    assert v.straggler is not None and v.behind is not None and v.one_off is None
    assert (v.straggler.rank, v.straggler.step, v.straggler.excess_ms) == (1, 3, 200.0)
    b = v.behind
    assert (b.behind, b.compared, b.consistent, b.least_ms) == (4, 4, True, 40.0)
    assert b.lag_ms == pytest.approx(40.0)  # the median lag: the stall is its worst step only
    # the step is the straggler's: 75, 76, 235, 74 ms
    assert v.step is not None and (v.step.median_ms, v.step.gated_by, v.step.gated) == (75.5, 1, 4)
    assert dict(verdict_lines(v))["straggler"] == (
        f"rank 1 at stage actor_generate: +40.0 ms a step (median of 4 steps, behind in 4; "
        f"noise {b.noise_ms:,.1f} ms); worst, step 3: 220.0 ms against 20.0 ms on the other "
        "ranks (11.0x, +200.0 ms)"
    )
    assert [c.rule for c in v.causes] == ["ranks.straggler"] or v.causes == []


def test_behind_in_two_steps_of_three_is_a_one_off_whatever_their_size() -> None:
    """Lags of 40, 0 and 200 ms: the rank keeps no lag in every step."""
    result = Captures(
        root=Path("run"), traces=[_steps(0, [20.0, 20.0, 20.0]), _steps(1, [60.0, 20.0, 220.0])]
    )
    v = verdict(*answered(result))
    assert v.straggler is None and v.one_off is not None and v.one_off.excess_ms == 200.0


@pytest.mark.parametrize(
    ("generate", "consistent"),
    [
        ([80.0, 81.0, 79.0, 82.0, 80.0, 21.0], True),  # most steps: 5 of 6 (one let off)
        ([80.0, 81.0, 79.0, 82.0, 21.0, 21.0], False),  # 4 of 6: two steps not behind
        ([21.0, 80.0, 21.0, 21.0, 21.0, 21.0], False),  # one stall of six
        ([21.0, 80.0, 21.0, 80.0, 21.0, 21.0], False),  # two of six
        # +3.9 ms in every step, no noise, but under the margin (20% of 20 ms)
        ([23.9, 24.1, 23.9, 23.9, 23.9, 23.9], False),
        ([24.5, 24.6, 24.5, 24.5, 24.5, 24.5], True),  # +4.5 ms: over it
    ],
)
def test_consistent_means_nearly_every_step_over_the_noise_and_the_margin(
    generate: list[float], consistent: bool
) -> None:
    result = Captures(
        root=Path("run"), traces=[_steps(0, [20.0] * 6), _steps(2, [20.0] * 6), _steps(1, generate)]
    )
    v = verdict(*answered(result))
    assert (v.straggler is not None) is consistent and (v.one_off is not None) is not consistent


def test_the_demos_two_captured_steps_name_no_straggler_for_a_one_off() -> None:
    """The issue's demo: two captured steps, rank 1 at 11.9 ms against 6.1 ms in step 3 only
    (a thread that waited for a core): no consistent straggler, the one-off and how few steps
    the verdict rests on are said."""

    def two_steps(rank: int, update: list[float]) -> TraceData:
        rows: list[tuple[str, str, int | None, float]] = []
        for step, ms in zip((2, 3), update):
            rows += [
                ("step", f"ProfilerStep#{step}", step, ms + 30.0),
                ("stage", "actor_update", step, ms),
            ]
        return _data(rank, *rows)

    v = verdict(
        *answered(
            Captures(root=Path("run"), traces=[two_steps(0, [6.2, 6.1]), two_steps(1, [6.3, 11.9])])
        )
    )
    assert v.straggler is None and v.steps == 2
    assert dict(verdict_lines(v))["straggler"] == (
        "none named on 2 steps (a straggler needs 3; furthest behind: rank 1 at stage "
        "actor_update, step 3: 11.9 ms against 6.1 ms on the other ranks (2.0x, +5.8 ms))"
    )
    assert [n.kind for n in v.next] == ["relaunch", "live"]
    assert "--ranks" not in v.next[1].command  # no rank singled out: every rank


@pytest.mark.parametrize(
    ("steps", "tail"),
    [(1, "; the verdict rests on 1 step"), (2, "; the verdict rests on 2 steps"), (3, "")],
)
def test_fewer_than_three_steps_say_what_the_verdict_rests_on(steps: int, tail: str) -> None:
    result = Captures(
        root=Path("run"), traces=[_steps(0, [20.0] * steps), _steps(1, [20.0] * steps)]
    )
    v = verdict(*answered(result))
    assert v.steps == steps and dict(verdict_lines(v))["straggler"] == (
        f"none (no rank behind the others by more than the noise floor){tail}"
    )


def test_light_capture_of_ranges_names_the_slowest_range() -> None:
    result = Captures(
        root=Path("run"),
        traces=[
            _data(
                0,
                ("step", "ProfilerStep#1", 1, 100.0),
                ("range", "fwd", 1, 30.0),
                ("range", "bwd", 1, 60.0),
            )
        ],
    )
    v = verdict(*answered(result))
    assert v.slowest is not None and (v.slowest.kind, v.slowest.name, v.slowest.share) == (
        "range",
        "bwd",
        0.6,
    )
    # one rank: none to name
    assert v.straggler is None and "straggler" not in dict(verdict_lines(v))


def test_nested_ranges_name_the_range_with_the_most_self_time_and_its_enclosing_one() -> None:
    """Megatron's and DeepSeek's nesting: ``1F1B`` around ``dispatch(F)``, ``attn`` and
    ``mlp``. The enclosing range holds the whole step but little time of its own: the answer
    is ``dispatch(F)`` (67.8 ms self), inside ``1F1B``."""
    t = TraceData(
        Path("run/rank0.pt.trace.json"), "torch", 0, "integrated", 1, meta=CaptureHeader()
    )
    for step in (1, 2, 3):
        at = 200_000.0 * step
        t.ranges += [
            Range(0, "step", f"ProfilerStep#{step}", step, at, 115_000.0),
            Range(0, "range", "1F1B", step, at, 112_200.0),
            Range(0, "range", "dispatch(F)", step, at + 100.0, 67_800.0),
            Range(0, "range", "attn", step, at + 68_000.0, 20_000.0),
            Range(0, "range", "mlp", step, at + 88_100.0, 24_000.0),
        ]
    v = verdict(*answered(Captures(root=Path("run"), traces=[t])))
    assert v.slowest is not None
    assert (v.slowest.kind, v.slowest.name, v.slowest.within) == ("range", "dispatch(F)", "1F1B")
    assert v.slowest.ms == pytest.approx(67.8)
    assert v.slowest.share == pytest.approx(67.8 / 115.0)
    assert dict(verdict_lines(v))["slowest"] == (
        "range dispatch(F): 67.8 ms self time per step (59% of the step), inside range 1F1B"
    )


def test_warmup_steps_are_left_out_and_said() -> None:
    meta = CaptureHeader(window=[2, 3], warmup_steps=1)  # MindSpeed-LLM's: warmup on step start-1
    result = Captures(
        root=Path("run"),
        traces=[
            _data(
                0,
                ("step", "ProfilerStep#1", 1, 900.0),
                ("step", "ProfilerStep#2", 2, 100.0),
                meta=meta,
            )
        ],
    )
    v = verdict(*answered(result))
    assert v.step is not None and (v.step.median_ms, v.step.steps) == (100.0, 1)
    assert v.warmup_steps == [1] and "warmup step 1 left out" in dict(verdict_lines(v))["unusual"]


@pytest.mark.parametrize(
    ("parts", "bound"),
    [
        ((50.0, 20.0, 5.0, 25.0), "compute"),
        ((10.0, 60.0, 5.0, 25.0), "communication"),
        ((10.0, 10.0, 70.0, 10.0), "copy"),
        ((10.0, 20.0, 5.0, 65.0), "idle"),
        ((30.0, 30.0, 10.0, 30.0), "compute"),
    ],
)  # a tie goes to the first of BOUNDS
def test_bound_is_the_largest_part(parts: tuple[float, float, float, float], bound: str) -> None:
    assert bound_of(*parts) == bound


def test_device_verdict_counts_only_exposed_communication() -> None:
    rows = [
        DeviceRow(
            step=s, compute_ms=40.0, comm_ms=50.0, overlap_ms=30.0, idle_ms=5.0, memcpy_ms=1.0
        )
        for s in (1, 2)
    ]
    rows.append(
        DeviceRow(
            step=1, stage="actor_update", compute_ms=999.0, comm_ms=0.0, overlap_ms=0.0, idle_ms=0.0
        )
    )  # a stage row: not the step's
    v = verdict(*answered(Captures(root=Path("run"), traces=[_data(0, device=rows)])))
    assert v.device is not None
    d = v.device
    assert (d.bound, d.compute_ms, d.comm_ms, d.copy_ms, d.idle_ms, d.steps) == (
        "compute",
        40.0,
        20.0,
        1.0,
        5.0,
        2,
    )
    assert d.shares["communication"] == pytest.approx(20.0 / 66.0)
    assert dict(verdict_lines(v))["device"].startswith(
        "compute-bound: compute 40.0 ms per step; compute 61%, communication 30%"
    )


def test_npu_step_from_the_device_when_no_step_ranges() -> None:
    rows = [
        DeviceRow(
            step=50,
            compute_ms=9.0,
            comm_ms=100.0,
            overlap_ms=0.0,
            idle_ms=25.0,
            comm_exposed_ms=100.0,
            step_ms=ms,
        )
        for ms in (134.0,)
    ]
    traces = [
        _data(0, device=rows),
        _data(
            1,
            device=[
                DeviceRow(
                    step=50,
                    compute_ms=60.0,
                    comm_ms=50.0,
                    overlap_ms=0.0,
                    idle_ms=25.0,
                    comm_exposed_ms=50.0,
                    step_ms=136.0,
                )
            ],
        ),
    ]
    v = verdict(*answered(Captures(root=Path("run"), traces=traces)))
    assert v.step is not None and (v.step.median_ms, v.step.ranks, v.step.gated_by) == (136.0, 2, 1)
    # no ranges: the rank that computes longest is the one the others wait for; one step
    # names nobody (a one-off)
    assert v.straggler is None and v.one_off is not None
    assert (v.one_off.kind, v.one_off.rank, v.one_off.excess_ms) == ("device", 1, 51.0)


def test_npu_rank_that_computes_longer_in_every_step_is_named() -> None:
    def rows(compute: float) -> list[DeviceRow]:
        return [
            DeviceRow(
                step=s,
                compute_ms=compute + 0.1 * s,
                comm_ms=100.0,
                overlap_ms=0.0,
                idle_ms=25.0,
                comm_exposed_ms=100.0,
                step_ms=134.0 + compute,
            )
            for s in range(1, 5)
        ]

    traces = [_data(0, device=rows(9.0)), _data(1, device=rows(60.0)), _data(2, device=rows(9.5))]
    v = verdict(*answered(Captures(root=Path("run"), traces=traces)))
    assert v.behind is not None and (v.behind.kind, v.behind.rank) == ("device", 1)
    assert v.behind.lag_ms == pytest.approx(50.75)  # 60 + s/10 against 9.25 + s/10
    assert dict(verdict_lines(v))["straggler"].startswith("rank 1 at device compute: +50.8 ms")


def test_memory_against_the_capacity_the_trace_records() -> None:
    traces = [
        _data(
            r,
            memory=Memory(source="trace", peak_allocated_bytes=peak),
            meta=CaptureHeader(device_memory_bytes=80 * 2**30),
        )
        for r, peak in ((0, 2**33), (1, 3 * 2**32))
    ]
    m = verdict(*answered(Captures(root=Path("."), traces=traces))).memory
    assert m is not None and (m.rank, m.peak_bytes, m.share) == (1, 3 * 2**32, 0.15)
    assert verdict_lines(verdict(*answered(Captures(root=Path("."), traces=[traces[0]]))))[-1] == (
        "memory",
        "peak 8.0 GiB allocated of 80.0 GiB (10%) on rank 0",
    )


@pytest.mark.parametrize(
    ("props", "size"),
    [
        (
            [{"id": 0, "totalGlobalMem": 42297524224}, {"id": 1, "totalGlobalMem": 42297524224}],
            42297524224,
        ),
        ([{"totalGlobalMem": 1}, {"totalGlobalMem": 2}], None),  # differ: which is ours?
        ([], None),
        (None, None),
        (0, None),
        ([{"totalGlobalMem": "big"}], None),
        ([{"totalGlobalMem": True}], None),
        (["x"], None),
    ],
)
def test_device_memory_from_kineto_properties(props: Any, size: int | None) -> None:
    assert device_memory(props) == size


def test_a_flight_dump_is_unusual_at_the_step_that_triggered_it() -> None:
    meta = CaptureHeader(stage="flight", reason="anomaly", steps=[6, 7, 8], trigger_step=8)
    dump = TraceData(
        Path("run/flight/rank0_h_1_step6.mstx.trace.json"), "spans", 0, "flight", 1, meta=meta
    )
    v = verdict(*answered(Captures(root=Path("run"), traces=[dump])))
    assert [(t.trigger, t.step, t.steps) for t in v.triggered] == [("flight", 8, [6, 7, 8])]
    assert dict(verdict_lines(v))["unusual"] == (
        "flight dump (anomaly) at step 8 on rank 0, holds steps 6-8"
    )


def test_nothing_to_say_is_no_lines() -> None:
    assert verdict_lines(verdict(*answered(Captures(root=Path("."))))) == []
