"""Property tests of the pure capture decisions (``Scheduler``) over random runs."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.capture.plan import ALL, Capture, CapturePlan, Scheduler, Start, Stop, Trigger
from mindspeed_prof.config.schema import STAGES, IntegratedConfig, Stage

stages = st.sampled_from(STAGES)


@st.composite
def runs(draw):
    """A plan and a run: resumed at any step, with gaps, repeated and nested stages, a failure.

    The plan captures whole steps, or one stage or a list of stages (``stage: [a, b]``).
    """
    start = draw(st.integers(1, 6))
    end = draw(st.integers(start + 1, start + 5))
    warmup = draw(st.integers(0, 2))
    targets = draw(st.one_of(st.just([ALL]), st.lists(stages, min_size=1, max_size=3, unique=True)))
    listed = draw(
        st.one_of(
            st.none(),
            st.lists(st.integers(1, 14), min_size=1, max_size=5, unique=True).map(
                lambda v: tuple(sorted(v))
            ),
        )
    )
    plan = CapturePlan(
        enabled=True,
        stages=tuple(targets),
        start=start,
        end=end,
        warmup=0 if listed else warmup,
        steps=listed,
        one_per_step=draw(st.booleans()),
    )
    first = draw(st.integers(1, 8))
    gaps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=10))
    steps, n = [], first
    for g in gaps:
        steps.append(n)
        n += g
    # (stage, stage nested inside it or None)
    body = {s: draw(st.lists(st.tuples(stages, st.none() | stages), max_size=5)) for s in steps}
    fail_at = draw(st.one_of(st.none(), st.sampled_from(steps)))
    return plan, steps, body, fail_at


def in_window(plan: CapturePlan, step: int) -> bool:
    """The window rule, stated here independently of ``CapturePlan.in_window``: the listed
    steps, else steps ``start .. end - 1`` plus the ``warmup`` steps just before ``start``
    (never step 0 or less: steps are 1-based)."""
    if plan.steps:
        return plan.enabled and step in plan.steps
    return plan.enabled and max(1, plan.start - plan.warmup) <= step <= plan.end - 1


def simulate(plan, steps, body, fail_at):
    """Feed the run to a Scheduler; return actions and the (step, stage) executions it should
    capture: a target stage, or a target nested in a stage that is not one.

    The step ``fail_at`` raises: inside its first stage when it has stages, else in the step
    body outside any stage. Either way the step ends failed and the run stops there.
    """
    sched, actions, expected = Scheduler(plan), [], []
    for step in steps:
        actions += sched.step_start(step)
        failed = False
        for stage, inner in body[step]:
            actions += sched.stage_start(stage, step)
            if in_window(plan, step) and stage in plan.stages:
                expected.append((step, stage))
            elif in_window(plan, step) and inner in plan.stages:
                expected.append((step, inner))
            if inner is not None:  # inside a captured stage: part of the outer capture
                actions += sched.stage_start(inner, step)
                actions += sched.stage_end(inner, step)
            if fail_at == step:
                actions += sched.stage_end(stage, step, failed=True)
                failed = True
                break
            actions += sched.stage_end(stage, step)
        failed = failed or fail_at == step
        actions += sched.step_end(step, failed=failed)
        if failed:
            break
    actions += sched.close()
    return sched, actions, expected


@settings(max_examples=300, deadline=None)
@given(runs())
def test_starts_and_stops_alternate(run) -> None:
    sched, actions, _ = simulate(*run)
    kinds = [type(a) for a in actions]
    assert kinds == [Start, Stop] * (len(kinds) // 2)
    for start, stop in zip(actions[::2], actions[1::2]):
        assert start.capture == stop.capture
    assert sched.active is None


@settings(max_examples=300, deadline=None)
@given(runs())
def test_every_capture_starts_inside_the_window(run) -> None:
    plan = run[0]
    _, actions, _ = simulate(*run)
    for a in actions:
        if isinstance(a, Start):
            assert in_window(plan, a.capture.step)


def expected_runs(plan: CapturePlan, ran: list[int]) -> list[list[int]]:
    """The whole-step captures a run should make: the window steps that ran, split where a
    step ran whose next one (step + 1) is not in the window (the window's or a listed run's
    end), or where the trainer left the window; one step each with ``one_per_step``."""
    out: list[list[int]] = []
    current: list[int] = []
    for step in ran:
        if not in_window(plan, step):
            if current:
                out.append(current)
            current = []
            continue
        current.append(step)
        if plan.one_per_step or not in_window(plan, step + 1):
            out.append(current)
            current = []
    return out + ([current] if current else [])


@settings(max_examples=400, deadline=None)
@given(runs())
def test_stage_all_captures_each_run_of_window_steps_that_ran(run) -> None:
    plan, steps, body, fail_at = run
    if plan.stages != (ALL,):
        return
    sched, actions, _ = simulate(*run)
    ran = steps if fail_at is None else steps[: steps.index(fail_at) + 1]
    want = expected_runs(plan, ran)
    starts = [a.capture.step for a in actions if isinstance(a, Start)]
    assert starts == [r[0] for r in want]
    for (_start, stop), steps_of in zip(zip(actions[::2], actions[1::2]), want):
        last = steps_of[-1]
        if fail_at == last:
            assert stop.reason == "error"
        elif plan.one_per_step and in_window(plan, last + 1):
            assert stop.reason == "step_end"
        elif not in_window(plan, last + 1):
            assert stop.reason == "window_end"
        else:
            assert stop.reason in ("left_window", "close")


@settings(max_examples=200, deadline=None)
@given(runs())
def test_warmup_steps_are_those_before_start(run) -> None:
    plan = run[0]
    _, actions, _ = simulate(*run)
    for a in actions:
        if isinstance(a, Start):
            assert plan.is_warmup(a.capture.step) == (
                not plan.steps and a.capture.step < plan.start
            )


@settings(max_examples=300, deadline=None)
@given(runs())
def test_stage_scoped_is_one_capture_per_execution(run) -> None:
    plan = run[0]
    if plan.stages == (ALL,):
        return
    _, actions, expected = simulate(*run)
    starts = [a.capture for a in actions if isinstance(a, Start)]
    assert [(c.step, c.stage) for c in starts] == expected
    per_step: dict[tuple[int, str], list[int]] = {}
    for c in starts:
        per_step.setdefault((c.step, c.stage), []).append(c.index)
    assert all(ix == list(range(len(ix))) for ix in per_step.values())


@settings(max_examples=100, deadline=None)
@given(runs(), st.integers(0, 7), st.lists(st.integers(0, 7), min_size=1, max_size=3))
def test_unselected_rank_never_captures(run, rank, ranks) -> None:
    plan, *rest = run
    cfg = IntegratedConfig(
        profile=True,
        profile_ranks=sorted(set(ranks)),
        profile_step_start=plan.start,
        profile_step_end=plan.end,
    )
    selected = CapturePlan.from_config(cfg, rank)
    assert selected.enabled == (rank in ranks)
    if not selected.enabled:
        _, actions, _ = simulate(selected, *rest)
        assert actions == []


def whole_run(plan: CapturePlan, steps: list[int]) -> list[tuple[list[int], str]]:
    """(steps, stop reason) of each capture of a trainer running ``steps`` in order."""
    sched = Scheduler(plan)
    out: list[tuple[list[int], str]] = []
    current: list[int] = []
    for step in steps:
        for a in sched.step_start(step):
            current = [step] if isinstance(a, Start) else current
        if sched.active is not None and current and current[-1] != step:
            current.append(step)
        for a in sched.step_end(step):
            assert isinstance(a, Stop)
            out.append((current, a.reason))
    return out


def test_dpo_warmup_is_the_step_before_start_as_mindspeed_llm() -> None:
    # MindSpeed-LLM: skip_first = start - iteration - 2, warmup 1, active = end - start
    plan = CapturePlan(enabled=True, start=3, end=5, warmup=1)
    assert plan.captured_steps() == [2, 3, 4] and plan.first == 2
    assert [s for s in plan.captured_steps() if plan.is_warmup(s)] == [2]
    assert whole_run(plan, [1, 2, 3, 4, 5]) == [([2, 3, 4], "window_end")]
    # resumed at start (iteration = start - 1), or start == 1: warmup = 0, [start, end) only
    assert whole_run(plan, [3, 4, 5]) == [([3, 4], "window_end")]
    first = CapturePlan(enabled=True, start=1, end=2, warmup=1)
    assert first.captured_steps() == [1] and not first.is_warmup(1)
    assert whole_run(first, [1, 2]) == [([1], "window_end")]


def test_listed_steps_one_capture_per_run_or_per_step() -> None:
    listed = CapturePlan(enabled=True, steps=(2, 3, 6))
    assert whole_run(listed, list(range(1, 8))) == [([2, 3], "window_end"), ([6], "window_end")]
    per_step = CapturePlan(enabled=True, steps=(2, 3, 6), one_per_step=True)
    assert whole_run(per_step, list(range(1, 8))) == [
        ([2], "step_end"),
        ([3], "window_end"),
        ([6], "window_end"),
    ]
    window = CapturePlan(enabled=True, start=2, end=4, one_per_step=True)
    assert whole_run(window, [1, 2, 3, 4]) == [([2], "step_end"), ([3], "window_end")]
    assert [listed.run_end(s) for s in (2, 3, 6)] == [4, 4, 7]
    assert [per_step.run_end(s) for s in (2, 3, 6)] == [3, 4, 7]


def test_a_step_number_that_comes_again_is_not_captured_twice() -> None:
    plan = CapturePlan(enabled=True, start=2, end=4)
    assert whole_run(plan, [1, 2, 3, 2, 3, 4]) == [([2, 3], "window_end")]


def test_from_config_maps_listed_and_discrete_steps() -> None:
    cfg = IntegratedConfig(profile=True, profile_steps=[2, 5], profile_continuous_steps=False)
    plan = CapturePlan.from_config(cfg, 0)
    assert plan.steps == (2, 5) and plan.one_per_step and plan.captured_steps() == [2, 5]
    # the disk budget keeps a window one capture (it splits one only where it must, and says so)
    assert not CapturePlan.from_config(
        IntegratedConfig(profile=True, max_disk_mb=1), 0
    ).one_per_step
    assert not CapturePlan.from_config(IntegratedConfig(profile=True), 0).one_per_step


def test_profile_off_plan_is_disabled() -> None:
    assert not CapturePlan.from_config(IntegratedConfig(), 0).enabled
    assert CapturePlan(enabled=False, start=2, end=4).captured_steps() == []


def test_plan_takes_one_stage_or_a_list() -> None:
    one = CapturePlan.from_config(IntegratedConfig(profile=True, stage=Stage.actor_update), 0)
    assert one.stages == ("actor_update",) and not one.whole_steps
    both = CapturePlan.from_config(
        IntegratedConfig(profile=True, stage=[Stage.actor_generate, "actor_update"]), 0
    )
    assert both.stages == ("actor_generate", "actor_update")
    assert CapturePlan.from_config(IntegratedConfig(profile=True), 0).whole_steps


def test_one_capture_per_step_when_asked() -> None:
    plan = CapturePlan(enabled=True, start=2, end=5, one_per_step=True)
    sched = Scheduler(plan)
    actions = []
    for step in range(1, 7):
        actions += sched.step_start(step) + sched.step_end(step)
    assert [(type(a).__name__, a.capture.step) for a in actions] == [
        ("Start", 2),
        ("Stop", 2),
        ("Start", 3),
        ("Stop", 3),
        ("Start", 4),
        ("Stop", 4),
    ]
    assert [a.reason for a in actions if isinstance(a, Stop)] == [
        "step_end",
        "step_end",
        "window_end",
    ]


def _quiet(sched: Scheduler) -> bool:
    """Nothing planned, queued or running, stated from the scheduler's fields."""
    return (
        not sched.plan.enabled
        and sched.active is None
        and sched.trigger is None
        and not sched.pending
    )


@settings(max_examples=300, deadline=None)
@given(
    runs(),
    st.booleans(),
    st.dictionaries(
        st.integers(1, 30),
        st.tuples(
            st.integers(1, 3), st.sampled_from([ALL, *STAGES]), st.none() | st.integers(1, 30)
        ),
    ),
)
def test_idle_is_kept_and_an_idle_step_decides_nothing(run, planned, requests) -> None:
    """``idle`` (what the step hooks read instead of calling ``step_start``/``step_end``)
    equals its rule after every event, planned or not, with requests queued at any step; and
    while it holds, a step's start and end return nothing and change nothing."""
    plan, steps, body, fail_at = run
    if not planned:
        plan = CapturePlan(enabled=False)
    sched = Scheduler(plan)

    def step_hook(call, *args):
        if sched.idle:
            before = copy.deepcopy(sched)
            assert call(*args) == [] and sched == before
        else:
            call(*args)
        assert sched.idle == _quiet(sched)

    for step in steps:
        if step in requests:
            n, stage, start = requests[step]
            sched.request(Trigger("on_demand", n, stage, start=start))
            assert sched.idle == _quiet(sched) and not sched.idle
        step_hook(sched.step_start, step)
        for stage, _ in body[step]:
            sched.stage_start(stage, step)
            assert sched.idle == _quiet(sched)
            sched.stage_end(stage, step, failed=fail_at == step)
            assert sched.idle == _quiet(sched)
        step_hook(sched.step_end, step, fail_at == step)
    sched.close()
    assert sched.idle == (not plan.enabled)


class _NoShortcut(Scheduler):
    """The scheduler without its in-window shortcut: every step start and end decided in full."""

    def _start(self, capture):
        started = super()._start(capture)
        self._lo = self._hi = 0
        return started


def _fields(sched: Scheduler) -> dict:
    return {k: v for k, v in vars(sched).items() if k not in ("_lo", "_hi")}


@settings(max_examples=400, deadline=None)
@given(
    runs(),
    st.lists(
        st.tuples(st.integers(1, 14), st.booleans(), st.integers(0, 3), st.integers(0, 15)),
        min_size=1,
        max_size=14,
    ),
)
def test_the_in_window_shortcut_decides_as_the_full_rules(run, events) -> None:
    """Steps in any order (again, backwards, gaps), failed ones, a part's cut of the window
    and requests queued at any step: the scheduler with its shortcut for steps inside the
    active capture's window returns the same actions and ends in the same state, event by
    event, as one that decides every step in full."""
    plan = run[0]
    fast, full = Scheduler(plan), _NoShortcut(plan)
    for step, failed, cut, request in events:
        if 1 <= request <= 3:  # a request now and then: the shortcut is left until it is done
            for s in (fast, full):
                s.request(Trigger("on_demand", request, ALL, start=step + 1))
        started = fast.step_start(step)
        assert started == full.step_start(step)
        if cut and any(isinstance(a, Start) for a in started):
            fast.cut = full.cut = step + cut - 1  # as a part that splits the window does
        assert _fields(fast) == _fields(full)
        assert fast.step_end(step, failed) == full.step_end(step, failed)
        assert _fields(fast) == _fields(full)
    assert fast.close() == full.close()
    assert _fields(fast) == _fields(full)


def test_the_shortcut_covers_the_window_steps_of_the_active_capture() -> None:
    """The shortcut is taken (a capture over the window, nothing queued) and left when a
    request is queued or the capture stops; the run of listed steps bounds it."""
    sched = Scheduler(CapturePlan(enabled=True, steps=(2, 3, 4, 7)))
    assert sched.step_start(2) == [Start(Capture(ALL, 2))] and (sched._lo, sched._hi) == (2, 5)
    assert sched.step_end(2) == [] and sched.step_start(3) == [] and sched.step_end(3) == []
    sched.request(Trigger("on_demand", 1))
    assert sched._hi == 0 and sched.step_start(4) == [] and sched.step_end(4) != []
    assert CapturePlan(enabled=True, start=3, end=9).run_end(5) == 9
    assert CapturePlan(enabled=True, start=3, end=9, one_per_step=True).run_end(5) == 6
    assert CapturePlan(enabled=True, steps=(2, 3, 4, 7)).run_end(1) == 5
