"""The schedule inside a step: each execution's action is torch.profiler.schedule's for the same
settings; a profiled stage's executions are captured, warmed up (nothing kept) or left as it
says, on every backend, in every captured step."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.profiler import ProfilerAction, schedule

from mindspeed_prof import Profiler
from mindspeed_prof.capture.inner_schedule import InnerSchedule
from mindspeed_prof.config.validate import ConfigError, validate

DOUBLES = str(Path(__file__).resolve().parents[1] / "doubles")
TORCH = {
    ProfilerAction.NONE: "none",
    ProfilerAction.WARMUP: "warmup",
    ProfilerAction.RECORD: "record",
    ProfilerAction.RECORD_AND_SAVE: "record",
}


@pytest.mark.filterwarnings("ignore:Profiler won't be using warmup")
@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)
)
def test_each_execution_gets_torchs_action(active, skip_first, wait, warmup, repeat) -> None:
    ours = InnerSchedule(
        active=active, skip_first=skip_first, wait=wait, warmup=warmup, repeat=repeat
    )
    theirs = schedule(skip_first=skip_first, wait=wait, warmup=warmup, active=active, repeat=repeat)
    assert [ours.action(i) for i in range(40)] == [TORCH[theirs(i)] for i in range(40)]


def config(root: Path, backend: str, **schedule_fields: Any) -> dict[str, Any]:
    return {
        "integrated": {
            "profile": True,
            "stage": ["actor_update", "critic_update"],
            "profile_step_start": 1,
            "profile_step_end": 3,
            "profile_level": "level0",
            "profile_with_cpu": True,
            "profile_save_path": str(root),
        },
        "extensions": {"backend": backend, **schedule_fields},
    }


def train(prof: Profiler, executions: int = 6) -> None:
    import torch

    for step in (1, 2, 3):
        with prof.step(step):
            for _ in range(executions):  # six update mini-batches
                with prof.stage("actor_update"):
                    torch.ones(4).sum()
            with prof.stage("critic_update"):
                torch.ones(4).sum()
    prof.close()


SCHEDULE = {
    "schedule_skip_first": 1,
    "schedule_wait": 1,
    "schedule_warmup": 1,
    "schedule_active": 2,
    "schedule_stage": "actor_update",
}


@pytest.mark.parametrize("backend", ["none", "torch"])
def test_executions_captured_as_scheduled_in_every_step(tmp_path: Path, backend: str) -> None:
    prof = Profiler.from_config(config(tmp_path, backend, **SCHEDULE), rank=0)
    train(prof)
    got = sorted((c.stage, c.step, c.index) for c in prof.captures)
    # skip 0, wait 1, warmup 2 (discarded), record 3 and 4, wait 5; critic_update not walked
    assert got == sorted(
        [("actor_update", s, i) for s in (1, 2) for i in (3, 4)]
        + [("critic_update", s, 0) for s in (1, 2)]
    )
    written = sorted(
        p.name for p in (tmp_path / "actor_update").iterdir() if not p.name.startswith(".")
    )
    assert len(written) == 4 and all("_step1_" in n or "_step2_" in n for n in written)
    assert not any(n.endswith(("_2.mstx.trace.json", "_2.pt.trace.json")) for n in written)


def test_no_schedule_captures_every_execution(tmp_path: Path) -> None:
    prof = Profiler.from_config(config(tmp_path, "none"), rank=0)
    train(prof, executions=3)
    assert len([c for c in prof.captures if c.stage == "actor_update"]) == 6


def test_torch_npu_warmup_runs_the_profiler_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(DOUBLES)
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        monkeypatch.delitem(sys.modules, name)
    import torch_npu

    torch_npu.profiler.profiler.CREATED.clear()
    try:
        prof = Profiler.from_config(config(tmp_path, "torch_npu", **SCHEDULE), rank=0)
        train(prof)
        created = torch_npu.profiler.profiler.CREATED
        # 2 steps x (a warmup and two captures of actor_update, one critic_update)
        assert len(created) == 8
        folders = sorted((tmp_path / "actor_update").glob("*_ascend_pt"))
        assert len(folders) == 4 and len(prof.captures) == 6
        assert all(f.is_dir() for c in prof.captures for f in map(Path, c.files))
    finally:
        for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
            sys.modules.pop(name, None)


def test_a_schedule_without_active_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"extensions.schedule_active=0: the schedule is off"):
        validate({"integrated": {"profile": True}, "extensions": {"schedule_wait": 2}})
    with pytest.raises(ConfigError, match=r"schedule_stage='x'"):
        validate(
            {
                "integrated": {"profile": True},
                "extensions": {"schedule_active": 1, "schedule_stage": "x"},
            }
        )
