"""Compose-API tests for the README's command lines: presets, overrides, roles, sweeps."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException

from mindspeed_prof.config import STAGES, ConfigError, Level, Stage, validate
from mindspeed_prof.config.presets import PRESETS, chosen_preset


@pytest.fixture
def conf(tmp_path: Path):
    (tmp_path / "config.yaml").write_text("defaults:\n  - profiler_config: none\n  - _self_\n")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        yield lambda *o, **kw: compose("config", overrides=list(o), **kw)
    GlobalHydra.instance().clear()


def test_default_is_off(conf) -> None:
    assert validate(conf().profiler_config).profile is False


def test_mstx_light(conf) -> None:
    c = validate(conf("profiler_config=mstx_light").profiler_config)
    assert c.profile and c.mstx and c.profile_level is Level.level_none
    assert c.profile_with_cpu is False and c.profile_with_npu is True


def test_stage_override(conf) -> None:
    c = validate(
        conf(
            "profiler_config=stage_scoped", "profiler_config.integrated.stage=actor_generate"
        ).profiler_config
    )
    assert c.stage is Stage.actor_generate and c.profile_level is Level.level1


def test_every_preset_composes_validates_and_turns_callback_on(conf) -> None:
    for name in PRESETS:
        cfg = conf(f"profiler_config={name}", return_hydra_config=True)
        validate(cfg.profiler_config)
        target = cfg.hydra.callbacks.mindspeed_prof._target_
        assert target == "mindspeed_prof.hydra.callback.ProfilerCallback"


def test_preset_values(conf) -> None:
    dpo = validate(conf("profiler_config=dpo").profiler_config)
    assert dpo.warmup_steps == 1 and dpo.profile
    mem = validate(conf("profiler_config=memory_debug").profiler_config)
    assert mem.profile_with_memory and mem.profile_record_shapes
    full = validate(conf("profiler_config=full").profiler_config)
    assert full.stage is Stage.all and full.profile_level is Level.level1


def test_preset_windows_skip_the_warm_up_step_and_the_schema_keeps_mindspeed_rls(conf) -> None:
    """Where the user sets no window, every preset that profiles starts at step 2 (step 1 is
    warm-up); a config that picks no preset keeps MindSpeed-RL's defaults, [1, 2)."""
    from mindspeed_prof.config import IntegratedConfig

    windows = {
        name: (c.profile_step_start, c.profile_step_end, c.warmup_steps)
        for name in PRESETS
        if name != "none"
        for c in [validate(conf(f"profiler_config={name}").profiler_config)]
    }
    assert windows == {
        "mstx_light": (2, 6, 0),
        "stage_scoped": (2, 4, 0),
        "memory_debug": (2, 3, 0),
        "full": (2, 4, 0),
        "dpo": (2, 3, 1),
    }
    assert (IntegratedConfig().profile_step_start, IntegratedConfig().profile_step_end) == (1, 2)
    mine = validate(
        conf(
            "profiler_config=mstx_light",
            "profiler_config.integrated.profile_step_start=1",
            "profiler_config.integrated.profile_step_end=3",
        ).profiler_config
    )
    assert (mine.profile_step_start, mine.profile_step_end) == (1, 3)  # the user's window


def test_typo_in_preset_names_the_closest(conf) -> None:
    with pytest.raises(ConfigCompositionException) as err:
        conf("profiler_config=mstx_lite")
    assert str(err.value) == (
        "mindspeed-prof: profiler_config=mstx_lite: no such preset (did you mean mstx_light?); "
        "presets: none, mstx_light, stage_scoped, memory_debug, full, dpo"
    )
    with pytest.raises(
        ConfigCompositionException,
        match=r"^mindspeed-prof: profiler=xyz: no "
        r"such preset; presets: none, ",
    ):
        conf("profiler=xyz")  # nothing close: no guess


@pytest.mark.parametrize(
    "overrides,chosen",
    [
        (["profiler_config=full"], "full"),
        (["profiler=full"], "full"),
        (["+profiler_config=full"], "full"),
        (["profiler@profiler_config=dpo"], "dpo"),
        (["profiler=full", "profiler_config=mstx_light"], "full"),  # the alias loads its own
        (["profiler_config=mstx_light", "profiler=full"], "full"),
        (["profiler_config=mstx_light", "profiler_config=dpo"], "dpo"),
        (["profiler_config.integrated.stage=actor_update", "profiler@other=x"], None),
    ],
)
def test_chosen_preset_is_the_one_composed(conf, overrides: list[str], chosen: str | None) -> None:
    assert chosen_preset(overrides) == chosen
    if chosen is not None and overrides[0][0] != "+" and "@" not in overrides[0]:
        cfg = conf(*overrides, return_hydra_config=True)
        assert cfg.hydra.runtime.choices["mindspeed_prof/preset@profiler_config"] == chosen


def test_typos_rejected_by_validate_naming_field_and_choices(conf) -> None:
    # the composed node is plain (MindSpeed-RL reads it): values are checked by validate
    with pytest.raises(
        ConfigError,
        match=r"^profiler_config\.integrated\.profile_level="
        r"'bogus': allowed: level_none, level0, level1, "
        r"level2$",
    ):
        validate(
            conf(
                "profiler_config=mstx_light", "profiler_config.integrated.profile_level=bogus"
            ).profiler_config
        )
    with pytest.raises(ConfigError, match=r"profiler_config\.integrated\.stage='bogus'"):
        validate(
            conf(
                "profiler_config.integrated.profile=true", "profiler_config.integrated.stage=bogus"
            ).profiler_config
        )


def test_fields_a_preset_does_not_set_override_without_plus(conf) -> None:
    cfg = conf(
        "profiler_config=none",
        "profiler_config.integrated.profile_with_memory=true",
        "profiler_config.extensions.backend=none",
        "profiler_config.critic.mstx=true",
    )
    assert dict(cfg.profiler_config.integrated) == {"profile_with_memory": True}
    assert validate(cfg.profiler_config).backend.value == "none"
    assert validate(cfg.profiler_config, "critic").mstx


def test_stage_list_override(conf) -> None:
    cfg = conf(
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=[actor_generate,actor_update]",
    )
    assert validate(cfg.profiler_config).stage == [Stage.actor_generate, Stage.actor_update]


def test_role_override_keeps_integrated_values(conf) -> None:
    cfg = conf(
        "profiler_config=stage_scoped",
        "profiler_config.actor.stage=actor_generate",
        "profiler_config.rollout.stage=[actor_generate]",
    ).profiler_config
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage is Stage.actor_generate and actor.profile_level is Level.level1
    assert rollout.stage == [Stage.actor_generate] and rollout.profile
    assert validate(cfg).stage is Stage.actor_update  # presets set integrated
    assert validate(cfg, "critic") == validate(cfg)  # no section: integrated's


@pytest.mark.parametrize(
    "override,message",
    [
        (
            "profiler_config.critic.profile_step_end=1",
            r"critic\.profile_step_end=1: must be greater",
        ),
        ("profiler_config.actor.profile_level=bogus", r"actor\.profile_level='bogus': allowed: "),
        ("profiler_config.reward.profile_stpe_end=3", r"reward\.profile_stpe_end: unknown field"),
        (
            "profiler_config.integrated.backend=none",
            r"integrated\.backend: not one of MindSpeed-RL",
        ),
    ],
)
def test_bad_role_value_names_the_role_key(conf, override: str, message: str) -> None:
    cfg = conf("profiler_config=mstx_light", override)
    with pytest.raises(ConfigError, match=rf"profiler_config\.{message}"):
        validate(cfg.profiler_config)  # any role's bad section stops the run


def test_unknown_role_section_rejected_at_compose(conf) -> None:
    with pytest.raises(ConfigCompositionException):
        conf("profiler_config.actress.stage=actor_update")


def test_sweep_over_stage_lists() -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (override,) = OverridesParser.create().parse_overrides(
        ["profiler_config.integrated.stage=[actor_generate,actor_update],critic_update"]
    )
    jobs = list(override.sweep_string_iterator())
    assert jobs == ["[actor_generate,actor_update]", "critic_update"]


def test_sweep_config_lists_every_stage(conf) -> None:
    cfg = conf(
        "profiler_config=stage_scoped", "+profiler_sweep=all_stages", return_hydra_config=True
    )
    stages = cfg.hydra.sweeper.params["profiler_config.integrated.stage"].split(",")
    assert stages == list(STAGES)


def test_old_group_name_is_an_alias_where_free(conf, tmp_path: Path) -> None:
    # an app written for the first release (`- profiler: none`, `profiler=x`) keeps working
    new = conf("profiler_config=stage_scoped").profiler_config
    old_app = tmp_path / "old"
    old_app.mkdir()
    (old_app / "config.yaml").write_text("defaults:\n  - profiler: none\n  - _self_\n")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(old_app), version_base=None):
        old = compose("config", overrides=["profiler=stage_scoped"]).profiler_config
        plus = compose("config", overrides=["profiler=none", "+profiler_sweep=all_stages"])
    assert old == new and validate(old).stage is Stage.actor_update
    assert not validate(plus.profiler_config).profile


def test_composed_node_holds_plain_values_and_only_what_is_set(conf) -> None:
    from omegaconf import OmegaConf

    for name, (_, fields) in PRESETS.items():
        node = conf(f"profiler_config={name}").profiler_config
        assert not OmegaConf.is_struct(node.integrated) and not OmegaConf.is_struct(node.actor)
        plain = OmegaConf.to_container(node)
        assert isinstance(plain, dict)
        assert sorted(plain) == [
            "actor",
            "critic",
            "extensions",
            "integrated",
            "reference",
            "reward",
            "rollout",
        ]
        assert set(plain["integrated"]) | set(plain["extensions"]) == set(fields)
        for value in [*plain["integrated"].values(), *plain["extensions"].values()]:
            assert type(value) in (bool, int, str), (name, value)
        assert OmegaConf.get_type(node.integrated) is dict


@pytest.mark.parametrize("rank", [1, None])
def test_the_relaunch_analyse_suggests_composes_in_the_readme_app(conf, rank: int | None) -> None:
    """``analyse``'s next capture for a light capture is a command line for the app; with the
    README's one line (``- profiler_config: none``) it must compose and select what it says:
    the straggler's stage on its rank, or with no straggler the slowest stage on every rank."""
    from types import SimpleNamespace

    from mindspeed_prof.analysis.judgement.lag import Lag
    from mindspeed_prof.analysis.judgement.where import Share
    from mindspeed_prof.analysis.next_capture import next_steps
    from mindspeed_prof.analysis.rows import Straggler

    light = SimpleNamespace(traces=[], root=Path("profiler_data"))
    slowest = Share(kind="stage", name="actor_update", ms=10.0, share=0.5, rank=rank)
    behind = (
        None
        if rank is None
        else Lag(
            kind="stage",
            name="actor_update",
            rank=rank,
            compared=4,
            behind=4,
            lag_ms=20.0,
            least_ms=19.0,
            others_ms=10.0,
            noise_ms=0.1,
            consistent=True,
            worst=Straggler(
                kind="stage",
                name="actor_update",
                step=2,
                rank=rank,
                ms=30.0,
                median_ms=10.0,
                ratio=3.0,
                excess_ms=20.0,
            ),
        )
    )
    relaunch = next(
        s
        for s in next_steps(
            light,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            None,
            behind,
            slowest,
            None,
        )
        if s.kind == "relaunch"
    )
    assert not relaunch.runnable  # no manifest here: the overrides to add, quoted
    assert shlex.split(relaunch.command) == relaunch.overrides
    c = validate(conf(*relaunch.overrides).profiler_config)
    assert c.stage is Stage.actor_update and c.profile_level is Level.level1
    assert c.profile_ranks == ("all" if rank is None else [rank])
