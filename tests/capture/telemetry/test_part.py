"""``TelemetryPart`` in a profiler: every step's figures, on the profiler's own clock reads,
with or without captures."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import fake_clock

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.capture.telemetry import part as part_module
from mindspeed_prof.capture.telemetry import ranges as timer_module
from mindspeed_prof.config.schema import STAGES

#: Each stage's ms on the fake clock; rank 1 is slow in actor_update.
WORK = {stage: 2.0 + i for i, stage in enumerate(STAGES)}
SLOW_MS = 40.0


def _profiler(tmp_path: Path, rank: int = 0, **ext: Any) -> Profiler:
    integrated = ext.pop("integrated", {})
    return Profiler.from_config(
        {
            "integrated": {"profile_save_path": str(tmp_path), **integrated},
            "extensions": {"telemetry": ["metrics"], **ext},
        },
        rank=rank,
    )


def _run_steps(
    prof: Profiler, clock: Any, steps: range, rank: int = 0, between_ms: float = 0.5
) -> list[dict[str, float]]:
    seen = []
    for step in steps:
        with prof.step(step):
            for stage in STAGES:
                with prof.stage(stage):
                    clock.advance(
                        WORK[stage] + (SLOW_MS if (rank, stage) == (1, "actor_update") else 0)
                    )
                clock.advance(between_ms)
        seen.append(prof.metrics())
    return seen


def _expected(rank: int, between_ms: float = 0.5) -> dict[str, float]:
    stages = {
        f"prof/stage/{s}/ms": WORK[s] + (SLOW_MS if (rank, s) == (1, "actor_update") else 0)
        for s in STAGES
    }
    step = sum(stages.values()) + between_ms * len(STAGES)
    return {"prof/step/ms": step, **stages}


@pytest.mark.parametrize("rank", [0, 1])
def test_with_profile_off_every_step_is_kept_as_timed(tmp_path: Path, rank: int) -> None:
    """Nothing is captured, nothing written; each step's figures are exactly the fake clock's."""
    with fake_clock() as clock:
        prof = _profiler(tmp_path, rank)
        seen = _run_steps(prof, clock, range(1, 4), rank)
        prof.close()
    expected = _expected(rank)
    for got in seen:
        assert got.keys() == expected.keys()
        assert got == pytest.approx(expected, abs=1e-9)
    assert prof.metrics(2) == seen[1] and prof.metrics(99) == {}
    assert prof.captures == [] and list(tmp_path.iterdir()) == []


def test_the_figures_are_the_stage_times_the_capture_records(tmp_path: Path) -> None:
    """With a capture on, ``metrics(step)`` holds the durations its range file has."""
    with fake_clock() as clock:
        prof = _profiler(
            tmp_path,
            1,
            backend="none",
            integrated={
                "profile": True,
                "mstx": True,
                "profile_step_start": 2,
                "profile_step_end": 4,
            },
        )
        _run_steps(prof, clock, range(1, 5), rank=1)
        prof.close()
    (spans,) = tmp_path.rglob("*.mstx.trace.json")
    events = json.loads(spans.read_text())["traceEvents"]
    for step in (2, 3):
        got = prof.metrics(step)
        step_ev = [e for e in events if e.get("name") == f"ProfilerStep#{step}"]
        assert len(step_ev) == 1 and got["prof/step/ms"] == pytest.approx(
            step_ev[0]["dur"] / 1e3, abs=1e-3
        )
        start, end = step_ev[0]["ts"], step_ev[0]["ts"] + step_ev[0]["dur"]
        for stage in STAGES:
            (ev,) = [e for e in events if e.get("name") == stage and start <= e["ts"] < end]
            assert got[f"prof/stage/{stage}/ms"] == pytest.approx(ev["dur"] / 1e3, abs=1e-3)
    assert prof.metrics(1) == pytest.approx(_expected(1))  # before the window: kept too


def test_custom_ranges_are_timed_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for ranges_on in (False, True):
        with fake_clock() as clock:
            monkeypatch.setattr(timer_module, "perf_counter_ns", clock)
            prof = _profiler(tmp_path, telemetry_ranges=ranges_on)
            assert (len(mstx.sinks()) == 1) == ranges_on
            with prof.step(1), prof.stage("actor_generate"):
                for _ in range(3):
                    with mstx.range("decode"):
                        clock.advance(1.5)
            prof.close()
            assert mstx.sinks() == ()  # the part's sink leaves with it
        ranges = {k: v for k, v in prof.metrics().items() if k.startswith("prof/range/")}
        assert ranges == ({"prof/range/decode/ms": pytest.approx(4.5)} if ranges_on else {})


def test_counters_reach_the_step_they_were_counted_in(tmp_path: Path) -> None:
    """``on_count`` (what ``Profiler.count`` calls) adds up per step; a distribution gives n,
    mean, min and max; a count between steps goes with the next step."""
    prof = _profiler(tmp_path)
    part = prof._telemetry
    assert part is not None
    with prof.step(1):
        with prof.stage("actor_generate"):
            part.on_count("tokens_generated", 300, 1, "actor_generate")
            part.on_count("response_length", [100.0, 200.0], 1, "actor_generate")
        part.on_count("tokens_generated", 12, 1, None)
    part.on_count("samples_dropped", 2, None, None)
    first = prof.metrics()
    with prof.step(2):
        pass
    assert {k: v for k, v in first.items() if k.startswith("prof/count/")} == {
        "prof/count/tokens_generated": 312.0,
        "prof/count/response_length/n": 2.0,
        "prof/count/response_length/mean": 150.0,
        "prof/count/response_length/min": 100.0,
        "prof/count/response_length/max": 200.0,
    }
    assert prof.metrics()["prof/count/samples_dropped"] == 2.0
    prof.close()


def test_a_bad_count_is_one_warning_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    prof = _profiler(tmp_path)
    assert prof._telemetry is not None
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in (1, 2):
            with prof.step(step):
                prof._telemetry.on_count("reward", ["high"], step, None)  # type: ignore[list-item]
                prof._telemetry.on_count("groups", 4, step, None)
    assert [r.getMessage() for r in caplog.records if "reward" in r.getMessage()] == [
        "mindspeed-prof: telemetry: counter 'reward' not kept (ValueError: could not convert "
        "string to float: 'high'); a number or a list of numbers"
    ]
    assert prof.metrics()["prof/count/groups"] == 4.0
    prof.close()


def test_a_failed_step_leaves_no_figures_and_the_next_one_starts_clean(tmp_path: Path) -> None:
    with fake_clock() as clock:
        prof = _profiler(tmp_path)
        _run_steps(prof, clock, range(1, 2))
        with pytest.raises(RuntimeError), prof.step(2), prof.stage("actor_update"):
            clock.advance(100)
            raise RuntimeError("boom")
        assert prof.metrics(2) == {}
        seen = _run_steps(prof, clock, range(3, 4))
        prof.close()
    assert seen[0] == pytest.approx(_expected(0))


def test_only_the_last_steps_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(part_module, "KEEP_STEPS", 3)
    prof = _profiler(tmp_path)
    for step in range(1, 7):
        with prof.step(step):
            pass
    prof.close()
    assert [s for s in range(1, 7) if prof.metrics(s)] == [4, 5, 6]


def test_without_telemetry_the_hooks_stay_free_and_metrics_is_empty(tmp_path: Path) -> None:
    prof = Profiler.from_config(
        {"integrated": {"profile_save_path": str(tmp_path)}, "extensions": {"on_demand": False}}
    )
    assert not prof._live  # prof.step() is a shared nullcontext: no clock read at all
    with prof.step(1), prof.stage("actor_update"):
        pass
    assert prof.metrics() == {} and prof.metrics(1) == {}
    prof.close()


def test_prof_count_and_mstx_count_reach_telemetry_and_the_capture_alike(tmp_path: Path) -> None:
    """The public ``prof.count``/``mstx.count`` reach the telemetry part on every step, and the
    same counts land in the capture's range file of the window's step: one figure, two views."""
    prof = _profiler(
        tmp_path,
        integrated={
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "profile_step_start": 2,
            "profile_step_end": 3,
        },
    )
    seen = []
    for step in (1, 2, 3):
        with prof.step(step), prof.stage("actor_generate"):
            prof.count("tokens_generated", 100 * step)
            mstx.count("response_length", [float(step), 2.0 * step])
        seen.append(prof.metrics())
    prof.close()
    assert [m["prof/count/tokens_generated"] for m in seen] == [100.0, 200.0, 300.0]
    assert [m["prof/count/response_length/max"] for m in seen] == [2.0, 4.0, 6.0]
    files = sorted(tmp_path.rglob("*.json"))
    counted = [
        e
        for f in files
        if "traceEvents" in (doc := json.loads(f.read_text()))
        for e in doc["traceEvents"]
        if e.get("ph") == "C"
    ]
    assert sorted(
        (e["name"], e["args"]["step"], e["args"].get("value"), tuple(e["args"].get("values", ())))
        for e in counted
    ) == [("response_length", 2, None, (2.0, 4.0)), ("tokens_generated", 2, 200, ())]
