"""Overrides Hydra would reject badly get one line from the plugin: a preset group given no
name (``profiler_config=null``: a traceback in Hydra), a misspelt group or key
(``profilr=full``: Hydra's advice is ``+profilr=full``); the design card's spellings of the
presets are read as the presets. Inside ``@hydra.main`` the line is all that is printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import run_app
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from mindspeed_prof.config.presets import (
    PRESETS,
    SPELLINGS,
    misspelt_line,
    not_a_name_line,
    unknown_preset_line,
)

PRIMARY = "defaults:\n  - profiler_config: none\n  - _self_\nprofile: false\nx: 1\n"


@pytest.fixture(scope="module")
def conf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("app")
    (folder / "config.yaml").write_text(PRIMARY)
    return folder


@pytest.fixture(scope="module")
def composed(conf: Path) -> Iterator[Any]:
    """``composed(*overrides)``: the app's config as Hydra composes it (no state kept)."""
    from hydra.core.plugins import Plugins

    Plugins.instance()  # its first scan imports this folder's modules: not inside a @given

    def run(*overrides: str) -> Any:
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(conf), version_base=None):
                return compose("config", overrides=list(overrides))
        finally:
            GlobalHydra.instance().clear()

    yield run


def _rejected(composed: Any, override: str) -> str:
    with pytest.raises(ConfigCompositionException) as err:
        composed(override)
    return str(err.value)


@pytest.mark.parametrize("group", ["profiler_config", "profiler"])
@pytest.mark.parametrize(
    "value", ["null", "", "1", "true", "3.5", "[1]", "[mstx_light,1]", "[null]", "['']"]
)
def test_a_preset_group_given_no_name_is_one_line(composed: Any, group: str, value: str) -> None:
    """``[1]`` was Hydra's ``TypeError: argument of type 'int' is not iterable``."""
    override = f"{group}={value}"
    assert _rejected(composed, override) == not_a_name_line(group, override)
    assert not_a_name_line(group, override).startswith(
        f"mindspeed-prof: {override}: a preset's name is needed; profiling off is {group}=none; "
        "presets: none, mstx_light,"
    )


@pytest.mark.parametrize("value", ["null", "[1]", "''"])
def test_the_sweep_given_no_name_names_the_sweeps(composed: Any, value: str) -> None:
    override = f"+profiler_sweep={value}"
    assert _rejected(composed, override) == (
        f"mindspeed-prof: {override}: a sweep's name is needed; sweeps: all_stages"
    )


def test_a_list_of_preset_names_is_hydras_to_compose(composed: Any) -> None:
    """Hydra merges a list of a group's configs: names, as Hydra reads them, are let through."""
    assert composed("profiler_config=[mstx_light]").profiler_config.integrated.profile is True


def _edits(word: str) -> st.SearchStrategy[str]:
    """One deletion, insertion, substitution or swap of neighbours in ``word`` (letters and
    ``_``, never first), that leaves another word."""
    letters = "abcdefghijklmnopqrstuvwxyz_"

    @st.composite
    def edit(draw: st.DrawFn) -> str:
        kind = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
        i = draw(st.integers(1, len(word) - 1))
        c = draw(st.sampled_from(letters))
        out = {
            "delete": word[:i] + word[i + 1 :],
            "insert": word[:i] + c + word[i:],
            "replace": word[:i] + c + word[i + 1 :],
            "swap": word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :],
        }[kind]
        return out

    return edit().filter(lambda w: w != word)


@settings(max_examples=25, deadline=None)
@given(
    typo=_edits("profiler_config"),
    field=st.sampled_from(
        [
            "integrated.stage=actor_generate",
            "extensions.anomaly_factor=2",
            "actor.stage=actor_update",
        ]
    ),
)
def test_a_misspelt_group_with_a_field_names_the_group(
    composed: Any, typo: str, field: str
) -> None:
    override = f"{typo}.{field}"
    assert _rejected(composed, override) == misspelt_line(override, typo, "profiler_config")


@settings(max_examples=25, deadline=None)
@given(typo=_edits("profiler"))
def test_a_misspelt_preset_group_names_the_group(composed: Any, typo: str) -> None:
    """``profilr=full``: the alias (where it is free) is the closest group; a typo that is a
    key of the app's primary config (``profile``) is the app's, and composes."""
    if typo == "profile":  # the primary config has it: the override sets it
        assert composed(f"{typo}=true").profile is True
        return
    assert _rejected(composed, f"{typo}=full") == misspelt_line(f"{typo}=full", typo, "profiler")


def test_what_the_app_has_or_adds_is_the_apps(composed: Any) -> None:
    """A key far from our groups is Hydra's to answer; ``+profilr=full`` adds a key, as
    asked; a misspelt ``+profiler_swep`` (only ever used with ``+``) is called one."""
    with pytest.raises(ConfigCompositionException, match="Could not override 'trainer.lr'"):
        composed("trainer.lr=1")
    assert composed("+profilr=full").profilr == "full"
    assert _rejected(composed, "+profiler_swep=all_stages") == misspelt_line(
        "+profiler_swep=all_stages", "profiler_swep", "profiler_sweep"
    )


@pytest.mark.parametrize(
    "spelling,preset",
    [*SPELLINGS.items(), *((name.replace("_", "-"), name) for name in PRESETS if "_" in name)],
)
@pytest.mark.parametrize("group", ["profiler_config", "profiler"])
def test_the_cards_spellings_are_the_presets(
    composed: Any, spelling: str, preset: str, group: str
) -> None:
    got = composed(f"{group}={spelling}").profiler_config
    assert OmegaConf.to_container(got) == OmegaConf.to_container(
        composed(f"profiler_config={preset}").profiler_config
    )


@pytest.mark.parametrize(
    "override,line",
    [
        ("profiler=ful", unknown_preset_line("profiler", "ful")),
        ("profilr=full", misspelt_line("profilr=full", "profilr", "profiler")),
        (
            "profiler_confg.integrated.stage=actor_generate",
            misspelt_line(
                "profiler_confg.integrated.stage=actor_generate",
                "profiler_confg",
                "profiler_config",
            ),
        ),
        ("profiler_config=null", not_a_name_line("profiler_config", "profiler_config=null")),
        ("profiler_config=[1]", not_a_name_line("profiler_config", "profiler_config=[1]")),
    ],
)
def test_each_is_all_the_app_prints(app: Path, override: str, line: str) -> None:
    """As users run it: the line alone on stderr (no HYDRA_FULL_ERROR hint), exit 1, the task
    never ran."""
    proc = run_app(app, override)
    assert (proc.returncode, proc.stderr.splitlines()) == (1, [line])
    assert "TASK BODY RAN" not in proc.stdout
