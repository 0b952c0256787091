"""Unplanned captures (anomaly and on-demand ``Trigger``s) fed straight to the ``Scheduler``.

Each test states the expected actions by hand, event by event: a trigger of ``n`` steps
captures the ``n`` steps from the step start that takes it, waits while any capture is active,
and hands over to and from the planned window at step boundaries.
"""

from __future__ import annotations

from typing import Literal

from mindspeed_prof.capture.plan import (
    ALL,
    Capture,
    CapturePlan,
    Scheduler,
    Start,
    Stop,
    StopReason,
    Trigger,
    TriggerReason,
)

#: A capture's trigger ("" when planned).
Why = TriggerReason | Literal[""]

OFF = CapturePlan(enabled=False)
UPDATE = "actor_update"
GENERATE = "actor_generate"


def start(stage: str, step: int, index: int = 0, trigger: Why = "") -> Start:
    return Start(Capture(stage, step, index, trigger))


def stop(reason: StopReason, stage: str, step: int, index: int = 0, trigger: Why = "") -> Stop:
    return Stop(Capture(stage, step, index, trigger), reason)


def test_whole_step_trigger_captures_its_steps_from_the_next_step_start() -> None:
    sched = Scheduler(OFF)
    assert not sched.busy
    sched.request(Trigger("anomaly", 3))
    assert sched.busy and sched.active is None
    assert sched.step_start(5) == [start(ALL, 5, trigger="anomaly")]
    assert sched.step_end(5) == []
    assert sched.step_start(6) == [] and sched.step_end(6) == []
    assert sched.step_start(7) == []
    assert sched.busy
    assert sched.step_end(7) == [stop("trigger_end", ALL, 5, trigger="anomaly")]
    assert not sched.busy
    assert sched.step_start(8) == [] and sched.step_end(8) == []


def test_one_step_trigger_stops_at_that_step_end() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 1))
    assert sched.step_start(2) == [start(ALL, 2, trigger="on_demand")]
    assert sched.step_end(2) == [stop("trigger_end", ALL, 2, trigger="on_demand")]
    assert sched.step_start(3) == []


def test_trigger_ends_at_a_step_start_past_its_steps_when_steps_are_skipped() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("anomaly", 3))
    assert sched.step_start(5) == [start(ALL, 5, trigger="anomaly")]
    assert sched.step_end(5) == []
    assert sched.step_start(7) == []  # step 6 skipped; 7 is still one of 5, 6, 7
    assert sched.step_start(8) == [stop("trigger_end", ALL, 5, trigger="anomaly")]
    assert not sched.busy
    assert sched.step_end(8) == []


def test_failed_step_stops_the_trigger_and_the_next_one_starts_after() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("anomaly", 3))
    sched.request(Trigger("on_demand", 1, ident="r1"))
    assert sched.step_start(1) == [start(ALL, 1, trigger="anomaly")]
    assert sched.step_end(1, failed=True) == [stop("error", ALL, 1, trigger="anomaly")]
    assert sched.busy  # the on-demand request still waits
    assert sched.step_start(2) == [start(ALL, 2, trigger="on_demand")]
    assert sched.trigger is not None and sched.trigger.ident == "r1"
    assert sched.step_end(2) == [stop("trigger_end", ALL, 2, trigger="on_demand")]
    assert not sched.busy


def test_queued_triggers_run_one_after_the_other_in_order() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 1, ident="a"))
    sched.request(Trigger("anomaly", 2, ident="b"))
    assert sched.step_start(1) == [start(ALL, 1, trigger="on_demand")]
    assert sched.step_end(1) == [stop("trigger_end", ALL, 1, trigger="on_demand")]
    assert sched.step_start(2) == [start(ALL, 2, trigger="anomaly")]
    assert sched.step_end(2) == []
    assert sched.step_start(3) == []
    assert sched.step_end(3) == [stop("trigger_end", ALL, 2, trigger="anomaly")]


def test_request_during_the_planned_window_waits_for_its_end() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=1, end=3))
    assert sched.step_start(1) == [start(ALL, 1)]
    sched.request(Trigger("anomaly", 2))
    assert sched.step_end(1) == []
    assert sched.step_start(2) == []
    assert sched.step_end(2) == [stop("window_end", ALL, 1)]
    assert sched.step_start(3) == [start(ALL, 3, trigger="anomaly")]
    assert sched.step_end(3) == []
    assert sched.step_start(4) == []
    assert sched.step_end(4) == [stop("trigger_end", ALL, 3, trigger="anomaly")]


def test_request_taken_at_the_step_start_that_leaves_the_window() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=1, end=3))
    assert sched.step_start(1) == [start(ALL, 1)]
    sched.request(Trigger("on_demand", 1))
    assert sched.step_end(1) == []
    # the trainer resumes past the window without ending it at a step end
    assert sched.step_start(6) == [stop("left_window", ALL, 1), start(ALL, 6, trigger="on_demand")]
    assert sched.step_end(6) == [stop("trigger_end", ALL, 6, trigger="on_demand")]


def test_trigger_running_into_the_planned_window_hands_over_at_a_step_end() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=3, end=6))
    sched.request(Trigger("anomaly", 3))
    assert sched.step_start(1) == [start(ALL, 1, trigger="anomaly")]
    for step in (1, 2):
        assert sched.step_end(step) == []
        assert sched.step_start(step + 1) == []
    # step 3 belongs to the trigger: the planned capture starts with the next step
    assert sched.step_end(3) == [stop("trigger_end", ALL, 1, trigger="anomaly")]
    assert sched.step_start(4) == [start(ALL, 4)]
    assert sched.step_end(4) == []
    assert sched.step_start(5) == []
    assert sched.step_end(5) == [stop("window_end", ALL, 4)]
    assert sched.step_start(6) == [] and sched.step_end(6) == []


def test_trigger_ending_at_a_step_start_hands_over_to_the_planned_window() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=4, end=6))
    sched.request(Trigger("on_demand", 2))
    assert sched.step_start(1) == [start(ALL, 1, trigger="on_demand")]
    assert sched.step_end(1) == []
    assert sched.step_start(4) == [stop("trigger_end", ALL, 1, trigger="on_demand"), start(ALL, 4)]
    assert sched.step_end(4) == []
    assert sched.step_end(5) == [stop("window_end", ALL, 4)]


def test_trigger_after_the_planned_window_does_not_restart_it() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=1, end=3))
    assert sched.step_start(1) == [start(ALL, 1)]
    assert sched.step_end(1) == []
    assert sched.step_start(2) == []
    sched.request(Trigger("anomaly", 1))
    assert sched.step_end(2, failed=True) == [stop("error", ALL, 1)]
    assert sched.step_start(3) == [start(ALL, 3, trigger="anomaly")]
    assert sched.step_end(3) == [stop("trigger_end", ALL, 3, trigger="anomaly")]
    assert sched.step_start(2) == []  # back in the window's steps: the window is done


def test_stage_trigger_captures_each_execution_of_its_stage() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 2, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.busy and sched.active is None
    assert sched.stage_start(GENERATE, 1) == []
    assert sched.stage_end(GENERATE, 1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, 0, "on_demand")]
    assert sched.stage_start(GENERATE, 1) == []  # another stage inside: part of the capture
    assert sched.stage_end(GENERATE, 1) == []
    assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1, 0, "on_demand")]
    for index in (1, 2):
        assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, index, "on_demand")]
        assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1, index, "on_demand")]
    assert sched.step_end(1) == []
    assert sched.step_start(2) == []
    assert sched.stage_start(UPDATE, 2) == [start(UPDATE, 2, 0, "on_demand")]
    assert sched.stage_end(UPDATE, 2, failed=True) == [stop("error", UPDATE, 2, 0, "on_demand")]
    assert sched.step_end(2) == []
    assert not sched.busy
    assert sched.step_start(3) == []
    assert sched.stage_start(UPDATE, 3) == [] and sched.stage_end(UPDATE, 3) == []


def test_stage_trigger_ends_at_a_step_start_past_its_steps_when_steps_are_skipped() -> None:
    sched = Scheduler(CapturePlan(enabled=True, stages=(UPDATE,), start=4, end=5))
    sched.request(Trigger("anomaly", 2, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, 0, "anomaly")]
    assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1, 0, "anomaly")]
    assert sched.step_end(1) == []
    assert sched.step_start(4) == []  # nothing open to stop; the planned stage is next
    assert not sched.busy
    assert sched.stage_start(UPDATE, 4) == [start(UPDATE, 4)]


def test_stage_trigger_nested_in_itself_stops_at_the_outer_exit() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("anomaly", 1, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, 0, "anomaly")]
    assert sched.stage_start(UPDATE, 1) == []
    assert sched.stage_start(UPDATE, 1) == []
    assert sched.stage_end(UPDATE, 1) == []
    assert sched.stage_end(UPDATE, 1) == []
    assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1, 0, "anomaly")]
    assert sched.step_end(1) == []


def test_stage_trigger_ignores_stages_outside_a_step() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 1, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, None) == []
    assert sched.stage_end(UPDATE, None) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, 0, "on_demand")]


def test_stage_left_open_is_stopped_at_the_step_end() -> None:
    """A hook-driven trainer may miss a stage's end: the step end closes its capture, and the
    nesting count starts again from zero."""
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 2, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1, 0, "on_demand")]
    assert sched.stage_start(UPDATE, 1) == []
    assert sched.step_end(1) == [stop("step_end", UPDATE, 1, 0, "on_demand")]
    assert sched.step_start(2) == []
    assert sched.stage_start(UPDATE, 2) == [start(UPDATE, 2, 0, "on_demand")]
    assert sched.stage_end(UPDATE, 2) == [stop("stage_end", UPDATE, 2, 0, "on_demand")]
    assert sched.stage_start(UPDATE, 2) == [start(UPDATE, 2, 1, "on_demand")]
    assert sched.step_end(2) == [stop("trigger_end", UPDATE, 2, 1, "on_demand")]


def test_planned_stage_left_open_is_stopped_at_the_step_end() -> None:
    sched = Scheduler(CapturePlan(enabled=True, stages=(UPDATE,), start=1, end=3))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1)]
    assert sched.stage_start(UPDATE, 1) == []
    assert sched.step_end(1) == [stop("step_end", UPDATE, 1)]
    assert sched.step_start(2) == []
    assert sched.stage_start(UPDATE, 2) == [start(UPDATE, 2)]
    assert sched.stage_end(UPDATE, 2) == [stop("stage_end", UPDATE, 2)]
    assert sched.step_end(2) == []


def test_planned_stage_capture_holds_other_stages_run_inside_it() -> None:
    sched = Scheduler(CapturePlan(enabled=True, stages=(UPDATE,), start=1, end=2))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1)]
    assert sched.stage_start(GENERATE, 1) == []
    assert sched.stage_end(GENERATE, 1) == []  # not a target: the capture goes on
    assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1)]


def test_whole_step_trigger_takes_over_planned_stage_captures_for_its_steps() -> None:
    sched = Scheduler(CapturePlan(enabled=True, stages=(UPDATE,), start=1, end=4))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == [start(UPDATE, 1)]
    sched.request(Trigger("anomaly", 1))
    assert sched.stage_end(UPDATE, 1) == [stop("stage_end", UPDATE, 1)]
    assert sched.step_end(1) == []
    assert sched.step_start(2) == [start(ALL, 2, trigger="anomaly")]
    assert sched.stage_start(UPDATE, 2) == []  # inside the whole-step capture
    assert sched.stage_end(UPDATE, 2) == []
    assert sched.step_end(2) == [stop("trigger_end", ALL, 2, trigger="anomaly")]
    assert sched.step_start(3) == []
    assert sched.stage_start(UPDATE, 3) == [start(UPDATE, 3)]
    assert sched.stage_end(UPDATE, 3) == [stop("stage_end", UPDATE, 3)]


def test_stage_trigger_replaces_the_planned_stages_for_its_steps() -> None:
    sched = Scheduler(CapturePlan(enabled=True, stages=(UPDATE, GENERATE), start=1, end=4))
    sched.request(Trigger("on_demand", 1, stage=GENERATE))
    assert sched.step_start(1) == []
    assert sched.stage_start(UPDATE, 1) == []  # a planned target, but the trigger decides
    assert sched.stage_end(UPDATE, 1) == []
    assert sched.stage_start(GENERATE, 1) == [start(GENERATE, 1, 0, "on_demand")]
    assert sched.stage_end(UPDATE, 1) == []  # not the triggered stage: no stop
    assert sched.stage_end(GENERATE, 1) == [stop("stage_end", GENERATE, 1, 0, "on_demand")]
    assert sched.step_end(1) == []
    assert sched.step_start(2) == []
    assert sched.stage_start(GENERATE, 2) == [start(GENERATE, 2)]
    assert sched.stage_end(GENERATE, 2) == [stop("stage_end", GENERATE, 2)]


def test_close_stops_the_trigger_and_drops_the_queue() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("anomaly", 5))
    sched.request(Trigger("on_demand", 1))
    assert sched.step_start(1) == [start(ALL, 1, trigger="anomaly")]
    assert sched.close() == [stop("close", ALL, 1, trigger="anomaly")]
    assert not sched.busy
    assert sched.step_start(2) == [] and sched.step_end(2) == []


def test_close_with_only_a_waiting_request_stops_nothing() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 1))
    assert sched.close() == []
    assert not sched.busy
    assert sched.step_start(1) == []


def test_close_during_a_stage_trigger_between_executions() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 2, stage=UPDATE))
    assert sched.step_start(1) == []
    assert sched.busy
    assert sched.close() == []
    assert not sched.busy
    assert sched.stage_start(UPDATE, 1) == []


def test_close_stops_a_planned_capture() -> None:
    sched = Scheduler(CapturePlan(enabled=True, start=1, end=5))
    assert sched.step_start(1) == [start(ALL, 1)]
    assert sched.close() == [stop("close", ALL, 1)]
    assert sched.close() == []


def test_a_trigger_with_a_start_step_waits_for_it() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 2, start=7))
    assert sched.busy  # queued: an anomaly would not fire over it
    for step in (5, 6):
        assert sched.step_start(step) == [] and sched.step_end(step) == []
    assert sched.step_start(7) == [start(ALL, 7, trigger="on_demand")]
    assert sched.step_end(7) == []
    assert sched.step_start(8) == [] and sched.step_end(8) == [
        stop("trigger_end", ALL, 7, trigger="on_demand")
    ]


def test_a_late_start_still_captures_all_its_steps() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 2, start=7))
    assert sched.step_start(9) == [start(ALL, 9, trigger="on_demand")]  # this rank came late
    assert sched.step_end(9) == []
    assert sched.step_start(10) == [] and sched.step_end(10) == [
        stop("trigger_end", ALL, 9, trigger="on_demand")
    ]


def test_a_due_trigger_does_not_wait_behind_one_that_is_not() -> None:
    sched = Scheduler(OFF)
    sched.request(Trigger("on_demand", 1, start=50))
    sched.request(Trigger("anomaly", 1))
    assert sched.step_start(3) == [start(ALL, 3, trigger="anomaly")]
    assert sched.step_end(3) == [stop("trigger_end", ALL, 3, trigger="anomaly")]
    assert sched.step_start(50) == [start(ALL, 50, trigger="on_demand")]
