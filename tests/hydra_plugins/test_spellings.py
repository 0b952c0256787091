"""Both spellings select a preset: ``profiler=<preset>`` (the mission's) and
``profiler_config=<preset>``, in an app set up as the docs say, on the demo, with field
overrides and in sweeps; a name that is no preset gets one line with the closest one."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from helpers import run_app
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from mindspeed_prof.config.presets import PRESETS, preset_sections, unknown_preset_line

REPO_CONF = Path(__file__).resolve().parents[2] / "conf"
APP_PRIMARY = "defaults:\n  - profiler_config: none\n  - _self_\nx: 1\n"


@pytest.fixture
def composer(tmp_path: Path) -> Iterator[Any]:
    """``composer(primary_dir, name, *overrides)``: the job's config (``profiler_config`` and
    the other keys), composed as Hydra composes a job."""
    (tmp_path / "config.yaml").write_text(APP_PRIMARY)

    def run(conf: Path, name: str, *overrides: str) -> Any:
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(conf), version_base=None):
                return compose(name, overrides=list(overrides), return_hydra_config=True)
        finally:
            GlobalHydra.instance().clear()

    run.app = tmp_path  # type: ignore[attr-defined]
    yield run
    GlobalHydra.instance().clear()


def _job(cfg: Any) -> dict[str, Any]:
    """The config the task sees, the alias group's empty key aside."""
    out = cast("dict[str, Any]", OmegaConf.to_container(cfg, resolve=False))
    out.pop("hydra")
    assert out.pop("profiler", {}) == {}  # Hydra's place for the alias group: empty
    return out


FIELDS = [
    "",
    "profiler_config.integrated.stage=actor_generate",
    "profiler_config.integrated.profile_step_end=5",
]


@pytest.mark.parametrize("primary", ["app", "demo"])
def test_both_spellings_compose_the_same_config(composer: Any, primary: str) -> None:
    """For every preset, with or without a field override: ``profiler=p`` is exactly
    ``profiler_config=p`` (one preset, never laid over the app's), and the app's own
    ``profiler_config:`` block still wins (the demo's window and save path)."""
    conf, name = (composer.app, "config") if primary == "app" else (REPO_CONF, "demo")
    for preset, field in itertools.product(PRESETS, FIELDS):
        extra = [field] if field else []
        by_group = composer(conf, name, f"profiler_config={preset}", *extra)
        by_alias = composer(conf, name, f"profiler={preset}", *extra)
        assert _job(by_alias) == _job(by_group), (preset, field)
        choices = by_alias.hydra.runtime.choices
        assert choices["mindspeed_prof/preset@profiler_config"] == preset
        assert by_alias.hydra.callbacks.mindspeed_prof._target_.endswith("ProfilerCallback")
        integrated = OmegaConf.to_container(by_alias.profiler_config.integrated)
        assert isinstance(integrated, dict)
        want: dict[str, Any] = (
            {}
            if primary == "app"
            else {  # demo.yaml's, after the preset
                "profile_save_path": "${hydra:runtime.output_dir}/profiler_data"
            }
        )
        want = {**preset_sections(PRESETS[preset].fields)["integrated"], **want}
        if field:
            key, value = field.rsplit(".", 1)[1].split("=")
            want[key] = int(value) if value.isdigit() else value
        assert integrated == want, (preset, field)


def test_the_last_preset_named_by_the_alias_wins(composer: Any) -> None:
    """``profiler=a`` with ``profiler_config=b``: ``a``, whole (not ``a`` over ``b``)."""
    cfg = composer(composer.app, "config", "profiler=full", "profiler_config=mstx_light")
    assert _job(cfg) == _job(composer(composer.app, "config", "profiler_config=full"))


def test_the_app_default_stays_without_either(composer: Any) -> None:
    cfg = composer(REPO_CONF, "demo")
    assert cfg.hydra.runtime.choices["mindspeed_prof/preset@profiler_config"] == "mstx_light"
    assert "profiler" not in cfg  # the alias group's key only where it was chosen
    assert cfg.profiler_config.integrated.profile_level == "level_none"


@pytest.mark.parametrize(
    "override", ["profiler_config=mstx_lite", "profiler=mstx_lite", "profiler=stage_scopd"]
)
def test_a_name_that_is_no_preset_gets_the_closest(composer: Any, override: str) -> None:
    group, name = override.split("=")
    with pytest.raises(ConfigCompositionException) as err:
        composer(composer.app, "config", override)
    assert str(err.value) == unknown_preset_line(group, name)
    assert str(err.value).startswith(
        f"mindspeed-prof: {override}: no such preset (did you mean "
        f"{'stage_scoped' if 'stage' in name else 'mstx_light'}?);"
    )


def test_another_sources_preset_is_theirs(composer: Any, tmp_path: Path) -> None:
    """A ``profiler_config/<name>`` of the app's own is served, not called a typo."""
    (composer.app / "profiler_config").mkdir()
    (composer.app / "profiler_config" / "mine.yaml").write_text(
        "integrated:\n  profile: true\n  profile_level: level2\n"
    )
    cfg = composer(composer.app, "config", "profiler_config=mine")
    assert cfg.profiler_config.integrated.profile_level == "level2"


# -- as users run them -------------------------------------------------------------------------
@pytest.mark.hydra_app
def test_demo_takes_the_missions_spelling(tmp_path: Path) -> None:
    import subprocess
    import sys

    for spelling in ("profiler", "profiler_config"):
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "mindspeed_prof.cli",
                "demo",
                f"{spelling}=stage_scoped",
                "profiler_config.integrated.stage=actor_generate",
                "--cfg",
                "job",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
            check=True,
        ).stdout
        cfg = OmegaConf.create(out)
        assert cfg.profiler_config.integrated.stage == "actor_generate"
        assert cfg.profiler_config.integrated.profile_level == "level1"
        assert cfg.profiler_config.integrated.profile_step_start == 2  # demo.yaml's
        assert "profile_with_cpu" not in cfg.profiler_config.integrated  # not mstx_light's


def test_one_line_for_a_typo(app: Path) -> None:
    proc = run_app(app, "profiler_config=mstx_lite")
    assert proc.returncode == 1 and "TASK BODY RAN" not in proc.stdout
    # Hydra's bare list and its HYDRA_FULL_ERROR hint are gone
    assert proc.stderr.splitlines() == [unknown_preset_line("profiler_config", "mstx_lite")]


def test_sweep_over_the_missions_spelling(app: Path) -> None:
    """``-m profiler=a,b`` runs one job per preset; ``-m profiler=stage_scoped
    profiler_config.integrated.stage=...`` one per stage, each captured where it should."""
    run_app(
        app,
        "-m",
        "profiler=stage_scoped",
        "profiler_config.integrated.stage=actor_generate,critic_update",
        check=True,
    )
    folders = [
        sorted(p.name for p in (app / "profiler_data" / job).iterdir() if p.is_dir())
        for job in ("0", "1")
    ]
    assert folders == [["actor_generate"], ["critic_update"]]
    run_app(app, "-m", "profiler=mstx_light,full", "hydra.sweep.dir=presets", check=True)
    levels = [
        OmegaConf.load(
            app / "presets" / job / ".hydra" / "config.yaml"
        ).profiler_config.integrated.profile_level
        for job in ("0", "1")
    ]
    assert levels == ["level_none", "level1"]


VERL_APP = """import hydra

@hydra.main(version_base=None, config_path="cfg", config_name="ppo_trainer")
def main(cfg):
    print("TASK", cfg.profiler_config.integrated.get("profile_level"))

main()
"""


def test_verls_profiler_group_stays_verls(verl_tree: Path, tmp_path: Path, composer: Any) -> None:
    """In verl's tree ``profiler=<our preset>`` stops with one line naming the group to use;
    ``profiler_config=`` selects it; re-selecting verl's own SFT default by hand is the one
    thing the presets' alias entry costs there (docs/hydra.md says so)."""
    from verl_wheel import add_defaults_line

    from mindspeed_prof.config.presets import alias_taken_line

    add_defaults_line(verl_tree, tmp_path / "cfg")
    (tmp_path / "app.py").write_text(VERL_APP)
    proc = run_app(tmp_path, "profiler=mstx_light", "hydra.run.dir=run")
    assert proc.returncode == 1 and "TASK" not in proc.stdout
    assert proc.stderr.splitlines() == [alias_taken_line("mstx_light")]  # no Hydra hint
    assert (
        "TASK level_none"
        in run_app(tmp_path, "profiler_config=mstx_light", "hydra.run.dir=run", check=True).stdout
    )
    sft = composer(tmp_path / "cfg", "sft_trainer_engine", "profiler_config=full")
    assert sft.profiler._target_ == "verl.utils.profiler.ProfilerConfig"
    with pytest.raises(ConfigCompositionException, match="appears more than once"):
        composer(tmp_path / "cfg", "sft_trainer_engine", "profiler=profiler")
