"""``validate`` for the telemetry fields: what each takes, one error naming the field, and
bad values stop the run even with ``profile: false`` (telemetry is no capture)."""

from __future__ import annotations

import pytest

from mindspeed_prof.config import ConfigError, validate

EXT = "profiler_config.extensions"


def _ext(**fields: object) -> dict:
    return {"integrated": {"profile": False}, "extensions": fields}


def test_off_by_default() -> None:
    c = validate({})
    assert (c.telemetry, c.telemetry_every, c.telemetry_ranges) == ((), 1, False)


@pytest.mark.parametrize(
    "given,expected",
    [
        (["ray", "tensorboard"], ("ray", "tensorboard")),
        (["metrics", "metrics"], ("metrics",)),
        ("tensorboard", ("tensorboard",)),
        ([], ()),
        (None, ()),
    ],
)
def test_sinks_are_a_list_of_names(given: object, expected: tuple) -> None:
    assert validate(_ext(telemetry=given)).telemetry == expected


def test_an_omegaconf_list_is_read_too() -> None:
    from omegaconf import OmegaConf

    node = OmegaConf.create({"extensions": {"telemetry": ["metrics", "ray"]}})
    assert validate(node).telemetry == ("metrics", "ray")


@pytest.mark.parametrize(
    "given,message",
    [
        (
            ["tensorbord"],
            f"{EXT}.telemetry=['tensorbord']: bad entry 'tensorbord' (did you mean "
            "tensorboard?); allowed: a list of metrics, ray, tensorboard, e.g. "
            "[metrics, tensorboard] ([] or null: off)",
        ),
        (
            {"ray": True},
            f"{EXT}.telemetry={{'ray': True}}: allowed: a list of metrics, ray, "
            "tensorboard, e.g. [metrics, tensorboard] ([] or null: off)",
        ),
        (
            ["ray", 3],
            f"{EXT}.telemetry=['ray', 3]: bad entry 3; allowed: a list of metrics, ray, "
            "tensorboard, e.g. [metrics, tensorboard] ([] or null: off)",
        ),
    ],
)
def test_a_bad_sink_is_one_error_naming_the_field_with_profile_off(
    given: object, message: str
) -> None:
    with pytest.raises(ConfigError) as err:
        validate(_ext(telemetry=given))
    assert str(err.value) == message


@pytest.mark.parametrize(
    "every,message",
    [
        (
            0,
            f"{EXT}.telemetry_every=0: must be an integer >= 1 (steps between exports to the "
            "telemetry sinks)",
        ),
        ("often", f"{EXT}.telemetry_every='often': must be an integer"),
    ],
)
def test_every_is_a_positive_step_count(every: object, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(_ext(telemetry=["ray"], telemetry_every=every))
    assert str(err.value) == message
    assert validate(_ext(telemetry_every="5")).telemetry_every == 5


def test_ranges_is_a_bool() -> None:
    assert validate(_ext(telemetry_ranges="true")).telemetry_ranges is True
    with pytest.raises(ConfigError, match=rf"^{EXT}\.telemetry_ranges=2: must be true or false$"):
        validate(_ext(telemetry_ranges=2))


def test_in_integrated_it_says_where_it_goes() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^profiler_config\.integrated\.telemetry: not one of "
        r"MindSpeed-RL's fields.*profiler_config\.extensions"
        r"\.telemetry$",
    ):
        validate({"integrated": {"telemetry": ["ray"]}})
