"""Anomaly trigger: rolling medians (pure), and captures of the steps after a slow one."""

from __future__ import annotations

import json
import logging
import re
import statistics
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.capture import anomaly as anomaly_module
from mindspeed_prof.capture import ranges as ranges_module
from mindspeed_prof.capture.anomaly import (
    MAX_KEPT,
    Anomaly,
    AnomalyDetector,
    AnomalyPart,
    AnomalyTrigger,
)
from mindspeed_prof.capture.plan import ALL, CapturePlan, Scheduler, Start, Stop, Trigger
from mindspeed_prof.config import validate

#: anomaly_min_ms when the config leaves it out.
MIN_MS = validate({}).anomaly_min_ms


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 1000), max_size=60),
    st.integers(2, 9),
    st.floats(1.01, 5.0),
    st.integers(0, 300),
)
def test_detector_matches_statistics_median(
    values: list[int], window: int, factor: float, excess: int
) -> None:
    det = AnomalyDetector(factor, window, min_excess_ns=excess)
    for i, v in enumerate(values):
        got = det.observe("s", v)
        if i < window:
            assert got is None
            continue
        median = statistics.median(values[i - window : i])
        spread = 1.4826 * statistics.median(abs(x - median) for x in values[i - window : i])
        slow = v > factor * median and v - median >= excess and v - median >= 5 * spread
        assert got == (median if slow else None)


def test_detector_keys_are_separate() -> None:
    det = AnomalyDetector(2.0, 2)
    for _ in range(2):
        det.observe("fast", 1)
        det.observe(None, 100)
    assert det.observe("fast", 3) == 1.0 and det.observe(None, 150) is None


def test_detector_edges_exactly_factor_times_and_a_half_ns_over() -> None:
    """Exactly ``factor`` x the median is not slower; with no minimum excess given and a window
    without noise, a nanosecond over is enough; a window that scatters as much as the slow
    duration is over it is noise, and nothing is slow."""
    det = AnomalyDetector(2.0, 2)
    for d in (10, 10):
        det.observe("s", d)
    assert det.observe("s", 20) is None
    det = AnomalyDetector(1.1, 2)
    for d in (2, 2):
        det.observe("s", d)
    assert det.observe("s", 3) == 2.0
    det = AnomalyDetector(1.1, 4)
    for d in (100, 150, 90, 160):  # robust sd 44.5: 5x it is 222 over the median, 125
        det.observe("s", d)
    assert det.observe("s", 340) is None
    det = AnomalyDetector(1.1, 4)
    for d in (100, 150, 90, 160):
        det.observe("s", d)
    assert det.observe("s", 350) == 125.0


MS = 1_000_000


def test_anomaly_min_ms_defaults_to_5() -> None:
    assert MIN_MS == 5.0


def test_trigger_once_per_step_at_most_max_and_never_when_busy() -> None:
    trig = AnomalyTrigger(2.0, 4, max_captures=2, min_ms=MIN_MS)
    for step in (1, 2, 3, 4):
        assert trig.observe(step, "a", 10 * MS, busy=False) is None
        assert trig.observe(step, None, 10 * MS, busy=False) is None
    first = trig.observe(5, "a", 50 * MS, busy=False)
    assert first is not None and first.action == "capture" and first.median_ms == 10
    assert trig.observe(5, None, 50 * MS, busy=False) is None  # one trigger per step
    busy = trig.observe(6, "a", 90 * MS, busy=True)
    assert busy is not None and busy.action.startswith("skipped: another capture")
    assert trig.observe(7, "a", 500 * MS, busy=False).action == "capture"  # type: ignore[union-attr]
    assert trig.observe(8, "a", 5000 * MS, busy=False).action == (  # type: ignore[union-attr]
        "skipped: anomaly_max_captures reached"
    )


def test_trigger_ignores_slowdowns_under_the_minimum_excess() -> None:
    """A 0.1 ms stage at 40x its median is jitter; 10x a 1 ms stage is 9 ms over: it fires."""
    trig = AnomalyTrigger(2.0, 2, max_captures=5, min_ms=MIN_MS)
    for step in (1, 2):
        trig.observe(step, "tiny", MS // 10, busy=False)
        trig.observe(step, "small", MS, busy=False)
    assert trig.observe(3, "tiny", 4 * MS, busy=False) is None
    found = trig.observe(4, "small", 10 * MS, busy=False)
    assert found is not None and found.stage == "small" and found.median_ms == 1


@pytest.mark.parametrize("min_ms", [MIN_MS, 2.5, 0.0])
@pytest.mark.parametrize("short_ns", [1, 0])
def test_minimum_excess_edge(min_ms: float, short_ns: int) -> None:
    """Twice the median always passes the factor; what decides is the excess: ``min_ms`` over
    the median fires, a nanosecond less does not (with 0 the factor alone decides)."""
    trig = AnomalyTrigger(2.0, 2, max_captures=1, min_ms=min_ms)
    for step in (1, 2):
        trig.observe(step, None, MS, busy=False)
    over = max(round(min_ms * MS) - short_ns, MS + 1)  # over 2x the 1 ms median, at least
    found = trig.observe(3, None, MS + over, busy=False)
    assert (found is not None) == (over >= round(min_ms * MS))


@pytest.mark.parametrize(
    "min_ms,over_ms,fires",
    [(3.0, 2.999999, False), (3.0, 3.0, True), (None, 4.999999, False), (None, 5.0, True)],
)
def test_anomaly_min_ms_from_the_config(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    min_ms: float | None,
    over_ms: float,
    fires: bool,
) -> None:
    """``extensions.anomaly_min_ms`` (default 5) reaches the trigger a profiler runs: a step
    3 to 5 ms over its 20 ms median passes the factor of 1.1 (22 ms) whatever the floor, and
    fires only at ``anomaly_min_ms`` over it."""
    clock = Clock()
    monkeypatch.setattr(ranges_module, "perf_counter_ns", clock)
    ext: dict[str, Any] = {"backend": "none", "anomaly_factor": 1.1, "anomaly_window": 3}
    if min_ms is not None:
        ext["anomaly_min_ms"] = min_ms
    prof = Profiler.from_config(
        {"integrated": {"profile_save_path": str(tmp_path)}, "extensions": ext}, rank=0
    )
    for step in range(1, 6):
        with prof.step(step):
            clock.ns += 20 * MS + (round(over_ms * MS) if step == 5 else 0)
    prof.close()
    assert [t.step for t in prof.triggers] == ([5] if fires else [])


def test_scheduler_runs_triggers_in_order_and_not_over_a_planned_capture() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=2, end=3))
    sched.request(Trigger("on_demand", 2, ident="a"))
    sched.request(Trigger("on_demand", 1, stage="actor_update", ident="b"))
    events: list[Any] = []
    for step in range(1, 8):
        events += sched.step_start(step)
        events += sched.stage_start("actor_update", step)
        events += sched.stage_end("actor_update", step)
        events += sched.step_end(step)
    starts = [
        (e.capture.stage, e.capture.step, e.capture.trigger) for e in events if isinstance(e, Start)
    ]
    assert starts == [(ALL, 1, "on_demand"), ("actor_update", 3, "on_demand")]
    # The planned window [2, 3) was taken by the first trigger's second step: it stays undone.
    stops = [e.reason for e in events if isinstance(e, Stop)]
    assert stops == ["trigger_end", "stage_end"] and not sched.busy


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def test_slow_step_captures_the_next_steps_under_triggered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(ranges_module, "perf_counter_ns", clock)
    prof = Profiler.from_config(
        {
            "profile_save_path": str(tmp_path),
            "backend": "torch",
            "flight_recorder_steps": 3,
            "anomaly_factor": 2.0,
            "anomaly_window": 4,
            "anomaly_capture_steps": 2,
            "anomaly_max_captures": 1,
        },
        rank=3,
    )
    for step in range(1, 16):
        with prof.step(step), prof.stage("actor_update"), mstx.range("work"):
            clock.ns += 10_000_000 * (8 if step in (8, 12) else 1)
    prof.close()
    (anomaly, again) = prof.triggers
    assert anomaly.rank == 3 and anomaly.step == 8 and anomaly.stage == "actor_update"
    assert anomaly.median_ms == 10 and anomaly.factor == 2.0
    assert anomaly.action == "capture" and again.action.startswith("skipped")
    flight, triggered = prof.captures
    assert flight.reason == "anomaly" and flight.steps == [6, 7, 8]
    assert triggered.trigger == "anomaly" and triggered.steps == [9, 10]
    (trace,) = (tmp_path / "triggered" / "integrated").glob("*.pt.trace.json")
    names = {e["name"] for e in json.loads(trace.read_text())["traceEvents"]}
    assert {"ProfilerStep#9", "ProfilerStep#10", "actor_update"} <= names
    assert "ProfilerStep#11" not in names


@pytest.mark.parametrize("slow", ["actor_update", None])
def test_the_flight_dump_for_an_anomaly_holds_the_anomalous_step_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow: str | None
) -> None:
    clock = Clock()
    monkeypatch.setattr(ranges_module, "perf_counter_ns", clock)
    prof = Profiler.from_config(
        {
            "integrated": {"profile_save_path": str(tmp_path)},
            "extensions": {
                "backend": "none",
                "flight_recorder_steps": 8,
                "anomaly_factor": 3.0,
                "anomaly_window": 10,
            },
        },
        rank=0,
    )
    for step in range(1, 43):
        with prof.step(step):
            with prof.stage("actor_update"):
                clock.ns += 10_000_000 * (9 if step == 40 and slow else 1)
            with prof.stage("critic_update"):
                clock.ns += 10_000_000
            clock.ns += 10_000_000 * (9 if step == 40 and not slow else 1)
    prof.close()
    (anomaly,) = prof.triggers
    assert (anomaly.step, anomaly.stage) == (40, slow)
    flight = prof.captures[0]
    assert flight.reason == "anomaly" and flight.steps == list(range(33, 41))
    assert flight.trigger_step == 40 and flight.to_json()["trigger_step"] == 40
    (path,) = flight.files
    doc = json.loads(Path(path).read_text())
    names = [e["name"] for e in doc["traceEvents"]]
    assert "ProfilerStep#40" in names and names.count("critic_update") == 8  # step 40 whole
    assert doc["mindspeed_prof"]["trigger_step"] == 40


def test_anomaly_off_by_default(tmp_path: Path) -> None:
    prof = Profiler.from_config({"integrated": {"profile_save_path": str(tmp_path)}})
    assert not any(isinstance(p, AnomalyPart) for p in prof.parts) and not prof._live


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("anomaly_factor", 0.5, "must be 0 (off) or a number > 1"),
        ("anomaly_factor", -2.0, "must be 0 (off) or a number > 1"),
        ("anomaly_window", 1, "must be an integer >= 2"),
        ("anomaly_capture_steps", 0, "must be an integer >= 1"),
        ("anomaly_max_captures", -1, "must be an integer >= 0"),
        ("anomaly_min_ms", -0.5, "must be a number >= 0"),
        ("anomaly_min_ms", "nan", "must be a number >= 0"),
        ("anomaly_min_ms", "5ms", "must be a number"),
        ("flight_recorder_steps", -3, "must be an integer >= 0"),
    ],
)
def test_bad_fields_rejected_with_their_name(field: str, value: Any, message: str) -> None:
    from mindspeed_prof.config.validate import ConfigError, validate

    pattern = rf"profiler_config\.extensions\.{field}=.*{re.escape(message)}"
    with pytest.raises(ConfigError, match=pattern):
        validate({"extensions": {field: value}})


def test_trigger_outside_any_step_fires_and_says_when_and_how_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stage run outside any step (step None) fires like any other; the anomaly carries the
    wall time, its duration and the median in ms."""
    monkeypatch.setattr(anomaly_module, "time", SimpleNamespace(time=lambda: 1_700_000_000.5))
    trig = AnomalyTrigger(2.0, 2, max_captures=1, min_ms=0)
    for _ in range(2):
        assert trig.observe(None, "a", 10 * MS, busy=False) is None
    found = trig.observe(None, "a", 30 * MS, busy=False)
    assert found == Anomaly(None, "a", 1_700_000_000.5, 30.0, 10.0, 2.0, "capture")


class _Host:
    """What ``AnomalyPart`` uses of its profiler; flight dumps and requests written down."""

    def __init__(self, root: Path, busy: bool = False) -> None:
        self.cfg = validate(
            {
                "anomaly_factor": 2.0,
                "anomaly_window": 2,
                "anomaly_min_ms": 0,
                "anomaly_capture_steps": 2,
                "anomaly_max_captures": 5,
            }
        )
        self.rank, self.save_root = 3, root
        self.capturing, self.busy, self.step_open = False, busy, False
        self.triggers: list[Anomaly] = []
        self.dumps: list[tuple[str, int | None]] = []
        self.requests: list[Trigger] = []

    def dump_flight(self, reason: str, at: int | None = None) -> None:
        self.dumps.append((reason, at))

    def request(self, trigger: Trigger) -> None:
        self.requests.append(trigger)


def _part(host: _Host) -> AnomalyPart:
    part = AnomalyPart(cast(Any, host))
    for step in (1, 2):  # the window: 10 ms steps and actor_update stages
        part.on_stage_end("actor_update", step, 10 * MS, False)
        part.on_step_end(step, 10 * MS, False)
    return part


def test_failed_or_unmeasured_ends_are_not_measured(tmp_path: Path) -> None:
    """A failed step or stage, however slow, neither fires nor joins the window; an end
    without a duration (its range was not open) is not measured."""
    host = _Host(tmp_path)
    part = _part(host)
    part.on_stage_end("actor_update", 3, 100 * MS, True)
    part.on_step_end(3, 100 * MS, True)
    part.on_stage_end("actor_update", 4, None, False)
    part.on_step_end(4, None, False)
    assert host.triggers == [] and host.dumps == [] and host.requests == []
    part.on_step_end(5, 30 * MS, False)  # the window is still [10, 10] ms
    assert [(t.step, t.stage, t.median_ms, t.rank) for t in host.triggers] == [(5, None, 10.0, 3)]


def test_an_anomaly_while_busy_is_recorded_as_skipped_and_nothing_is_done(tmp_path: Path) -> None:
    host = _Host(tmp_path, busy=True)
    part = _part(host)
    part.on_step_end(3, 30 * MS, False)
    assert [(t.step, t.action) for t in host.triggers] == [
        (3, "skipped: another capture is active")
    ]
    assert host.dumps == [] and host.requests == []


def test_anomalies_past_the_kept_maximum_are_acted_on_but_not_kept(tmp_path: Path) -> None:
    host = _Host(tmp_path)
    host.triggers = [Anomaly(n, None, 0.0, 1.0, 1.0, 2.0, "capture") for n in range(MAX_KEPT)]
    part = _part(host)
    part.on_step_end(3, 30 * MS, False)
    assert len(host.triggers) == MAX_KEPT and host.triggers[-1].step == MAX_KEPT - 1
    assert host.dumps == [("anomaly", 3)] and host.requests == [Trigger("anomaly", 2)]


@pytest.mark.parametrize("stage,named", [(None, "(whole step)"), ("actor_update", "actor_update")])
def test_an_anomaly_warns_what_was_slow_and_where_the_next_steps_go(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stage: str | None, named: str
) -> None:
    host = _Host(tmp_path)
    part = _part(host)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        if stage is None:
            part.on_step_end(3, 30 * MS, False)
        else:
            part.on_stage_end(stage, 3, 30 * MS, False)
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: rank 3 step 3 {named} took 30.0 ms, over 2 x its median 10.0 ms: "
        f"capturing the next 2 steps under {tmp_path / 'triggered'}"
    ]
    assert host.dumps == [("anomaly", 3)] and host.requests == [Trigger("anomaly", 2)]
