"""Hypothesis-generated bad overrides: every one rejected before training, naming the field."""

from __future__ import annotations

import pytest
from helpers import count
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof.config import ConfigError, IntegratedConfig, validate

FIELDS = list(IntegratedConfig.__dataclass_fields__)
BOOLS = [f for f in FIELDS if isinstance(getattr(IntegratedConfig(), f), bool)]
ENUMS = ["stage", "profile_level", "profile_export_type", "backend", "aic_metrics"]


def _is_int(text: str) -> bool:
    """Python's int() reading, underscores included ("9_9"): OmegaConf accepts these."""
    try:
        int(text)
    except ValueError:
        return False
    return True


junk = st.one_of(
    st.text(alphabet="abcxyz_-9", min_size=1, max_size=8).filter(
        # words OmegaConf itself reads as bools or null are not junk
        lambda t: (
            t.lower()
            not in ("true", "false", "null", "all", "none", "yes", "no", "on", "off", "y", "n")
            and not _is_int(t)
        )
    ),
    st.sampled_from(["[1,2]", "{a: 1}", "3.5", "-7"]),
)


@st.composite
def bad_override(draw) -> tuple[list[str], str]:
    """A list of overrides that must be rejected, and the field the message must name."""
    kind = draw(
        st.sampled_from(
            ["bool", "enum", "int", "window", "ranks", "unknown", "empty", "nothing", "mstx_db"]
        )
    )
    key = "profiler_config.integrated."
    if kind == "bool":  # OmegaConf reads any integer as a bool (0 false, else true): not junk
        f = draw(st.sampled_from(BOOLS))
        return [f"{key}{f}={draw(junk.filter(lambda t: t != '-7'))}"], f
    if kind == "enum":
        f = draw(st.sampled_from(ENUMS))
        return [f"{key}{f}={draw(junk)}"], f
    if kind == "int":
        f = draw(st.sampled_from(["profile_step_start", "profile_step_end", "warmup_steps"]))
        bad = draw(
            st.one_of(junk.filter(lambda t: t not in ("-7",)), st.integers(-(10**6), -1).map(str))
        )
        if f == "profile_step_end":
            return [f"{key}profile_step_start=5", f"{key}{f}={bad}"], f
        return [f"{key}{f}={bad}"], f
    if kind == "window":
        start = draw(st.integers(1, 50))
        end = draw(st.integers(-5, start))
        return [f"{key}profile_step_start={start}", f"{key}profile_step_end={end}"], (
            "profile_step_end"
        )
    if kind == "ranks":
        bad = draw(
            st.one_of(
                st.lists(st.integers(-100, -1), min_size=1, max_size=3).map(
                    lambda v: "[" + ",".join(map(str, v)) + "]"
                ),
                st.sampled_from(["abc", "[a,b]", "[0,x]", "[]", "7", "[1.5]", "{a: 1}", "[true]"]),
            )
        )
        return [f"{key}profile_ranks={bad}"], "profile_ranks"
    if kind == "unknown":
        name = draw(
            st.text(alphabet="abcdefgh_", min_size=3, max_size=12).filter(lambda n: n not in FIELDS)
        )
        return [f"+{key}{name}=1"], name
    if kind == "empty":
        return [f"{key}profile_save_path=' '"], "profile_save_path"
    if kind == "nothing":
        return [
            f"{key}profile_with_cpu=false",
            f"{key}profile_with_npu=false",
            f"{key}mstx=false",
        ], "nothing to collect"
    return [
        f"{key}mstx=true",
        f"{key}profile_level=level_none",
        f"{key}profile_export_type=db",
    ], "profile_export_type"


@pytest.fixture(scope="module")
def conf(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("conf")
    (d / "config.yaml").write_text("defaults:\n  - profiler: mstx_light\n  - _self_\n")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(d), version_base=None):
        yield lambda overrides: compose("config", overrides=overrides)
    GlobalHydra.instance().clear()


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(bad_override())
def test_every_bad_override_is_rejected_naming_the_field(conf, case) -> None:
    overrides, field = case
    count("bad config overrides tried")
    try:
        cfg = conf(overrides)
    except ConfigCompositionException as err:  # Hydra rejects types and enum names itself
        message = f"{err} {err.__cause__ or ''}"
        assert field in message, message
        return
    with pytest.raises(ConfigError) as raised:
        validate(cfg.profiler_config)
    assert field in str(raised.value) and "profiler_config.integrated" in str(raised.value)
