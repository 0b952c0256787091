"""Compose-API tests for the README's command lines: presets, overrides, roles, sweeps."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException

from mindspeed_prof.config import ConfigError, Level, Stage, validate
from mindspeed_prof.config.presets import PRESETS


@pytest.fixture
def conf(tmp_path: Path):
    (tmp_path / "config.yaml").write_text("defaults:\n  - profiler: none\n  - _self_\n")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        yield lambda *o, **kw: compose("config", overrides=list(o), **kw)
    GlobalHydra.instance().clear()


def test_default_is_off(conf) -> None:
    assert validate(conf().profiler_config).profile is False


def test_mstx_light(conf) -> None:
    c = validate(conf("profiler=mstx_light").profiler_config)
    assert c.profile and c.mstx and c.profile_level is Level.level_none
    assert c.profile_with_cpu is False and c.profile_with_npu is True


def test_stage_override(conf) -> None:
    c = validate(conf("profiler=stage_scoped",
                      "profiler_config.integrated.stage=actor_generate").profiler_config)
    assert c.stage is Stage.actor_generate and c.profile_level is Level.level1


def test_every_preset_composes_validates_and_turns_callback_on(conf) -> None:
    for name in PRESETS:
        cfg = conf(f"profiler={name}", return_hydra_config=True)
        validate(cfg.profiler_config)
        target = cfg.hydra.callbacks.mindspeed_prof._target_
        assert target == "mindspeed_prof.hydra.callback.ProfilerCallback"


def test_preset_values(conf) -> None:
    dpo = validate(conf("profiler=dpo").profiler_config)
    assert dpo.warmup_steps == 1 and dpo.profile
    mem = validate(conf("profiler=memory_debug").profiler_config)
    assert mem.profile_with_memory and mem.profile_record_shapes
    full = validate(conf("profiler=full").profiler_config)
    assert full.stage is Stage.all and full.profile_level is Level.level1


def test_typo_in_preset_lists_options(conf) -> None:
    with pytest.raises(ConfigCompositionException) as err:
        conf("profiler=mstx_lite")
    assert "mstx_light" in str(err.value.__cause__ or err.value) or "Available options" in str(
        err.value)


def test_enum_typo_rejected_at_compose(conf) -> None:
    with pytest.raises(ConfigCompositionException):
        conf("profiler_config.integrated.profile_level=bogus")


def test_stage_typo_rejected_by_validate(conf) -> None:
    # stage is one name or a list (no Union in OmegaConf): checked by validate, not at compose
    with pytest.raises(ConfigError, match=r"profiler_config\.integrated\.stage='bogus'"):
        validate(conf("profiler_config.integrated.stage=bogus").profiler_config)


def test_stage_list_override(conf) -> None:
    cfg = conf("profiler=stage_scoped",
               "profiler_config.integrated.stage=[actor_generate,actor_update]")
    assert validate(cfg.profiler_config).stage == [Stage.actor_generate, Stage.actor_update]


def test_role_override_keeps_integrated_values(conf) -> None:
    cfg = conf("profiler=stage_scoped", "profiler_config.actor.stage=actor_generate",
               "profiler_config.rollout.stage=[actor_generate]").profiler_config
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage is Stage.actor_generate and actor.profile_level is Level.level1
    assert rollout.stage == [Stage.actor_generate] and rollout.profile
    assert validate(cfg).stage is Stage.actor_update  # presets set integrated
    assert validate(cfg, "critic") == validate(cfg)    # no section: integrated's


@pytest.mark.parametrize("override,message", [
    ("profiler_config.critic.profile_step_end=1", r"critic\.profile_step_end=1: must be greater"),
    ("profiler_config.actor.profile_level=bogus", r"actor\.profile_level: Invalid value 'bogus'"),
    ("profiler_config.reward.profile_stpe_end=3", r"reward\.profile_stpe_end: unknown field"),
])
def test_bad_role_value_names_the_role_key(conf, override: str, message: str) -> None:
    cfg = conf("profiler=mstx_light", override)
    with pytest.raises(ConfigError, match=rf"profiler_config\.{message}"):
        validate(cfg.profiler_config)  # any role's bad section stops the run


def test_unknown_role_section_rejected_at_compose(conf) -> None:
    with pytest.raises(ConfigCompositionException):
        conf("profiler_config.actress.stage=actor_update")


def test_sweep_over_stage_lists() -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (override,) = OverridesParser.create().parse_overrides(
        ["profiler_config.integrated.stage=[actor_generate,actor_update],critic_update"])
    jobs = list(override.sweep_string_iterator())
    assert jobs == ["[actor_generate,actor_update]", "critic_update"]


def test_sweep_config_lists_every_stage(conf) -> None:
    cfg = conf("profiler=stage_scoped", "+profiler_sweep=all_stages", return_hydra_config=True)
    stages = cfg.hydra.sweeper.params["profiler_config.integrated.stage"].split(",")
    assert stages == [s.value for s in Stage if s is not Stage.all]
