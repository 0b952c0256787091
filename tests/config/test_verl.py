"""verl as it is: its real PPO and SFT config trees (from the 0.9.1 wheel) compose with the
plugin, and its own profiler settings drive a verl-style worker that calls our hooks."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from verl_wheel import add_defaults_line

from mindspeed_prof import Profiler
from mindspeed_prof.config import ConfigError, Stage
from mindspeed_prof.config.verl import from_verl, verl_fields

VERL_TARGET = "verl.utils.profiler.ProfilerConfig"


@pytest.fixture(scope="module")
def trees(verl_tree: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verl_trees")
    return {"plain": verl_tree, "ours": add_defaults_line(verl_tree, root / "ours")}


@pytest.fixture
def verl(trees: dict[str, Path]):
    """``verl(config_name, *overrides, tree="ours")``: one composed config of verl's tree."""

    def run(name: str, *overrides: str, tree: str = "ours") -> Any:
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(trees[tree]), version_base=None):
                return compose(name, overrides=list(overrides))
        finally:
            GlobalHydra.instance().clear()

    return run


# -- composing -----------------------------------------------------------------------------
def test_ppo_tree_composes_unchanged_without_the_line(verl) -> None:
    cfg = verl("ppo_trainer", tree="plain")
    assert "profiler_config" not in cfg
    OmegaConf.to_container(cfg, resolve=True)


def test_ppo_tree_with_the_line_composes_resolves_and_keeps_verls_nodes(verl) -> None:
    plain = verl("ppo_trainer", tree="plain")
    cfg = verl("ppo_trainer", "profiler_config=mstx_light")
    OmegaConf.to_container(cfg, resolve=True)
    assert cfg.actor_rollout_ref.actor.profiler._target_ == VERL_TARGET
    assert cfg.global_profiler == plain.global_profiler
    assert OmegaConf.to_container(cfg.profiler_config.integrated) == {
        "profile": True,
        "mstx": True,
        "profile_level": "level_none",
        "profile_with_cpu": False,
        "profile_step_start": 2,
        "profile_step_end": 6,
    }
    cfg = verl(
        "ppo_trainer",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_generate",
    )
    assert cfg.profiler_config.integrated.stage == "actor_generate"
    with pytest.raises(
        ConfigCompositionException,
        match=r"^mindspeed-prof: profiler=mstx_light"
        r": .*; select the preset with profiler_config=mstx_light$",
    ):
        verl("ppo_trainer", "profiler=mstx_light")  # verl's group name is not ours here


def test_sft_tree_keeps_verls_profiler_group(verl) -> None:
    cfg = verl("sft_trainer_engine", "profiler_config=full")
    assert cfg.profiler._target_ == VERL_TARGET and "tool_config" in cfg.profiler
    assert cfg.profiler_config.integrated.profile_level == "level1"
    assert cfg.profiler == verl("sft_trainer_engine", tree="plain").profiler
    with pytest.raises(
        ConfigCompositionException, match=r"select the preset with profiler_config=mstx_light$"
    ):
        verl("sft_trainer_engine", "profiler=mstx_light")  # verl's group, verl's option


# -- verl's settings, mapped -----------------------------------------------------------------
ACTOR = "actor_rollout_ref.actor.profiler"


def npu(*overrides: str) -> list[str]:
    return ["global_profiler.tool=npu", f"{ACTOR}.enable=true", *overrides]


def test_nothing_profiled_as_verl_ships_it(verl) -> None:
    cfg = verl("ppo_trainer")
    for role in ("actor", "rollout", "ref", "critic"):
        assert not from_verl(cfg, role).profile


def test_npu_tool_maps_onto_our_fields(verl) -> None:
    cfg = verl(
        "ppo_trainer",
        *npu(
            "global_profiler.steps=[2,3]",
            f"{ACTOR}.tool_config.npu.contents=[npu,memory,shapes,module]",
            f"{ACTOR}.tool_config.npu.level=level1",
            f"{ACTOR}.ranks=[1,3]",
            "global_profiler.save_path=/tmp/p",
        ),
    )
    c = from_verl(cfg, "actor")
    assert c.profile and c.backend.value == "torch_npu" and c.profile_level.value == "level1"
    assert (c.profile_step_start, c.profile_step_end, c.profile_steps) == (2, 4, None)
    assert c.profile_ranks == [1, 3] and c.profile_save_path == "/tmp/p"
    assert c.profile_with_npu and c.profile_with_memory and c.profile_record_shapes
    assert c.profile_with_module and not c.with_stack and c.profile_with_cpu
    assert c.profile_export_type.value == "db" and c.mstx and c.data_simplification
    assert c.profile_analysis  # verl's YAML says analysis: true
    assert c.stage is Stage.all and not c.profile_continuous_steps  # verl 0.9.1's default
    rollout = from_verl(cfg, "rollout")  # its block takes the actor's through oc.select
    assert rollout.profile and rollout.profile_ranks == [1, 3]
    assert not from_verl(cfg, "ref").profile  # not enabled on its own block


def test_steps_ranks_and_discrete(verl) -> None:
    cfg = verl(
        "ppo_trainer",
        *npu(
            "global_profiler.steps=[5,2]",
            "global_profiler.profile_continuous_steps=true",
            f"{ACTOR}.tool_config.npu.discrete=true",
        ),
    )
    c = from_verl(cfg, "actor")
    assert c.profile_steps == [2, 5] and c.profile_continuous_steps
    assert c.profile_ranks == [0]  # verl: enable with ranks [] means rank 0
    assert c.stage == [s for s in Stage if s is not Stage.all]  # each stage its own capture
    all_ranks = verl("ppo_trainer", *npu("global_profiler.steps=[1]", f"{ACTOR}.all_ranks=true"))
    assert from_verl(all_ranks, "actor").profile_ranks == "all"
    assert not from_verl(verl("ppo_trainer", *npu()), "actor").profile  # steps null: off


def test_torch_and_torch_memory_tools(verl) -> None:
    cfg = verl(
        "ppo_trainer",
        "global_profiler.tool=torch",
        "global_profiler.steps=[3]",
        "critic.profiler.enable=true",
        "critic.profiler.tool_config.torch.contents=[cpu]",
    )
    c = from_verl(cfg, "critic")
    assert c.backend.value == "torch" and c.profile_level.value == "level0"
    assert c.profile_with_cpu and not c.profile_with_npu  # cuda not listed
    assert from_verl(
        verl(
            "ppo_trainer",
            "global_profiler.tool=torch",
            "global_profiler.steps=[3]",
            "critic.profiler.enable=true",
        ),
        "critic",
    ).profile_with_npu  # []: all
    mem = verl(
        "ppo_trainer",
        "global_profiler.tool=torch_memory",
        "global_profiler.steps=[3]",
        f"{ACTOR}.enable=true",
        "global_profiler.global_tool_config.torch_memory.trace_alloc_max_entries=500",
        "global_profiler.global_tool_config.torch_memory.stack_depth=8",
    )
    m = from_verl(mem, "actor")
    assert m.profile_with_memory and m.profile_level.value == "level_none"
    assert (m.trace_alloc_max_entries, m.stack_depth) == (500, 8)


def test_tools_without_a_backend_are_one_warning(verl, caplog: pytest.LogCaptureFixture) -> None:
    cfg = verl(
        "ppo_trainer",
        "global_profiler.tool=nsys",
        "global_profiler.steps=[1]",
        f"{ACTOR}.enable=true",
    )
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert not from_verl(cfg, "actor").profile
        assert not from_verl(cfg, "actor").profile
    (line,) = [r.getMessage() for r in caplog.records]
    assert f"{ACTOR}.tool='nsys' has no mindspeed-prof backend" in line


def test_bad_verl_values_name_verls_key(verl) -> None:
    cfg = verl(
        "ppo_trainer", *npu("global_profiler.steps=[1]", f"{ACTOR}.tool_config.npu.level=level7")
    )
    with pytest.raises(
        ConfigError,
        match=rf"^{ACTOR}\.tool_config\.npu\.level='level7': "
        r"allowed: level_none, level0, level1, level2$",
    ):
        from_verl(cfg, "actor")
    cfg = verl(
        "ppo_trainer", *npu("global_profiler.steps=[1]", f"{ACTOR}.tool_config.npu.contents=[gpu]")
    )
    with pytest.raises(ConfigError, match=r"contents=\['gpu'\]: allowed entries: npu, cpu"):
        from_verl(cfg, "actor")
    with pytest.raises(ConfigError, match=r"verl role 'learner': allowed: actor, rollout"):
        from_verl(cfg, "learner")


def test_sft_profile_interval_is_inclusive(verl) -> None:
    cfg = verl(
        "sft_trainer_engine",
        "trainer.profile_interval=[2,4]",
        "profiler.enable=true",
        "profiler.tool=torch",
    )
    c = from_verl(cfg)
    assert c.profile and (c.profile_step_start, c.profile_step_end) == (2, 5)
    assert not from_verl(
        verl("sft_trainer_engine", "profiler.enable=true", "profiler.tool=torch")
    ).profile  # [-1, -1]: off


# -- a verl-style worker calling our hooks ---------------------------------------------------
class VerlStyleWorker:
    """verl's fsdp worker shape: one role, stages named as verl names them, global steps."""

    STAGES = {
        "actor": ("rollout_generate", "actor_compute_log_prob", "actor_update"),
        "ref": ("ref_compute_log_prob",),
    }

    def __init__(self, config: Any, role: str, rank: int) -> None:
        self.role = role
        self.profiler = Profiler.from_config(from_verl(config, role), rank=rank, role=role)

    def train(self, steps: range) -> None:
        for step in steps:
            with self.profiler.step(step):
                for stage in self.STAGES[self.role]:
                    with self.profiler.stage(stage):
                        sum(range(1000))
        self.profiler.close()


def test_verl_settings_drive_a_verl_style_worker(verl, tmp_path: Path) -> None:
    cfg = verl(
        "ppo_trainer",
        "global_profiler.tool=torch",
        "global_profiler.steps=[2,3,5]",
        f"global_profiler.save_path={tmp_path}",
        f"{ACTOR}.enable=true",
        f"{ACTOR}.tool_config.torch.contents=[cpu]",
        "actor_rollout_ref.ref.profiler.enable=true",
        "actor_rollout_ref.ref.profiler.tool_config.torch.discrete=true",
    )
    actor = VerlStyleWorker(cfg, "actor", rank=0)
    actor.train(range(1, 7))
    # profile_continuous_steps false (verl's default): one capture per listed step
    assert [(c.stage, c.steps) for c in actor.profiler.captures] == [
        ("all", [2]),
        ("all", [3]),
        ("all", [5]),
    ]
    assert {Path(f).parent for c in actor.profiler.captures for f in c.files} == {
        tmp_path / "actor"
    }
    assert all(f.endswith(".pt.trace.json") for c in actor.profiler.captures for f in c.files)
    ref = VerlStyleWorker(cfg, "ref", rank=0)  # verl's role name: our reference
    ref.train(range(1, 7))
    assert ref.profiler.role == "reference"
    assert [(c.stage, c.step) for c in ref.profiler.captures] == [
        ("reference_compute_log_prob", s) for s in (2, 3, 5)
    ]  # discrete: per stage call
    assert not VerlStyleWorker(cfg, "actor", rank=1).profiler.plan.enabled  # ranks []: rank 0


def test_continuous_steps_make_one_capture_per_run(verl, tmp_path: Path) -> None:
    cfg = verl(
        "ppo_trainer",
        "global_profiler.tool=torch",
        "global_profiler.steps=[2,3,5]",
        "global_profiler.profile_continuous_steps=true",
        f"global_profiler.save_path={tmp_path}",
        f"{ACTOR}.enable=true",
        f"{ACTOR}.tool_config.torch.contents=[cpu]",
    )
    actor = VerlStyleWorker(cfg, "actor", rank=0)
    actor.train(range(1, 7))
    assert [c.steps for c in actor.profiler.captures] == [[2, 3], [5]]


def test_verl_fields_are_plain() -> None:
    cfg = {
        "global_profiler": {"tool": "npu", "steps": [1, 2], "save_path": "p"},
        "critic": {"profiler": {"enable": True, "tool_config": {"npu": {"contents": None}}}},
    }
    fields = verl_fields(cfg, "critic")
    assert fields["profile_with_memory"] and fields["with_stack"]  # contents None: everything
    assert all(isinstance(v, (bool, int, str, list)) for v in fields.values())


# -- the rollout's window over decode iterations ---------------------------------------------
ROLLOUT = "actor_rollout_ref.rollout.profiler"


def test_rollout_token_window_maps_to_an_iteration_window(verl) -> None:
    cfg = verl(
        "ppo_trainer",
        *npu(
            "global_profiler.steps=[2]",
            f"{ROLLOUT}.tool_config.npu.profile_token_start=4",
            f"{ROLLOUT}.tool_config.npu.profile_token_end=8",
        ),
    )
    r = from_verl(cfg, "rollout")
    assert r.profile and (r.iteration_start, r.iteration_count) == (4, 4)
    assert r.iteration_stage == "actor_generate"
    assert from_verl(cfg, "actor").iteration_count == 0  # the engine's window: rollout only
    open_end = verl(
        "ppo_trainer",
        "global_profiler.tool=torch",
        "global_profiler.steps=[2]",
        f"{ACTOR}.enable=true",
        f"{ROLLOUT}.tool_config.torch.profile_token_start=3",
    )
    o = from_verl(open_end, "rollout")
    assert o.iteration_start == 3 and o.iteration_count >= 2**31 - 1  # to the stage's end
    assert (
        from_verl(verl("ppo_trainer", *npu("global_profiler.steps=[2]")), "rollout").iteration_count
        == 0
    )  # nulls: the whole stage


@pytest.mark.parametrize(
    ("keys", "window"),
    [
        (("delay_iterations=5", "max_iterations=3"), (5, 3)),  # vLLM's spelling
        (("start_step=2", "num_steps=6"), (2, 6)),  # SGLang's
        (("delay_iterations=0", "max_iterations=0"), (0, 0)),  # vLLM's defaults: no window
    ],
)
def test_engine_spellings_are_aliases(verl, keys: tuple[str, ...], window: tuple[int, int]) -> None:
    cfg = verl(
        "ppo_trainer",
        *npu("global_profiler.steps=[2]", *[f"+{ROLLOUT}.tool_config.npu.{k}" for k in keys]),
    )
    r = from_verl(cfg, "rollout")
    assert (r.iteration_start, r.iteration_count) == window


def test_bad_rollout_window_names_verls_key(verl) -> None:
    cfg = verl(
        "ppo_trainer",
        *npu(
            "global_profiler.steps=[2]",
            f"{ROLLOUT}.tool_config.npu.profile_token_start=6",
            f"{ROLLOUT}.tool_config.npu.profile_token_end=6",
        ),
    )
    with pytest.raises(
        ConfigError,
        match=rf"^{ROLLOUT}\.tool_config\.npu\.profile_token_end=6: "
        r"allowed: greater than profile_token_start \(6\)",
    ):
        from_verl(cfg, "rollout")
    both = verl(
        "ppo_trainer",
        *npu(
            "global_profiler.steps=[2]",
            f"{ROLLOUT}.tool_config.npu.profile_token_start=1",
            f"+{ROLLOUT}.tool_config.npu.num_steps=2",
        ),
    )
    with pytest.raises(ConfigError, match="allowed: one spelling of the window"):
        from_verl(both, "rollout")
