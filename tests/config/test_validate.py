"""One test per validation rule; each message names the full key and what is allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from mindspeed_prof.config.schema import EXTENSION_FIELDS, MINDSPEED_RL_FIELDS

KEY = "profiler_config.integrated"
EXT = "profiler_config.extensions"


def check(**fields: object) -> IntegratedConfig:
    """``fields`` in the sections they belong to: MindSpeed-RL's in integrated, ours in
    extensions (profile true unless given, so bad values stop)."""
    fields = {"profile": True, **fields}
    return validate(
        {
            "integrated": {k: v for k, v in fields.items() if k not in EXTENSION_FIELDS},
            "extensions": {k: v for k, v in fields.items() if k in EXTENSION_FIELDS},
        }
    )


def test_defaults_are_mindspeed_rl_defaults() -> None:
    c = validate(ProfilerConfig())
    assert (c.profile, c.mstx, c.stage, c.profile_save_path) == (
        False,
        False,
        Stage.all,
        "./profiler_data",
    )
    assert (c.profile_export_type, c.profile_step_start, c.profile_step_end) == (
        ExportType.text,
        1,
        2,
    )
    assert c.profile_level is Level.level0
    assert (c.profile_with_memory, c.profile_record_shapes, c.profile_with_cpu) == (
        False,
        False,
        True,
    )
    assert (c.profile_with_npu, c.profile_with_module, c.profile_analysis) == (True, False, False)
    assert c.profile_ranks == "all"


@pytest.mark.parametrize(
    "field,value,allowed",
    [
        ("stage", "bogus", "actor_generate"),
        ("profile_level", "level9", "level_none"),
        ("profile_export_type", "csv", "text"),
    ],
)
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
    with pytest.raises(ConfigError, match=rf"{EXT}\.warmup_steps=-1"):
        check(warmup_steps=-1)


def test_unknown_field_lists_allowed_fields() -> None:
    with pytest.raises(
        ConfigError, match=rf"{KEY}\.profile_stpe_end: unknown field.*profile_step_end"
    ):
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
    with pytest.raises(
        ConfigError,
        match="profiler_config.other: unknown section; allowed "
        "sections: integrated, extensions, actor, rollout",
    ):
        validate({"other": 1})


@pytest.mark.parametrize(
    "stage,expected",
    [
        ("actor_update", Stage.actor_update),
        (["actor_generate", "actor_update"], [Stage.actor_generate, Stage.actor_update]),
        (["critic_update", "critic_update"], [Stage.critic_update]),
        (OmegaConf.create(["actor_update"]), [Stage.actor_update]),
    ],
)
def test_stage_is_one_name_or_a_list(stage: object, expected: object) -> None:
    assert check(stage=stage).stage == expected


@pytest.mark.parametrize(
    "stage,message",
    [
        (
            ["actor_generate", "bogus"],
            r"stage=\['actor_generate', 'bogus'\]: bad entry 'bogus', "
            r"unknown stage; allowed entries: actor_generate, ",
        ),
        (["all", "actor_update"], r"stage=.*: bad entry 'all', 'all' stands alone"),
        ([], r"stage=\[\]: an empty list captures nothing"),
        ([["actor_update"]], r"stage=.*: bad entry \['actor_update'\]"),
        ({"a": 1}, r"stage=\{'a': 1\}: allowed: all, actor_generate"),
        (
            3,
            r"stage=3: allowed: all, actor_generate, .*critic_update, actor_image_embeds, "
            r".*forward_backward, weight_sync, reshard, offload, onload, engine_sleep, "
            r"engine_wake, or a list",
        ),
    ],
)
def test_bad_stage_names_key_and_allowed(stage: object, message: str) -> None:
    with pytest.raises(ConfigError, match=rf"{KEY}\.{message}"):
        check(stage=stage)


def test_role_sections_lay_over_integrated() -> None:
    cfg = {
        "integrated": {"profile": True, "profile_level": "level1"},
        "actor": {"stage": ["actor_update"]},
        "rollout": {"profile_ranks": [0]},
    }
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage == [Stage.actor_update] and actor.profile_level is Level.level1
    assert rollout.profile_ranks == [0] and rollout.stage is Stage.all
    assert validate(cfg, "reward") == validate(cfg)
    assert validate({"actor": {"profile": True}}, "actor").profile  # integrated may be absent
    assert not validate(ProfilerConfig(), "critic").profile


def test_role_errors_name_the_role() -> None:
    with pytest.raises(
        ConfigError,
        match=r"profiler_config\.actor\.profile_levl: unknown field "
        r"\(did you mean profile_level\?\)",
    ):
        validate({"actor": {"profile_levl": "level1"}}, "actor")
    with pytest.raises(
        ConfigError,
        match=r"profiler_config\.rollout\.profile_level='level9': "
        r"unknown \(did you mean level2\?\); allowed: "
        r"level_none, level0",
    ):
        validate({"integrated": {"profile": True}, "rollout": {"profile_level": "level9"}})
    with pytest.raises(ConfigError, match=r"profiler_config\.actor\.stage='nope'"):
        validate({"actor": {"stage": "nope", "profile": True}}, "critic")


def test_unknown_role_lists_allowed_roles() -> None:
    with pytest.raises(
        ConfigError,
        match=r"role 'actress': unknown \(did you mean actor\?\); "
        r"allowed roles: integrated, "
        r"actor, rollout, reference, critic, reward \(verl's "
        r"names too: ref for reference, reward_model for "
        r"reward\)",
    ):
        validate({"integrated": {}}, "actress")


def test_docs_role_example() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "roles.md").read_text()
    section = doc[doc.index("## verl-style roles") :]
    block = section[section.index("```yaml\n") + 8 : section.index("```\n", 8)]
    cfg = OmegaConf.create(block).profiler_config
    actor, rollout = validate(cfg, "actor"), validate(cfg, "rollout")
    assert actor.stage == [Stage.actor_compute_log_prob, Stage.actor_update]
    assert actor.profile_level is Level.level1 and actor.profile_ranks == "all"
    assert rollout.stage is Stage.actor_generate and rollout.profile_ranks == [0]
    assert (rollout.profile_step_start, rollout.profile_step_end) == (2, 4)


# -- sections: integrated holds MindSpeed-RL's fields only, extensions ours ----------------
def test_extension_field_in_integrated_names_where_it_goes() -> None:
    with pytest.raises(
        ConfigError,
        match=rf"^{KEY}\.max_disk_mb: not one of MindSpeed-RL's "
        r"fields.*set it as profiler_config\.extensions\."
        r"max_disk_mb$",
    ):
        validate({"integrated": {"max_disk_mb": 5}})
    with pytest.raises(
        ConfigError,
        match=rf"^{EXT}\.profile_level: one of MindSpeed-RL's "
        rf"fields; set it as {KEY}\.profile_level$",
    ):
        validate({"extensions": {"profile_level": "level1"}})
    with pytest.raises(
        ConfigError,
        match=rf"^{EXT}\.bogus: unknown field; allowed fields: "
        r"backend, warmup_steps, ",
    ):
        validate({"extensions": {"bogus": 1}})


def test_unknown_key_in_integrated_lists_mindspeed_rl_fields_even_with_profile_off() -> None:
    with pytest.raises(ConfigError) as err:
        validate({"integrated": {"profile": False, "model": "x"}})
    assert str(err.value).endswith("allowed fields: " + ", ".join(MINDSPEED_RL_FIELDS))


def test_role_sections_take_any_field_and_extensions_lay_under_them() -> None:
    cfg = {
        "integrated": {"profile": True},
        "extensions": {"backend": "none", "warmup_steps": 1, "profile_steps": None},
        "actor": {"backend": "torch", "profile_level": "level1"},
    }
    actor, base = validate(cfg, "actor"), validate(cfg)
    assert (actor.backend.value, actor.warmup_steps, actor.profile_level) == (
        "torch",
        1,
        Level.level1,
    )
    assert (base.backend.value, base.profile_level) == ("none", Level.level0)


def test_errors_name_the_section_that_set_the_field() -> None:
    cfg = {
        "integrated": {"profile": True, "profile_step_start": 3},
        "actor": {"profile_step_end": 2},
        "extensions": {"warmup_steps": -2},
    }
    with pytest.raises(ConfigError, match=r"^profiler_config\.actor\.profile_step_end=2: "):
        validate({**cfg, "extensions": {}}, "actor")
    with pytest.raises(ConfigError, match=rf"^{EXT}\.warmup_steps=-2: must be an integer >= 0$"):
        validate({"integrated": {"profile": True}, "extensions": {"warmup_steps": -2}})


@pytest.mark.parametrize(
    "value,expected",
    [
        ("rollout_generate", Stage.actor_generate),
        ("ref_compute_log_prob", Stage.reference_compute_log_prob),
        ("compute_values", Stage.critic_compute_values),
        ("actor_image_embeds", Stage.actor_image_embeds),
        ("compute_rm_score", Stage.compute_rm_score),
        (
            ["rollout_generate", "actor_generate", "train_batch"],
            [Stage.actor_generate, Stage.train_batch],
        ),
    ],
)
def test_stage_takes_mindspeed_rl_and_verl_names(value: object, expected: object) -> None:
    assert check(stage=value).stage == expected


def test_verl_role_names_are_aliases() -> None:
    cfg = {
        "integrated": {"profile": True},
        "ref": {"stage": "ref_compute_log_prob"},
        "reward_model": {"profile_ranks": [1]},
    }
    assert validate(cfg, "ref") == validate(cfg, "reference")
    assert validate(cfg, "reference").stage is Stage.reference_compute_log_prob
    assert validate(cfg, "reward_model").profile_ranks == [1]
    assert validate(cfg, "reward_model") == validate(cfg, "reward")
    with pytest.raises(
        ConfigError,
        match=r"profiler_config\.ref: the section reference is "
        r"given twice",
    ):
        validate({"reference": {}, "ref": {}})


# -- verl's settings we lacked -------------------------------------------------------------
def test_profile_steps_list() -> None:
    c = check(profile_steps=[5, 2, 2])
    assert c.profile_steps == [2, 5]
    assert check(profile_steps=OmegaConf.create([3])).profile_steps == [3]
    for bad in ([], [0], [2, "x"], 3, [True], [1.5]):
        with pytest.raises(
            ConfigError,
            match=rf"^{EXT}\.profile_steps=.*: .*allowed: null \("
            r"the window profile_step_start\.\.end\) or a "
            r"list of steps >= 1, e.g\. \[2, 5\]$",
        ):
            check(profile_steps=bad)
    with pytest.raises(ConfigError, match=rf"^{EXT}\.warmup_steps=1: warmup steps come before"):
        check(profile_steps=[2], warmup_steps=1)
    assert check(profile_steps=[1, 1]).profile_steps == [1]  # the first step is a step
    with pytest.raises(ConfigError) as err:
        check(profile_steps=[2, "x"])
    assert str(err.value) == (
        f"{EXT}.profile_steps=[2, 'x']: bad entry 'x'; allowed: null "
        "(the window profile_step_start..end) or a list of steps >= 1, "
        "e.g. [2, 5]"
    )


@pytest.mark.parametrize("field", ["trace_alloc_max_entries", "stack_depth"])
def test_memory_history_settings(field: str) -> None:
    assert getattr(check(**{field: 7}), field) == 7
    with pytest.raises(ConfigError, match=rf"^{EXT}\.{field}=0: must be an integer >= 1$"):
        check(**{field: 0})


# -- profile: false never stops a run --------------------------------------------------------
STALE = {
    "profile_step_start": 9,
    "profile_step_end": 1,
    "profile_level": "level9",
    "stage": "gone",
    "profile_ranks": [-1],
    "profile_with_cpu": "maybe",
}


def test_profile_off_turns_stale_values_into_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    c = validate({"integrated": {"profile": False, **STALE}, "extensions": {"warmup_steps": -1}})
    d = IntegratedConfig()
    assert (c.profile_step_start, c.profile_step_end, c.profile_level, c.stage) == (
        d.profile_step_start,
        d.profile_step_end,
        d.profile_level,
        d.stage,
    )
    assert c.profile_ranks == "all" and c.profile_with_cpu and c.warmup_steps == 0
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("mindspeed-prof: profile is false, so these values are not used")
    for name in [*STALE, "warmup_steps"]:
        assert name in line, name
    validate({"integrated": {"profile": False, **STALE}, "extensions": {"warmup_steps": -1}})
    assert len(caplog.records) == 1  # once per process


@pytest.mark.parametrize("field", list(STALE))
def test_the_same_values_stop_the_run_with_profile_on(field: str) -> None:
    # a start after the default end is named by the rule it breaks: end > start
    named = "profile_step_end" if field == "profile_step_start" else field
    with pytest.raises(ConfigError, match=rf"^{KEY}\.{named}=.*{STALE[field]}"):
        validate({"integrated": {"profile": True, field: STALE[field]}})


@pytest.mark.parametrize(
    "extensions",
    [
        {"anomaly_factor": 0.5},
        {"max_disk_mb": -1},
        {"backend": "cuda"},
        {"flight_recorder_steps": -3},
        {"strict": "sometimes"},
    ],
)
def test_features_that_work_without_profile_still_stop_a_bad_run(extensions: dict) -> None:
    name = next(iter(extensions))
    with pytest.raises(ConfigError, match=rf"^{EXT}\.{name}"):
        validate({"integrated": {"profile": False}, "extensions": extensions})


def test_bad_profile_itself_stops() -> None:
    with pytest.raises(
        ConfigError,
        match=rf"^{KEY}\.profile='yes please': must be true or "
        r"false$",
    ):
        validate({"integrated": {"profile": "yes please"}})


def test_input_dataclass_is_not_changed() -> None:
    given = IntegratedConfig(profile=True, profile_ranks=[3, 1], stage="actor_update")
    checked = validate(given)
    assert given.profile_ranks == [3, 1] and given.stage == "actor_update"
    assert checked.profile_ranks == [1, 3] and checked.stage is Stage.actor_update


# -- round trip ------------------------------------------------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mindspeed_prof.config.schema import to_sections  # noqa: E402
from mindspeed_prof.config.validate import sections  # noqa: E402

_VALID = {
    "profile": st.booleans(),
    "mstx": st.just(True),
    "stage": st.sampled_from(
        ["all", "actor_update", "rollout_generate", ["actor_generate", "critic_update"]]
    ),
    "profile_step_start": st.integers(1, 5),
    "profile_level": st.sampled_from(["level0", "level1", "level2"]),
    "profile_ranks": st.one_of(st.just("all"), st.lists(st.integers(0, 9), min_size=1, max_size=3)),
    "profile_export_type": st.sampled_from(["text", "db"]),
    "backend": st.sampled_from(["auto", "torch", "none"]),
    "warmup_steps": st.integers(0, 2),
    "profile_continuous_steps": st.booleans(),
    "aic_metrics": st.sampled_from(["none", "memory", "pipe_utilization"]),
    "max_disk_mb": st.integers(0, 99),
    "anomaly_factor": st.sampled_from([0, 1.5, 3]),
    "trace_alloc_max_entries": st.integers(1, 9),
}


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({}, optional=_VALID), st.integers(1, 4))
def test_checked_settings_round_trip_through_plain_sections(fields: dict, length: int) -> None:
    if "profile_step_start" in fields:
        fields["profile_step_end"] = fields["profile_step_start"] + length
    first = validate(sections(fields))
    plain = to_sections(first)
    assert all(
        type(v) in (bool, int, float, str, list, type(None))
        for section in plain.values()
        for v in section.values()
    )
    given: dict[str, Any] = {**plain["integrated"], **plain["extensions"]}  # names, as a user
    assert validate(plain) == first == validate(IntegratedConfig(**given))


# -- messages and values at their edges -------------------------------------------------------
def test_sections_of_a_tree_are_kept_by_name() -> None:
    """A tree's sections come back as given (nulls dropped, verl's role names made ours); only
    a flat section is split."""
    tree = {
        "integrated": {"profile": True, "stage": None},
        "ref": {"stage": "ref_compute_log_prob"},
    }
    assert sections(tree) == {
        "integrated": {"profile": True},
        "reference": {"stage": "ref_compute_log_prob"},
    }
    assert sections({"profile": True, "max_disk_mb": 5}) == {
        "integrated": {"profile": True},
        "extensions": {"max_disk_mb": 5},
    }


def test_an_enum_of_another_kind_is_shown_by_its_value() -> None:
    with pytest.raises(ConfigError) as err:
        validate({"integrated": {"profile": True, "profile_export_type": Level.level1}})
    assert str(err.value) == f"{KEY}.profile_export_type='level1': allowed: text, db"


def test_a_word_for_an_integer_says_it_must_be_one() -> None:
    with pytest.raises(ConfigError) as err:
        check(profile_step_start="soon")
    assert str(err.value) == f"{KEY}.profile_step_start='soon': must be an integer"


def test_a_path_object_is_a_save_path() -> None:
    assert check(profile_save_path=Path("runs") / "prof").profile_save_path == "runs/prof"
    with pytest.raises(ConfigError) as err:
        check(profile_save_path=3)
    assert str(err.value) == f"{KEY}.profile_save_path=3: must be a path"


@pytest.mark.parametrize("value", [[1], "level9", ExportType.db])
def test_a_value_of_no_level_is_one_line_naming_the_levels(value: object) -> None:
    """A list (unhashable), an unknown name and another enum's member alike."""
    with pytest.raises(ConfigError) as err:
        validate(
            {"integrated": {"profile": True, "profile_export_type": "text", "profile_level": value}}
        )
    hint = "unknown (did you mean level2?); " if value == "level9" else ""  # a name: the closest
    assert str(err.value).endswith(f": {hint}allowed: level_none, level0, level1, level2")


@pytest.mark.parametrize(
    "field,value,closest",
    [
        ("stage", "actor_gen", "actor_generate"),
        ("stage", "critic_updat", "critic_update"),
        ("stage", "rollout_gen", "rollout_generate"),  # verl's name, read as ours
        ("profile_level", "Level1", "level1"),
        ("profile_export_type", "txt", "text"),
        ("profile_export_type", "DB", "db"),
    ],
)
def test_a_misspelt_name_gets_the_closest_one(field: str, value: str, closest: str) -> None:
    with pytest.raises(ConfigError) as err:
        check(**{field: value})
    assert f"{KEY}.{field}={value!r}: unknown (did you mean {closest}?); allowed" in str(err.value)


def test_a_misspelt_stage_in_a_list_and_a_name_close_to_none() -> None:
    with pytest.raises(
        ConfigError,
        match=r"bad entry 'actor_updte', unknown stage \(did you "
        r"mean actor_update\?\); allowed entries: ",
    ):
        check(stage=["actor_generate", "actor_updte"])
    with pytest.raises(ConfigError) as err:
        check(profile_level="zzzzzz")
    assert (
        str(err.value) == f"{KEY}.profile_level='zzzzzz': allowed: level_none, level0, "
        "level1, level2"
    )  # no guess


def test_a_misspelt_role_or_section_gets_the_closest_one() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^profiler_config\.critc: unknown section \(did you "
        r"mean critic\?\); allowed sections: ",
    ):
        validate({"critc": {}})
    with pytest.raises(
        ConfigError,
        match=r"^role 'refernce': unknown \(did you mean "
        r"reference\?\); ",
    ):
        validate({}, "refernce")


def test_a_bad_stage_names_verl_stage_names_too() -> None:
    with pytest.raises(ConfigError) as err:
        check(stage=3)
    assert str(err.value).endswith(
        "or a list of stages such as [actor_generate, actor_update] (verl's names too: "
        "rollout_generate for actor_generate, ref_compute_log_prob for "
        "reference_compute_log_prob, compute_values for critic_compute_values)"
    )


def test_a_tuple_is_shown_as_the_list_it_is_read_as() -> None:
    """Lists may come as tuples from Python callers; the message shows them as lists."""
    with pytest.raises(
        ConfigError,
        match=rf"^{KEY}\.stage=\['actor_generate', 'bogus'\]: "
        r"bad entry 'bogus', unknown stage",
    ):
        check(stage=("actor_generate", "bogus"))
    with pytest.raises(ConfigError, match=rf"^{KEY}\.stage=\[\]: an empty list captures"):
        check(stage=())
    with pytest.raises(ConfigError, match=rf"^{EXT}\.profile_steps=\[2, 'x'\]: bad entry 'x'"):
        check(profile_steps=(2, "x"))
    with pytest.raises(ConfigError, match=rf"^{KEY}\.profile_ranks=\[0, -1\]: bad entry -1"):
        check(profile_ranks=(0, -1))


@pytest.mark.parametrize(
    "ranks,message",
    [
        ([-1], '[-1]: bad entry -1; allowed: "all" or a list of integers >= 0, e.g. [0, 1]'),
        (3, '3: allowed: "all" or a list of integers >= 0, e.g. [0, 1]; write [3]'),
        ([], '[]: allowed: "all" or a list of integers >= 0, e.g. [0, 1]'),
    ],
)
def test_bad_ranks_message_in_full(ranks: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        check(profile_ranks=ranks)
    assert str(err.value) == f"{KEY}.profile_ranks={message}"


@pytest.mark.parametrize("word,expected", [("true", True), ("TRUE", True), ("False", False)])
def test_true_and_false_as_words_in_any_case(word: str, expected: bool) -> None:
    assert check(mstx=word, profile_with_memory=word).profile_with_memory is expected


def test_an_empty_stage_list_message_in_full() -> None:
    with pytest.raises(ConfigError) as err:
        check(stage=[])
    assert str(err.value) == (
        f"{KEY}.stage=[]: an empty list captures nothing; allowed: all, actor_generate, "
        "actor_compute_log_prob, reference_compute_log_prob, critic_compute_values, "
        "actor_update, critic_update, actor_image_embeds, compute_rm_score, train_batch, "
        "forward_backward, weight_sync, reshard, offload, onload, engine_sleep, engine_wake, "
        "or a list of stages such as [actor_generate, actor_update]"
    )


def test_a_field_in_the_wrong_section_message_in_full() -> None:
    with pytest.raises(ConfigError) as err:
        validate({"integrated": {"max_disk_mb": 5}})
    assert str(err.value) == (
        f"{KEY}.max_disk_mb: not one of MindSpeed-RL's fields, which are all "
        "profiler_config.integrated may hold (its config class rejects any other key); "
        f"set it as {EXT}.max_disk_mb"
    )
    with pytest.raises(ConfigError) as err:
        validate({"extensions": {"mstx": True}})
    assert str(err.value) == (f"{EXT}.mstx: one of MindSpeed-RL's fields; set it as {KEY}.mstx")


@pytest.mark.parametrize(
    "section,fields,message",
    [
        (
            "extensions",
            {"anomaly_min_ms": float("inf")},
            "profiler_config.extensions.anomaly_min_ms=inf: must be a number >= 0 (the ms a slow "
            "step or stage is over its median as well; 0: anomaly_factor alone decides)",
        ),
        (
            "extensions",
            {"anomaly_capture_steps": 0},
            "profiler_config.extensions.anomaly_capture_steps=0: must be an integer >= 1 (steps "
            "captured after an anomaly)",
        ),
        (
            "extensions",
            {"anomaly_window": 0},
            "profiler_config.extensions.anomaly_window=0: must be an integer >= 2 (steps in the "
            "rolling median)",
        ),
        (
            "integrated",
            {"profile_step_start": 0},
            "profiler_config.integrated.profile_step_start=0: must be an integer >= 1 (steps are "
            "1-based)",
        ),
        (
            "integrated",
            {"profile_with_cpu": False, "profile_with_npu": False, "mstx": False},
            "profiler_config.integrated: nothing to collect: profile_with_cpu, profile_with_npu "
            "and mstx are all false; set at least one of them to true",
        ),
        (
            "extensions",
            {"warmup_steps": -1},
            "profiler_config.extensions.warmup_steps=-1: must be an integer >= 0",
        ),
        (
            "extensions",
            {"flight_recorder_steps": -1},
            "profiler_config.extensions.flight_recorder_steps=-1: must be an integer >= 0 (0 turns "
            "it off)",
        ),
        (
            "extensions",
            {"profile_steps": [3], "warmup_steps": 2},
            "profiler_config.extensions.warmup_steps=2: warmup steps come before "
            "profile_step_start, and profile_steps replaces the window; set warmup_steps=0, or use "
            "profile_step_start and profile_step_end",
        ),
        (
            "integrated",
            {"mstx": True, "profile_export_type": "db", "profile_level": "level_none"},
            "profiler_config.integrated.profile_export_type=db: not supported with mstx=true and "
            "profile_level=level_none (torch_npu exports lightweight ranges as text only); "
            "allowed: text, or profile_level in level0, level1, level2",
        ),
    ],
)
def test_a_bad_value_is_one_message_in_full(
    section: str, fields: dict[str, Any], message: str
) -> None:
    tree: dict[str, Any] = {"integrated": {"profile": True}}
    tree.setdefault(section, {}).update(fields)
    with pytest.raises(ConfigError) as caught:
        validate(tree)
    assert str(caught.value) == message


def test_one_step_after_an_anomaly_is_allowed() -> None:
    cfg = validate({"integrated": {"profile": True}, "extensions": {"anomaly_capture_steps": 1}})
    assert cfg.anomaly_capture_steps == 1


@pytest.mark.parametrize(
    "fields,defaults",
    [
        (
            {"profile_step_start": 5, "profile_step_end": 2},
            {"profile_step_start": 1, "profile_step_end": 2},
        ),
        ({"profile_save_path": ""}, {"profile_save_path": "./profiler_data"}),
        (
            {"profile_with_cpu": False, "profile_with_npu": False, "mstx": False},
            {"profile_with_cpu": True, "profile_with_npu": True, "mstx": False},
        ),
    ],
)
def test_with_profile_off_a_broken_rule_falls_back_to_every_default_it_names(
    fields: dict[str, Any], defaults: dict[str, Any]
) -> None:
    """``profile: false`` never stops a run over values it does not use: each field the
    broken rule names is reset to its default (and the run warned)."""
    cfg = validate({"integrated": {"profile": False, **fields}})
    assert {name: getattr(cfg, name) for name in defaults} == defaults


@pytest.mark.parametrize(
    "tree,message",
    [
        ([1], "profiler_config: expected a mapping, got list"),
        ({"integrated": 5}, "profiler_config.integrated: expected a mapping of fields, got int"),
    ],
)
def test_a_tree_that_is_not_a_mapping_is_named(tree: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate(tree)
    assert str(caught.value) == message


def test_comm_kernels_is_a_regex_named_when_it_is_not() -> None:
    assert check().comm_kernels == ""
    assert check(comm_kernels=r"my_a2a|ep_(dispatch|combine)\b").comm_kernels == (
        r"my_a2a|ep_(dispatch|combine)\b"
    )
    with pytest.raises(ConfigError) as bad:
        check(comm_kernels="ep_(dispatch")
    assert str(bad.value) == (
        f"{EXT}.comm_kernels='ep_(dispatch': not a regular expression (missing ), unterminated "
        "subpattern at position 3); allowed: a Python regular expression matched (re.search) "
        "against device kernel names, e.g. 'my_all2all|ep_dispatch', or '' for none"
    )
    with pytest.raises(
        ConfigError,
        match=rf"^{EXT}\.comm_kernels=3: must be a regular "
        "expression \\(a string\\)",
    ):
        check(comm_kernels=3)
    with pytest.raises(ConfigError, match=rf"^{EXT}\.comm_kernels='a+': longer than 1000 "):
        check(comm_kernels="a" * 1001)
    # with profile off, a bad pattern is warned about and not used, as other planned fields
    assert check(profile=False, comm_kernels="ep_(dispatch").comm_kernels == ""


# -- iteration windows -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extensions", "integrated", "message"),
    [
        (
            {"iteration_count": -1},
            {},
            r"^profiler_config\.extensions\.iteration_count=-1: must be an "
            r"integer >= 0 \(0: the whole stage",
        ),
        (
            {"iteration_start": -3, "iteration_count": 2},
            {},
            r"^profiler_config\.extensions\.iteration_start=-3: must be an integer >= 0",
        ),
        (
            {"iteration_start": "two"},
            {},
            r"^profiler_config\.extensions\.iteration_start='two': must be an integer$",
        ),
        (
            {"iteration_stage": "all"},
            {},
            r"^profiler_config\.extensions\.iteration_stage='all': 'all' has no iterations; "
            r"allowed: one stage, actor_generate",
        ),
        (
            {"iteration_stage": "actor_generat"},
            {},
            r"iteration_stage='actor_generat': unknown \(did you mean actor_generate\?\)",
        ),
        (
            {"iteration_count": 2, "iteration_stage": "actor_generate"},
            {"stage": ["actor_update"]},
            r"^profiler_config\.extensions\.iteration_stage='actor_generate': an iteration window "
            r"captures inside that stage, which stage=\['actor_update'\] does not capture",
        ),
        (
            {"first_microbatch": "yes"},
            {},
            r"^profiler_config\.extensions\.first_microbatch='yes': must be true or false$",
        ),
    ],
)
def test_bad_window_fields_name_the_field(
    extensions: dict[str, Any], integrated: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        validate({"integrated": {"profile": True, **integrated}, "extensions": extensions})


def test_window_fields_read_verls_stage_name_and_default_off() -> None:
    c = validate(
        {
            "integrated": {"profile": True},
            "extensions": {"iteration_count": 3, "iteration_stage": "rollout_generate"},
        }
    )
    assert (c.iteration_start, c.iteration_count, c.iteration_stage) == (0, 3, "actor_generate")
    d = validate({"integrated": {"profile": True}})
    assert (d.iteration_count, d.first_microbatch) == (0, False)


def test_the_dataclasses_are_omegaconf_structured_configs() -> None:
    """OmegaConf refuses ``object`` values and unions: the fields that hold either are Any."""
    node = OmegaConf.structured(
        ProfilerConfig(actor={"stage": "actor_update"}, integrated={"profile": True})
    )
    assert validate(node, "actor").stage is Stage.actor_update
    flat = OmegaConf.structured(IntegratedConfig(profile=True, profile_ranks=[1]))
    assert validate(flat).profile_ranks == [1]
