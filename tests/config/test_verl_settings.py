"""verl's settings beyond what to capture, on its real trees (the 0.9.0 and 0.9.1 wheels) and on
main's shape: the update loop's schedule, the finish hook, relocated results, the memory window
and OOM snapshots map onto ours; what does not map is named in one line; a role the tree has no
block for is off."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from mindspeed_prof.config import verl
from mindspeed_prof.config.verl import from_verl, verl_fields
from mindspeed_prof.config.verl_settings import UPDATE_STAGES

ACTOR = "actor_rollout_ref.actor.profiler"


@pytest.fixture(autouse=True)
def fresh_job(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test a job of its own: its lines are said once in it."""
    monkeypatch.setattr(verl, "_warned", set())


def composed(tree: Path, *overrides: str) -> Any:
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(tree), version_base=None):
            return compose("ppo_trainer", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def torch_actor(*overrides: str) -> list[str]:
    return [
        "global_profiler.tool=torch",
        "global_profiler.steps=[2]",
        f"{ACTOR}.enable=true",
        *overrides,
    ]


def test_a_role_without_a_block_is_off(verl_release: tuple[str, Path]) -> None:
    _, tree = verl_release
    cfg = composed(tree, *torch_actor())
    for role in ("reward_model", "reward"):
        assert verl_fields(cfg, role) == {"profile": False}
        assert not from_verl(cfg, role).profile
    assert from_verl(cfg, "actor").profile


def test_the_update_schedule_maps_for_discrete_captures(verl_release: tuple[str, Path]) -> None:
    _, tree = verl_release
    schedule = f"{ACTOR}.tool_config.torch.schedule"
    cfg = composed(
        tree,
        *torch_actor(
            f"{ACTOR}.tool_config.torch.discrete=true",
            f"{schedule}.skip_first=1",
            f"{schedule}.wait=1",
            f"{schedule}.warmup=1",
            f"{schedule}.active=2",
            f"{schedule}.repeat=1",
        ),
    )
    c = from_verl(cfg, "actor")
    assert (
        c.schedule_skip_first,
        c.schedule_wait,
        c.schedule_warmup,
        c.schedule_active,
        c.schedule_repeat,
    ) == (1, 1, 1, 2, 1)
    assert c.schedule_stage == UPDATE_STAGES["actor"] == "actor_update"
    off = composed(tree, *torch_actor(f"{ACTOR}.tool_config.torch.discrete=true"))
    assert from_verl(off, "actor").schedule_active == 0  # active 0: every mini-batch


def test_a_schedule_of_whole_steps_is_named_once(
    verl_release: tuple[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    _, tree = verl_release
    cfg = composed(tree, *torch_actor(f"{ACTOR}.tool_config.torch.schedule.active=3"))
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for _ in range(3):
            assert from_verl(cfg, "actor").schedule_active == 0
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        f"mindspeed-prof: verl settings of actor not mapped: {ACTOR}.tool_config."
        "torch.schedule (discrete: false: whole steps are captured, every mini-batch "
        "in them)"
    )


def test_finish_hook_and_relocation(verl_release: tuple[str, Path]) -> None:
    release, tree = verl_release
    gp = "global_profiler"
    cfg = composed(
        tree,
        *torch_actor(
            f"++{gp}.finish_hook_cmd='upload $VERL_PROFILE_SAVE_PATH'",
            f"++{gp}.finish_hook_ranks=[0,8]",
            f"++{gp}.relocate_results=true",
        ),
    )
    c = from_verl(cfg, "actor")
    if release == "verl==0.9.0":  # no such settings in its role blocks: nothing to map
        assert (c.finish_hook_cmd, c.relocate_results) == ("", False)
        return
    assert c.finish_hook_cmd == "upload $VERL_PROFILE_SAVE_PATH"
    assert c.finish_hook_ranks == [0, 8] and c.relocate_results
    every = composed(
        tree, *torch_actor(f"{gp}.finish_hook_cmd=ls", f"{gp}.finish_hook_all_ranks=true")
    )
    assert from_verl(every, "actor").finish_hook_ranks == "all"
    profiled = composed(tree, *torch_actor(f"{gp}.finish_hook_cmd=ls"))
    assert from_verl(profiled, "actor").finish_hook_ranks is None  # the ranks that captured


def test_the_memory_tool_keeps_a_window_and_oom_snapshots(
    verl_release: tuple[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    release, tree = verl_release
    memory = "global_profiler.global_tool_config.torch_memory"
    cfg = composed(
        tree,
        "global_profiler.tool=torch_memory",
        "global_profiler.steps=[2,3,4]",
        f"{ACTOR}.enable=true",
        f"++{memory}.memory_snapshot_num_steps=3",
        f"{memory}.context=alloc",
    )
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        c = from_verl(cfg, "actor")
    assert c.oom_snapshot and c.profile_with_memory
    assert c.memory_window_steps == (3 if release == "verl==0.9.1" else 0)
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"{memory}.context='alloc'" in line


# -- verl main's role block, with the open pull request's tool_config.npu.schedule -------------
MAIN_BLOCK = {  # verl main (0.10.0.dev): profiler.yaml's role block, as composed
    "tool": "npu",
    "enable": True,
    "all_ranks": False,
    "ranks": [],
    "save_path": "p",
    "relocate_results": False,
    "finish_hook_cmd": None,
    "finish_hook_all_ranks": False,
    "finish_hook_ranks": [],
    "tool_config": {
        "npu": {
            "contents": [],
            "level": "level1",
            "analysis": True,
            "discrete": True,
            "profile_token_start": None,
            "profile_token_end": None,
            "schedule": {"skip_first": 0, "wait": 0, "warmup": 1, "active": 2, "repeat": 0},
        },
        "torch_memory": {"trace_alloc_max_entries": 100000, "stack_depth": 32},
    },
}


@pytest.mark.parametrize("role", ["actor", "critic", "ref"])
def test_mains_npu_schedule(role: str, caplog: pytest.LogCaptureFixture) -> None:
    where = {
        "actor": ("actor_rollout_ref", "actor"),
        "critic": ("critic",),
        "ref": ("actor_rollout_ref", "ref"),
    }[role]
    cfg: dict[str, Any] = {"global_profiler": {"tool": "npu", "steps": [1, 2]}}
    node = cfg
    for key in where:
        node = node.setdefault(key, {})
    node["profiler"] = MAIN_BLOCK
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        fields = verl_fields(cfg, role)
    if role in UPDATE_STAGES:
        assert (fields["schedule_warmup"], fields["schedule_active"]) == (1, 2)
        assert fields["schedule_stage"] == UPDATE_STAGES[role] and not caplog.records
    else:  # verl walks the update loop only
        assert "schedule_active" not in fields
        (line,) = [r.getMessage() for r in caplog.records]
        assert "tool_config.npu.schedule (role reference has no update loop)" in line
