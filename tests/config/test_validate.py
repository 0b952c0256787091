"""One test per validation rule; each message names the full key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mindspeed_prof.config import (
    ConfigError,
    ExportType,
    IntegratedConfig,
    Level,
    ProfilerConfig,
    Stage,
    validate,
)

KEY = "profiler_config.integrated"


def check(**fields: object) -> IntegratedConfig:
    return validate({"integrated": fields})


def test_defaults_are_mindspeed_rl_defaults() -> None:
    c = validate(ProfilerConfig())
    assert (c.profile, c.mstx, c.stage, c.profile_save_path) == (False, False, Stage.all,
                                                                  "./profiler_data")
    assert (c.profile_export_type, c.profile_step_start, c.profile_step_end) == (
        ExportType.text, 1, 2)
    assert c.profile_level is Level.level0
    assert (c.profile_with_memory, c.profile_record_shapes, c.profile_with_cpu) == (
        False, False, True)
    assert (c.profile_with_npu, c.profile_with_module, c.profile_analysis) == (True, False, False)
    assert c.profile_ranks == "all"


@pytest.mark.parametrize("field,value,allowed", [
    ("stage", "bogus", "actor_generate"),
    ("profile_level", "level9", "level_none"),
    ("profile_export_type", "csv", "text"),
])
def test_unknown_enum_value_names_field_and_choices(field: str, value: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        check(**{field: value})
    assert f"{KEY}.{field}" in str(err.value) and allowed in str(err.value)


def test_start_below_one() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_step_start=0: must be .*>= 1"):
        check(profile_step_start=0)


@pytest.mark.parametrize("end", [1, 0])
def test_end_not_after_start(end: int) -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_step_end={end}: must be greater"):
        check(profile_step_start=1, profile_step_end=end)


@pytest.mark.parametrize("ranks", [[-1], "abc", [0, "x"], [True], [], 3, {"a": 1}, [1.5]])
def test_bad_ranks(ranks: object) -> None:
    with pytest.raises(ConfigError) as err:
        check(profile_ranks=ranks)
    assert f"{KEY}.profile_ranks" in str(err.value)
    assert '"all" or a list of integers >= 0' in str(err.value)


def test_ranks_normalised() -> None:
    assert check(profile_ranks=[3, 1, 1]).profile_ranks == [1, 3]
    assert check(profile_ranks=OmegaConf.create([0])).profile_ranks == [0]


def test_nothing_to_collect() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}: nothing to collect.*profile_with_cpu"):
        check(profile_with_cpu=False, profile_with_npu=False, mstx=False)
    assert check(profile_with_cpu=False, profile_with_npu=False, mstx=True).mstx


def test_mstx_db_level_none_rejected() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_export_type=db: not supported"):
        check(mstx=True, profile_level="level_none", profile_export_type="db")
    assert check(mstx=True, profile_level="level1", profile_export_type="db")


def test_negative_warmup() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.warmup_steps=-1"):
        check(warmup_steps=-1)


def test_unknown_field_lists_allowed_fields() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_stpe_end: unknown field.*profile_step_end"):
        check(profile_stpe_end=3)


def test_wrong_type() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_step_start"):
        check(profile_step_start="soon")


def test_empty_save_path() -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.profile_save_path"):
        check(profile_save_path=" ")


def test_accepts_section_dataclass_and_full_tree() -> None:
    assert validate(IntegratedConfig(profile=True)).profile
    assert validate({"profiler_config": {"integrated": {"profile": True}}}).profile
    with pytest.raises(ConfigError, match="profiler_config.other: unknown section; allowed "
                                          "sections: integrated, actor, rollout"):
        validate({"other": 1})


@pytest.mark.parametrize("stage,expected", [
    ("actor_update", Stage.actor_update),
    (["actor_generate", "actor_update"], [Stage.actor_generate, Stage.actor_update]),
    (["critic_update", "critic_update"], [Stage.critic_update]),
    (OmegaConf.create(["actor_update"]), [Stage.actor_update]),
])
def test_stage_is_one_name_or_a_list(stage: object, expected: object) -> None:
    assert check(stage=stage).stage == expected


@pytest.mark.parametrize("stage,message", [
    (["actor_generate", "bogus"], r"stage=\['actor_generate', 'bogus'\]: bad entry 'bogus', "
                                  r"unknown stage; allowed entries: actor_generate, "),
    (["all", "actor_update"], r"stage=.*: bad entry 'all', 'all' stands alone"),
    ([], r"stage=\[\]: an empty list captures nothing"),
    ([["actor_update"]], r"stage=.*: bad entry \['actor_update'\]"),
    ({"a": 1}, r"stage=\{'a': 1\}: allowed: all, actor_generate"),
    (3, r"stage=3: allowed: all, actor_generate, .*critic_update, or a list"),
])
def test_bad_stage_names_key_and_allowed(stage: object, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.{message}"):
        check(stage=stage)


def test_role_sections_lay_over_integrated() -> None:
    cfg = {"integrated": {"profile": True, "profile_level": "level1"},
           "actor": {"stage": ["actor_update"]}, "rollout": {"profile_ranks": [0]}}
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage == [Stage.actor_update] and actor.profile_level is Level.level1
    assert rollout.profile_ranks == [0] and rollout.stage is Stage.all
    assert validate(cfg, "reward") == validate(cfg)
    assert validate({"actor": {"profile": True}}, "actor").profile  # integrated may be absent
    assert not validate(ProfilerConfig(), "critic").profile


def test_role_errors_name_the_role() -> None:
    with pytest.raises(ConfigError, match=r"profiler_config\.actor\.profile_levl: unknown field"):
        validate({"actor": {"profile_levl": "level1"}}, "actor")
    with pytest.raises(ConfigError, match=r"profiler_config\.rollout\.profile_level: Invalid"):
        validate({"integrated": {}, "rollout": {"profile_level": "level9"}})
    with pytest.raises(ConfigError, match=r"profiler_config\.actor\.stage='nope'"):
        validate({"actor": {"stage": "nope"}}, "critic")


def test_unknown_role_lists_allowed_roles() -> None:
    with pytest.raises(ConfigError, match=r"role 'actress': unknown; allowed roles: integrated, "
                                          r"actor, rollout, reference, critic, reward"):
        validate({"integrated": {}}, "actress")


def test_readme_role_example() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### verl-style roles"):]
    block = section[section.index("```yaml\n") + 8:section.index("```\n", 8)]
    cfg = OmegaConf.create(block).profiler_config
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage == [Stage.actor_compute_log_prob, Stage.actor_update]
    assert actor.profile_level is Level.level1 and actor.profile_ranks == "all"
    assert rollout.stage is Stage.actor_generate and rollout.profile_ranks == [0]
    assert (rollout.profile_step_start, rollout.profile_step_end) == (2, 4)
