"""``rl.transitions`` on captures of our own Profiler on a fake clock (a stage lasts exactly what
the test says): a transition at the share of the step is named, just under it is not, and the
knobs named are those of the transitions found. (The weight sync's parts, custom ranges on the
real clock, are tested on the demo: tests/demo/test_colocated.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import answered

import mindspeed_prof.capture.ranges as ranges_mod
import mindspeed_prof.capture.spans as spans_mod
from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.findings.rl import transitions as rule
from mindspeed_prof.analysis.findings.rl.transitions import KNOBS, TRANSITION_SHARE
from mindspeed_prof.analysis.report.tables import tables


class Clock:
    def __init__(self) -> None:
        self.ns = 1_000_000_000_000

    def __call__(self) -> int:
        return self.ns

    def advance(self, ms: float) -> None:
        self.ns += round(ms * 1e6)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    c = Clock()
    monkeypatch.setattr(ranges_mod, "perf_counter_ns", c)
    monkeypatch.setattr(spans_mod, "perf_counter_ns", c)
    yield c


def run(root: Path, clock: Clock, steps: int, plan: list[tuple[str, float]], rank: int = 0) -> None:
    """``steps`` steps of ``plan`` (stage, ms; "" for time in no stage) on one rank."""
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": steps + 1,
                "profile_save_path": str(root),
            },
            "extensions": {"backend": "none"},
        },
        rank=rank,
    )
    for step in range(1, steps + 1):
        with prof.step(step):
            for name, ms in plan:
                if not name:
                    clock.advance(ms)
                    continue
                with prof.stage(name):
                    clock.advance(ms)
    prof.close()


def plan_with(sync_ms: float) -> list[tuple[str, float]]:
    return [("weight_sync", sync_ms), ("actor_generate", 40.0), ("actor_update", 100.0 - sync_ms)]


def test_a_transition_over_its_share_is_named_with_its_knobs(tmp_path: Path, clock: Clock) -> None:
    run(tmp_path, clock, 3, [*plan_with(30.0), ("offload", 2.0), ("", 8.0)])
    (f,) = rule(*answered(analyse(tmp_path)))
    # the step: 30 + 40 + 70 + 2 + 8 = 150 ms; only weight_sync is over 10% of it, and the
    # transitions together (offload too, as the verdict's phases line counts them) 32 ms
    assert f.rule == "rl.transitions" and f.ranks == [0]
    assert (
        f.title == "transitions take 32.0 ms per step (21% of the step) on rank 0: most "
        "weight_sync (30.0 ms, 20%)"
    )
    assert f.detail.splitlines()[0] == (
        "rank 0: weight_sync 30.0 ms (20%) of 150.0 ms per step (steps 1-3)"
    )
    assert f.impact_ms == pytest.approx(32.0) and f.severity == "high"
    assert KNOBS["weight_sync"] in f.suggestion and KNOBS["offload"] not in f.suggestion


@pytest.mark.parametrize(("sync_ms", "named"), [(14.0, True), (13.9, False)])
def test_the_share_edge_from_both_sides(
    tmp_path: Path, clock: Clock, sync_ms: float, named: bool
) -> None:
    run(tmp_path, clock, 2, plan_with(sync_ms))
    step_ms = sync_ms + 40.0 + (100.0 - sync_ms)  # 140 ms
    assert (sync_ms / step_ms >= TRANSITION_SHARE) == named
    assert bool(rule(*answered(analyse(tmp_path)))) == named


def test_no_transition_stage_no_finding_and_the_worst_rank_first(
    tmp_path: Path, clock: Clock
) -> None:
    run(tmp_path / "a", clock, 2, [("actor_generate", 50.0), ("", 50.0)])
    assert rule(*answered(analyse(tmp_path / "a"))) == []
    run(tmp_path / "b", clock, 2, [("engine_sleep", 20.0), ("actor_update", 80.0)], rank=0)
    run(
        tmp_path / "b",
        clock,
        2,
        [("engine_sleep", 20.0), ("engine_wake", 30.0), ("actor_update", 50.0)],
        rank=1,
    )
    (f,) = rule(*answered(analyse(tmp_path / "b")))
    assert f.title.startswith(
        "transitions take 50.0 ms per step (50% of the step) on rank 1 "
        "(of 2 ranks): most engine_wake (30.0 ms, 30%)"
    )
    assert f.ranks == [0, 1]
    assert KNOBS["engine_sleep"] in f.suggestion and KNOBS["engine_wake"] in f.suggestion


def test_the_decorator_and_mstx_ranges_name_transitions_as_stages(tmp_path: Path) -> None:
    """``mstx_timer_decorator`` on a method named like a transition (its range is named
    ``Worker.weight_sync``) and ``mstx.range("offload")`` are stages of their step."""
    from mindspeed_prof import mstx
    from mindspeed_prof.mstx import mstx_timer_decorator

    class Worker:
        @mstx_timer_decorator
        def weight_sync(self) -> None:
            with mstx.range("transfer"):
                sum(range(20_000))

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "none"},
        },
        rank=0,
    )
    w = Worker()
    for step in (1, 2):
        with prof.step(step):
            w.weight_sync()
            with mstx.range("offload"):
                sum(range(20_000))
    prof.close()
    result = analyse(tmp_path)
    assert {(r.stage, r.count) for r in tables(result).stage_rank} == {
        ("weight_sync", 2),
        ("offload", 2),
    }
    assert {r.name for r in tables(result).range_table} == {"transfer"}
    for row in tables(result).phases:
        assert set(row.transitions) == {"weight_sync", "offload"}
        assert row.transition_ms == pytest.approx(sum(row.transitions.values()))
        assert row.transition_ms > 0
