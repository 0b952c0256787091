"""``Profiler`` end to end on CPU: windows, stages, ranks, failures."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from omegaconf import OmegaConf

from mindspeed_prof import ConfigError, Profiler, TrainerHook, current, mstx
from mindspeed_prof.capture.part import Part
from mindspeed_prof.capture.profiler import ProfilerError
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.config.validate import validate


def make(tmp_path: Path, rank: int = 0, **fields: Any) -> Profiler:
    cfg = {"profile": True, "profile_save_path": str(tmp_path / "out"), **fields}
    return Profiler.from_config(cfg, rank=rank)


def train(prof: Profiler, steps: range, stages: tuple[str, ...] = STAGES, fail: tuple = ()) -> None:
    for step in steps:
        with prof.step(step):
            for stage in stages:
                with prof.stage(stage):
                    torch.randn(8, 8) @ torch.randn(8, 8)
                    with mstx.range("inner"):
                        pass
                    if (step, stage) == fail:
                        raise RuntimeError("boom")


def names(path: Path) -> set[str]:
    return {e["name"] for e in json.loads(path.read_text())["traceEvents"]}


def test_stage_all_window_2_4_one_trace_with_steps_2_and_3(tmp_path: Path) -> None:
    with make(tmp_path, profile_step_start=2, profile_step_end=4) as prof:
        train(prof, range(1, 6))
    files = sorted((tmp_path / "out" / "integrated").iterdir())
    traces = [f for f in files if f.name.endswith(".pt.trace.json")]
    assert len(traces) == 1 and traces[0].name.startswith("rank0_")
    steps = {n for n in names(traces[0]) if n.startswith("ProfilerStep#")}
    assert steps == {"ProfilerStep#2", "ProfilerStep#3"}
    assert set(STAGES) <= names(traces[0])
    assert [c.steps for c in prof.captures] == [[2, 3]]


def test_stage_scoped_two_captures(tmp_path: Path) -> None:
    with make(tmp_path, stage="actor_update", profile_step_start=2, profile_step_end=4) as prof:
        train(prof, range(1, 5))
    out = tmp_path / "out"
    assert [p.name for p in out.iterdir()] == ["actor_update"]
    traces = sorted((out / "actor_update").glob("*.pt.trace.json"))
    assert [t.name.split("_step")[1] for t in traces] == ["2.pt.trace.json", "3.pt.trace.json"]
    for t in traces:
        assert "actor_update" in names(t) and "actor_generate" not in names(t)


def test_mindspeed_rl_stage_list_captures_each_stage_in_its_folder(tmp_path: Path) -> None:
    block = OmegaConf.create(
        textwrap.dedent(f"""
        profiler_config:
          integrated:
            profile: true
            stage: [actor_generate, actor_update]
            profile_step_start: 2
            profile_step_end: 4
            profile_save_path: {tmp_path / "out"}
        """)
    )
    with Profiler.from_config(block.profiler_config) as prof:
        train(prof, range(1, 5))
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["actor_generate", "actor_update"]
    for stage in ("actor_generate", "actor_update"):
        traces = sorted((out / stage).glob("*.pt.trace.json"))
        assert [t.name.split("_step")[1] for t in traces] == ["2.pt.trace.json", "3.pt.trace.json"]
        assert all(stage in names(t) for t in traces)
    assert [(c.stage, c.step) for c in prof.captures] == [
        ("actor_generate", 2),
        ("actor_update", 2),
        ("actor_generate", 3),
        ("actor_update", 3),
    ]


def test_role_captures_under_its_folder(tmp_path: Path) -> None:
    cfg = {
        "integrated": {"profile": True, "profile_save_path": str(tmp_path / "out")},
        "actor": {"stage": "actor_update"},
    }
    with Profiler.from_config(cfg, role="rollout") as rollout:
        train(rollout, range(1, 2), stages=("actor_generate",))
    with Profiler.from_config(cfg, role="actor") as actor:
        train(actor, range(1, 2))
    out = tmp_path / "out"
    assert len(list((out / "rollout").glob("*.pt.trace.json"))) == 1
    assert [p.parent.name for p in (out / "actor").rglob("*.pt.trace.json")] == ["actor_update"]
    assert {c.role for c in actor.captures} == {"actor"}


def test_current_per_role(tmp_path: Path) -> None:
    cfg = {"integrated": {"profile": True, "profile_save_path": str(tmp_path)}}
    actor = Profiler.from_config(cfg, role="actor")
    rollout = Profiler.from_config(cfg, role="rollout")
    assert current("actor") is actor and current("rollout") is rollout and current() is rollout
    rollout.close()
    assert current() is actor and current("rollout") is not rollout
    actor.close()


def test_unknown_role_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="allowed roles: integrated, actor, rollout"):
        Profiler.from_config({"integrated": {"profile": True}}, role="learner")


def test_unselected_rank_writes_nothing(tmp_path: Path) -> None:
    with make(tmp_path, rank=0, profile_ranks=[1]) as prof:
        train(prof, range(1, 4))
    assert not (tmp_path / "out").exists()
    assert prof.captures == []


def test_exception_in_stage_leaves_loadable_trace(tmp_path: Path) -> None:
    prof = make(tmp_path, mstx=True, profile_step_start=1, profile_step_end=3)
    with pytest.raises(RuntimeError, match="boom"):
        train(prof, range(1, 4), fail=(2, "actor_update"))
    files = list((tmp_path / "out" / "integrated").iterdir())
    assert len(files) == 2
    for f in files:
        assert "ProfilerStep#2" in names(f)
    assert prof.captures[0].reason == "error"


def test_mstx_ranges_only_inside_captures(tmp_path: Path) -> None:
    prof = make(
        tmp_path, mstx=True, profile_level="level_none", profile_step_start=2, profile_step_end=3
    )
    assert mstx.active_sink() is None
    with prof.step(1):
        assert mstx.active_sink() is None
    with prof.step(2):
        assert mstx.active_sink() is not None
    assert mstx.active_sink() is None
    prof.close()
    (spans,) = (tmp_path / "out" / "integrated").iterdir()
    assert spans.name.endswith(".mstx.trace.json") and "ProfilerStep#2" in names(spans)


def test_dpo_warmup_is_the_step_before_the_window(tmp_path: Path) -> None:
    """MindSpeed-LLM: warmup on step start-1, exactly [start, end) measured; none when start
    is the first step the job runs (start == 1, or a resume at start)."""
    with make(tmp_path, warmup_steps=1, profile_step_start=3, profile_step_end=5) as prof:
        train(prof, range(1, 7), stages=("actor_update",))
    assert [(c.steps, c.warmup_steps) for c in prof.captures] == [([2, 3, 4], [2])]
    with make(tmp_path, warmup_steps=1, profile_step_start=3, profile_step_end=5) as resumed:
        train(resumed, range(3, 7), stages=("actor_update",))
    with make(tmp_path, warmup_steps=1, profile_step_start=1, profile_step_end=2) as first:
        train(first, range(1, 4), stages=("actor_update",))
    assert [(c.steps, c.warmup_steps) for c in resumed.captures + first.captures] == [
        ([3, 4], []),
        ([1], []),
    ]


def test_resumed_run_keeps_global_window(tmp_path: Path) -> None:
    with make(tmp_path, profile_step_start=10, profile_step_end=12) as prof:
        train(prof, range(9, 14), stages=("actor_generate",))
    assert prof.captures[0].steps == [10, 11]


def test_profile_off_is_inert(tmp_path: Path) -> None:
    prof = Profiler.from_config({"integrated": {"profile_save_path": str(tmp_path)}})
    assert not prof.enabled
    train(prof, range(1, 3))
    assert list(tmp_path.iterdir()) == [] and mstx.active_sink() is None


def test_profiler_is_a_trainer_hook_and_current(tmp_path: Path) -> None:
    prof = make(tmp_path, stage="critic_update")
    assert isinstance(prof, TrainerHook) and current() is prof
    prof.on_step_start(1)
    prof.on_stage_start("critic_update", 1)
    prof.on_stage_end("critic_update", 1)
    prof.on_step_end(1)
    prof.on_train_end()
    assert [c.stage for c in prof.captures] == ["critic_update"]


def test_unwritable_save_path_warns_once_and_training_goes_on(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "stage": "actor_generate",
                "profile_step_end": 4,
                "profile_save_path": str(blocker / "sub"),
            }
        }
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(prof, range(1, 4))
    assert prof.failed
    assert len([w for w in caught if "mindspeed-prof" in str(w.message)]) == 1


def test_strict_fails_fast(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    prof = Profiler.from_config(
        {"profile": True, "strict": True, "profile_save_path": str(blocker / "sub")}
    )
    with pytest.raises(ProfilerError, match="capture start failed"):
        train(prof, range(1, 2))


def test_on_capture_gets_each_record_and_its_faults_stay_out_of_training(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[Any] = []

    def broken(record: Any) -> None:
        raise OSError("disk full")

    cfg = {
        "integrated": {
            "profile": True,
            "profile_save_path": str(tmp_path),
            "mstx": True,
            "stage": "actor_update",
            "profile_step_end": 3,
        }
    }
    with Profiler.from_config(cfg, on_capture=[broken, seen.append]) as prof:
        train(prof, range(1, 4))
    assert [(r.stage, r.step) for r in seen] == [("actor_update", 1), ("actor_update", 2)]
    assert seen == prof.captures and all(r.files for r in seen)
    assert [r.getMessage() for r in caplog.records if "disk full" in r.getMessage()] == [
        f"mindspeed-prof: after capture {r.files}: disk full" for r in seen
    ]


def test_two_profilers_keep_their_own_ranges(tmp_path: Path) -> None:
    long = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_end": 4,
                "profile_save_path": str(tmp_path / "long"),
            }
        },
        rank=0,
    )
    short = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_end": 2,
                "profile_save_path": str(tmp_path / "short"),
            }
        },
        rank=0,
    )
    for step in range(1, 4):
        with long.step(step), short.step(step), mstx.range(f"custom{step}"):
            pass
    long.close()
    short.close()
    (long_file,) = (tmp_path / "long" / "integrated").iterdir()
    (short_file,) = (tmp_path / "short" / "integrated").iterdir()
    assert {"custom1", "custom2", "custom3", "ProfilerStep#3"} <= names(long_file)
    assert "custom1" in names(short_file) and "custom2" not in names(short_file)
    assert mstx.active_sink() is None


class _Heard(Part):
    """A part that writes down the step and stage ends and the signals it is told about."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []
        self.captured: list[tuple[Any, str]] = []
        self.started: list[int] = []

    def on_step_start(self, step: int) -> None:
        self.started.append(step)

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        self.heard.append(("step_end", step, failed))

    def on_stage_end(self, stage: str, step: int | None, took_ns: int | None, failed: bool) -> None:
        self.heard.append(("stage_end", stage, step, failed))

    def on_signal(self, signum: int) -> None:
        self.heard.append(("signal", signum))

    def on_capture(self, record: Any, error: str) -> None:
        self.captured.append((record, error))


def test_step_end_hook_ends_a_step_that_went_well(tmp_path: Path) -> None:
    """``on_step_end(n)`` (a hook-driven trainer) is a step that did not fail: the window
    [1, 3) is one capture of steps 1 and 2 ended by the window, and parts hear failed=False."""
    prof = make(
        tmp_path, mstx=True, profile_level="level_none", profile_step_start=1, profile_step_end=3
    )
    heard = _Heard()
    prof.add_part(heard)
    for step in (1, 2, 3):
        prof.on_step_start(step)
        prof.on_step_end(step)
    prof.close()
    assert [(c.steps, c.reason) for c in prof.captures] == [([1, 2], "window_end")]
    assert heard.heard == [("step_end", 1, False), ("step_end", 2, False), ("step_end", 3, False)]


def test_stage_end_hook_ends_the_stage_under_our_name(tmp_path: Path) -> None:
    """verl's ``rollout_generate`` is our ``actor_generate``: its end hook (no step given: the
    current one) ends that stage's capture as a stage that went well."""
    prof = make(
        tmp_path,
        mstx=True,
        profile_level="level_none",
        stage="actor_generate",
        profile_step_start=1,
        profile_step_end=2,
    )
    heard = _Heard()
    prof.add_part(heard)
    prof.on_step_start(1)
    prof.on_stage_start("rollout_generate")
    prof.on_stage_end("rollout_generate")
    prof.on_step_end(1)
    prof.close()
    assert [(c.stage, c.step, c.reason) for c in prof.captures] == [
        ("actor_generate", 1, "stage_end")
    ]
    assert heard.heard == [("stage_end", "actor_generate", 1, False), ("step_end", 1, False)]


def test_a_signal_is_passed_to_every_part_with_its_number(tmp_path: Path) -> None:
    import signal

    prof = make(tmp_path, mstx=True, profile_level="level_none")
    heard = _Heard()
    prof.add_part(heard)
    prof.on_signal(signal.SIGTERM)
    prof.on_signal(signal.SIGINT)
    prof.close()
    assert heard.heard == [("signal", signal.SIGTERM), ("signal", signal.SIGINT)]


def test_parts_hear_of_a_capture_that_could_not_start(tmp_path: Path) -> None:
    """A capture whose start fails is told to the parts as a record without files, of this
    rank and role, with backend ``none`` and the error."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "stage": "actor_generate",
                "profile_save_path": str(blocker / "sub"),
            }
        },
        rank=4,
        role="rollout",
    )
    heard = _Heard()
    prof.add_part(heard)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(prof, range(1, 2), stages=("actor_generate",))
    prof.close()
    ((record, error),) = heard.captured
    assert (
        record.stage,
        record.step,
        record.index,
        record.rank,
        record.role,
        record.backend,
        record.files,
    ) == ("actor_generate", 1, 0, 4, "rollout", "none", [])
    assert error and prof.failed and heard.started == [1]
    (message,) = [str(w.message) for w in caught]
    assert message.startswith("mindspeed-prof: capture start failed (NotADirectoryError: ")


def test_parts_hear_why_the_disk_budget_skipped_a_capture(tmp_path: Path) -> None:
    prof = Profiler.from_config(
        {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "stage": "actor_update",
            "max_disk_mb": 1,
            "profile_save_path": str(tmp_path),
        },
        rank=0,
    )
    from mindspeed_prof.capture.budget import Budget

    next(p for p in prof.parts if isinstance(p, Budget)).ledger.add(1024 * 1024)  # written
    heard = _Heard()
    prof.add_part(heard)
    train(prof, range(1, 2), stages=("actor_update",))
    prof.close()
    assert [(r.step, r.backend, e) for r, e in heard.captured] == [
        (1, "none", "disk budget: 1.0 MB of max_disk_mb=1 used")
    ]


def test_an_off_profiler_with_a_bad_rank_variable_is_rank_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Profiling off but a flight recorder on: an unparsable ``RANK`` is not an error there,
    the rank is 0 (also when asked again)."""
    monkeypatch.setenv("RANK", "worker-3")
    prof = Profiler.from_config({"flight_recorder_steps": 2, "profile_save_path": str(tmp_path)})
    assert prof.rank == 0 and prof.refresh_rank() == 0
    prof.close()


def test_wake_makes_a_sleeping_profiler_live_and_a_closed_one_stays_closed(tmp_path: Path) -> None:
    """``wake`` (an on-demand request came) turns the hooks on and puts the profiler under the
    crash handler's watch; after ``close`` it does nothing."""
    from mindspeed_prof.capture import crash

    prof = Profiler.from_config({"profile_save_path": str(tmp_path)})
    assert prof.step(1) is prof.step(2) and prof not in crash._live  # the shared no-op
    prof.wake()
    assert prof.step(1) is not prof.step(2) and prof in crash._live
    prof.close()
    prof.wake()
    assert prof.step(1) is prof.step(2) and prof not in crash._live


def test_the_role_defaults_to_integrated_and_an_unusable_one_is_named(tmp_path: Path) -> None:
    cfg = validate({"profile_save_path": str(tmp_path)})
    assert Profiler(cfg).role == "integrated"
    with pytest.raises(ValueError, match=r"^role='\.\.\.': needs letters"):
        Profiler(cfg, role="...")


def test_where_the_rank_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Profiling on: RANK is read. Off but a flight recorder on: read, leniently. Off with
    nothing recording: not read (0) until ``refresh_rank`` asks again."""
    monkeypatch.setenv("RANK", "3")
    save = {"profile_save_path": str(tmp_path)}
    on = Profiler.from_config({"profile": True, **save})
    flight = Profiler.from_config({"flight_recorder_steps": 2, **save})
    off = Profiler.from_config(save)
    assert (on.enabled, on.rank, flight.enabled, flight.rank, off.rank) == (True, 3, False, 3, 0)
    monkeypatch.setenv("RANK", "5")
    assert (on.refresh_rank(), off.refresh_rank(), off.rank) == (3, 5, 5)
    for prof in (on, flight, off):
        prof.close()


def test_a_capture_file_says_which_stage_step_process_and_level(tmp_path: Path) -> None:
    import os

    with make(
        tmp_path,
        rank=2,
        mstx=True,
        profile_level="level_none",
        profile_step_start=3,
        profile_step_end=4,
    ) as prof:
        train(prof, range(1, 5), stages=("actor_update",))
    (spans,) = (tmp_path / "out" / "integrated").iterdir()
    meta = json.loads(spans.read_text())["mindspeed_prof"]
    assert (
        meta["rank"],
        meta["role"],
        meta["stage"],
        meta["step"],
        meta["pid"],
        meta["level"],
        meta["window"],
    ) == (2, "integrated", "all", 3, os.getpid(), "level_none", [3, 4])


def test_a_trace_records_the_communication_pattern_its_analysis_uses(tmp_path: Path) -> None:
    """``comm_kernels`` goes into each trace's metadata, where every later analysis (right after
    capture, or ``analyse`` anywhere) reads it; left out when unset."""
    from mindspeed_prof.analysis.analyse import analyse

    with make(tmp_path, comm_kernels="my_a2a") as prof:
        train(prof, range(1, 3), stages=("actor_update",))
    (trace,) = (tmp_path / "out" / "integrated").glob("*.pt.trace.json")
    assert json.loads(trace.read_text())["mindspeed_prof"]["comm_kernels"] == "my_a2a"
    assert analyse(trace, cache=False).traces[0].meta.comm_kernels == "my_a2a"
    with make(tmp_path / "plain") as prof:
        train(prof, range(1, 3), stages=("actor_update",))
    (trace,) = (tmp_path / "plain" / "out" / "integrated").glob("*.pt.trace.json")
    assert "comm_kernels" not in json.loads(trace.read_text())["mindspeed_prof"]
