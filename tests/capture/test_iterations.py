"""Iteration windows: the pure transition table, the Scheduler over random runs, and real
captures (torch on CPU at level1, the range recorder) holding only the window's iterations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.capture.iterations import Event, IterationWindow, Phase, decide
from mindspeed_prof.capture.plan import CapturePlan, Scheduler, Start, Stop


def test_table_starts_at_the_first_iteration_and_stops_after_the_last() -> None:
    w = IterationWindow(first=2, count=2)
    phase, verbs = Phase.IDLE, []
    marks: tuple[Event, Event] = ("iteration_start", "iteration_end")
    events: list[tuple[Event, int | None]] = [
        ("stage_start", None),
        *[(e, i) for i in range(5) for e in marks],
        ("stage_end", None),
    ]
    for event, i in events:
        phase, verb = decide(w, phase, event, i)
        verbs.append((event, i, verb))
    assert [(e, i) for e, i, v in verbs if v] == [("iteration_start", 2), ("iteration_end", 3)]
    assert phase is Phase.IDLE


def test_table_stage_end_inside_the_window_stops() -> None:
    w = IterationWindow(first=0, count=10)
    phase, _ = decide(w, Phase.IDLE, "stage_start")
    phase, verb = decide(w, phase, "iteration_start", 0)
    assert verb == "start"
    assert decide(w, phase, "stage_end") == (Phase.IDLE, "stop")
    assert decide(w, Phase.IDLE, "iteration_start", 3) == (Phase.IDLE, None)  # not armed


@st.composite
def runs(draw: Any) -> tuple[CapturePlan, list[list[list[int]]], set[int]]:
    """A window, and per step the target stage's executions, each its iteration numbers
    (increasing, with gaps); and iterations whose end mark never comes (a trainer that
    forgets one, or raises inside it)."""
    window = IterationWindow(draw(st.integers(0, 5)), draw(st.integers(1, 4)))
    plan = CapturePlan(
        enabled=True,
        stages=(window.stage,),
        start=1,
        end=4,
        iterations=window,
        first_only=draw(st.booleans()),
    )
    steps = []
    for _ in range(draw(st.integers(1, 3))):  # steps 1..3: all inside the plan's window
        executions = []
        for _ in range(draw(st.integers(1, 3))):
            seq, n = [], draw(st.integers(0, 3))
            for gap in draw(st.lists(st.integers(1, 3), max_size=10)):
                seq.append(n)
                n += gap
            executions.append(seq)
        steps.append(executions)
    return plan, steps, set(draw(st.lists(st.integers(0, 30), max_size=4)))


@settings(max_examples=150, deadline=None)
@given(runs())
def test_scheduler_captures_exactly_the_window_iterations(run: Any) -> None:
    plan, steps, unended = run
    window = plan.iterations
    sched = Scheduler(plan)
    got: list[tuple[int, int, list[int]]] = []  # (step, index, iterations inside)
    expected: list[tuple[int, int, list[int]]] = []
    for step, executions in enumerate(steps, 1):
        assert not sched.step_start(step)
        for index, seq in enumerate(executions):
            inside: list[int] | None = None
            assert not sched.stage_start(window.stage, step)
            for i in seq:
                for a in sched.iteration_start(i):
                    if isinstance(a, Start):
                        assert (a.capture.step, a.capture.index) == (step, index)
                        inside = []
                    else:
                        got.append((step, index, inside or []))
                        inside = None
                if inside is not None:
                    inside.append(i)
                for a in [] if i in unended else sched.iteration_end(i):
                    assert isinstance(a, Stop) and a.reason == "iteration_end"
                    got.append((step, index, inside or []))
                    inside = None
            for a in sched.stage_end(window.stage, step):
                assert isinstance(a, Stop) and a.reason == "stage_end"
                got.append((step, index, inside or []))
            want = [i for i in seq if i in window]
            if want and not (plan.first_only and index):
                expected.append((step, index, want))
        assert not sched.step_end(step)
    assert got == expected
    assert sched.active is None


def _prof(tmp_path: Path, **extensions: Any) -> Profiler:
    level = extensions.pop("level", "level1")
    return Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "profile_level": level,
                "mstx": level == "level_none",
                "profile_step_start": 1,
                "profile_step_end": 3,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "torch", **extensions},
        },
        rank=0,
    )


def _rollout(prof: Profiler, steps: int = 2, iterations: int = 6, executions: int = 1) -> None:
    import torch

    a = torch.ones(16, 16)
    with prof:
        for step in range(1, steps + 1):
            with prof.step(step):
                for _ in range(executions):
                    with prof.stage("actor_generate"):
                        for i in range(iterations):
                            with mstx.iteration(i), mstx.range(f"work{i}"):
                                torch.mm(a, a)
                with prof.stage("actor_update"):
                    torch.add(a, a)


@pytest.mark.slow
def test_level1_trace_holds_only_the_window_iterations(tmp_path: Path) -> None:
    prof = _prof(tmp_path, iteration_start=2, iteration_count=3)
    _rollout(prof)
    assert [(c.stage, c.step, c.reason, c.iterations) for c in prof.captures] == [
        ("actor_generate", s, "iteration_end", [2, 4]) for s in (1, 2)
    ]
    for c in prof.captures:
        (path,) = c.files
        events = json.loads(Path(path).read_text())["traceEvents"]
        marks = {e["name"]: e for e in events if e.get("cat") == "user_annotation"}
        assert {n for n in marks if n.startswith("work")} == {"work2", "work3", "work4"}
        lo = min(marks[f"iteration#{i}"]["ts"] for i in (2, 3, 4))
        hi = max(marks[f"iteration#{i}"]["ts"] + marks[f"iteration#{i}"]["dur"] for i in (2, 3, 4))
        mms = [e for e in events if e.get("name") == "aten::mm"]
        assert len(mms) == 3  # one per window iteration, none from the rest of the rollout
        assert all(lo <= e["ts"] and e["ts"] + e["dur"] <= hi for e in mms)
        assert not [e for e in events if e.get("name") == "aten::add"]  # not actor_update


def test_range_file_keeps_the_iteration_ranges(tmp_path: Path) -> None:
    prof = _prof(tmp_path, level="level_none", iteration_start=1, iteration_count=2)
    _rollout(prof, steps=1, iterations=4)
    (capture,) = prof.captures
    (path,) = capture.files
    events = json.loads(Path(path).read_text())["traceEvents"]
    iters = [e for e in events if e["cat"] == "iteration"]
    assert [(e["name"], e["args"]) for e in iters] == [
        ("iteration", {"step": 1, "iteration": 1}),
        ("iteration", {"step": 1, "iteration": 2}),
    ]
    assert {e["name"] for e in events if e["cat"] == "user_annotation"} == {"work1", "work2"}
    from mindspeed_prof.analysis.analyse import analyse

    result = analyse(tmp_path)  # the iteration ranges are read as ranges of that step
    rows = {r.name: r for r in tables(result).range_table}
    assert rows["iteration"].count == 2 and rows["work1"].count == 1
    assert not [w for w in tables(result).warnings if "claimed by" in w]


def test_first_microbatch_captures_each_steps_first_execution_only(tmp_path: Path) -> None:
    prof = _prof(tmp_path, level="level_none", iteration_count=1, first_microbatch=True)
    _rollout(prof, steps=2, iterations=2, executions=3)
    assert [(c.step, c.index, c.iterations) for c in prof.captures] == [
        (1, 0, [0, 0]),
        (2, 0, [0, 0]),
    ]


def test_first_microbatch_without_a_window_keeps_whole_first_executions(tmp_path: Path) -> None:
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "profile_level": "level_none",
                "mstx": True,
                "stage": "actor_generate",
                "profile_step_start": 1,
                "profile_step_end": 2,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {"backend": "torch", "first_microbatch": True},
        },
        rank=0,
    )
    _rollout(prof, steps=1, iterations=3, executions=2)
    assert [(c.index, c.reason, c.iterations) for c in prof.captures] == [(0, "stage_end", [0, 2])]


def test_iteration_marks_cost_nothing_without_a_profiler() -> None:
    with mstx.iteration(3):  # no profiler made in this test: a shared no-op
        pass
    prof = Profiler.from_config({"integrated": {"profile": False}}, rank=0)
    assert prof.iteration(1).__enter__() is None
    prof.close()


def test_a_window_stage_without_marks_is_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    prof = _prof(tmp_path, level="level_none", iteration_count=2)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"), prof:
        for step in (1, 2):
            with prof.step(step), prof.stage("actor_generate"):
                pass  # a rollout whose iterations nobody marks
    assert not prof.captures
    (line,) = [r.getMessage() for r in caplog.records]
    assert "actor_generate ran without prof.iteration marks" in line
    assert "profiler_config.extensions.iteration_count=0" in line


def test_only_live_profilers_receive_marks(tmp_path: Path) -> None:
    before = mstx._markers  # other tests' profilers still open, if any
    idle = [Profiler.from_config({"integrated": {"profile": False}}, rank=0) for _ in range(3)]
    assert mstx._markers == before  # never closed, never asked: not told about marks
    prof = _prof(tmp_path, level="level_none", iteration_count=1)
    assert mstx._markers == (*before, prof)
    prof.close()
    assert mstx._markers == before
    del idle
