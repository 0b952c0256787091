"""The installed plugin seen from a Hydra app that lives outside the package."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import run_app


def test_plugin_import_is_cheap() -> None:
    code = (
        "import sys, hydra_plugins.mindspeed_prof.mindspeed_prof_plugin as p; "
        "heavy = [m for m in ('torch', 'ray', 'torch_npu', 'rich', 'msgspec') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_apps_and_subprocesses_import_the_copy_under_test(app: Path) -> None:
    """Whatever copy of the package these tests import (a working tree, an installed wheel,
    mutmut's mutants/), the app's plugin, its callback and a plain subprocess import it too."""
    import importlib

    import mindspeed_prof
    from mindspeed_prof.hydra import callback

    plugin = importlib.import_module("hydra_plugins.mindspeed_prof")  # not this test folder's

    (app / "app.py").write_text(
        app.joinpath("app.py")
        .read_text()
        .replace(
            'print("TASK BODY RAN")',
            "import hydra_plugins.mindspeed_prof as p, "
            'mindspeed_prof.hydra.callback as c; print("FROM", p.__file__, c.__file__)',
        )
    )
    proc = run_app(app, check=True)
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("FROM ")]
    assert line.split()[1:] == [plugin.__file__, callback.__file__]
    code = "import mindspeed_prof; print(mindspeed_prof.__file__)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=app
    )
    assert out.stdout.strip() == mindspeed_prof.__file__


def test_mstx_light_cfg_job(app: Path) -> None:
    out = run_app(app, "profiler_config=mstx_light", "--cfg", "job", check=True).stdout
    assert "profile: true" in out and "mstx: true" in out and "profile_level: level_none" in out


PRESET_LINE = "profiler_config: dpo, full, memory_debug, mstx_light, none, stage_scoped"


def test_help_lists_the_groups_people_type(app: Path) -> None:
    """Both spellings README teaches, the sweep; not the callback's internal group."""
    out = run_app(app, "--help", check=True).stdout
    groups = [line for line in out.split("== Config ==")[0].splitlines() if ": " in line]
    assert groups == [
        PRESET_LINE.replace("profiler_config:", "profiler:"),
        PRESET_LINE,
        "profiler_sweep: all_stages",
    ]


def test_old_group_name_still_works_where_no_one_else_has_it(app: Path) -> None:
    (app / "config.yaml").write_text(
        (app / "config.yaml").read_text().replace("- profiler_config: none", "- profiler: none")
    )
    out = run_app(app, "profiler=mstx_light", "--cfg", "job", check=True).stdout
    assert "profile: true" in out and "profile_level: level_none" in out
    proc = run_app(app, "profiler=stage_scoped", check=True)
    assert (app / "profiler_data" / "actor_update").is_dir(), proc.stdout


def test_preset_typo_lists_available_options(app: Path) -> None:
    proc = run_app(app, "profiler_config=mstx_lite")
    assert proc.returncode != 0 and "mstx_light" in proc.stderr


@pytest.mark.parametrize(
    "override,field,allowed",
    [
        ("profiler_config.integrated.stage=bogus", "stage", "actor_generate"),
        ("profiler_config.integrated.profile_level=level9", "profile_level", "level_none"),
        ("profiler_config.integrated.profile_export_type=csv", "profile_export_type", "text"),
        ("profiler_config.integrated.profile_step_end=1", "profile_step_end", "greater than"),
        ("profiler_config.integrated.profile_ranks=[-1]", "profile_ranks", "integers >= 0"),
        ("profiler_config.integrated.profile_ranks=abc", "profile_ranks", '"all"'),
    ],
)
def test_bad_override_stops_before_task(app: Path, override: str, field: str, allowed: str) -> None:
    proc = run_app(app, "profiler_config=mstx_light", override)
    assert proc.returncode != 0
    assert "TASK BODY RAN" not in proc.stdout
    assert f"profiler_config.integrated.{field}" in proc.stderr and allowed in proc.stderr


def test_two_job_sweep(app: Path) -> None:
    proc = run_app(
        app,
        "-m",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_generate,actor_update",
        check=True,
    )
    assert proc.stdout.count("TASK DONE") == 2
    jobs = sorted(p.name for p in (app / "profiler_data").iterdir())  # the launch dir's
    assert jobs == ["0", "1"]


def test_sweep_over_a_stage_list_and_a_stage(app: Path) -> None:
    run_app(
        app,
        "-m",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=[actor_generate,actor_update],critic_update",
        check=True,
    )
    (sweep,) = app.glob("multirun/*/*")
    folders = [
        sorted(p.name for p in (app / "profiler_data" / job).iterdir() if p.is_dir())
        for job in ("0", "1")
    ]
    assert folders == [["actor_generate", "actor_update"], ["critic_update"]]
    jobs = json.loads((sweep / "sweep_summary.json").read_text())["jobs"]
    assert [j["stage"] for j in jobs] == [["actor_generate", "actor_update"], "critic_update"]
    # each stage in steps 2 and 3 (stage_scoped skips the warm-up step)
    assert [j["captures"] for j in jobs] == [4, 2] and all(j["ms_per_stage"] for j in jobs)


# -- verl's tree has a `profiler` group of its own -------------------------------------------
VERL_APP = textwrap.dedent("""
    import hydra

    @hydra.main(version_base=None, config_path="cfg", config_name="ppo_trainer")
    def main(cfg):
        print("TASK", cfg.profiler_config.integrated.get("profile_level"),
              cfg.actor_rollout_ref.actor.profiler._target_)

    main()
""")


@pytest.mark.hydra_app
def test_verl_help_lists_verls_profiler_and_ours_apart(verl_tree: Path, tmp_path: Path) -> None:
    from verl_wheel import add_defaults_line

    add_defaults_line(verl_tree, tmp_path / "cfg")
    (tmp_path / "app.py").write_text(VERL_APP)
    out = run_app(tmp_path, "--help", check=True).stdout
    listed = out[: out.index("== Config ==")]  # the groups section of --help
    groups = [line for line in listed.splitlines() if line.startswith("profiler")]
    assert groups == ["profiler: profiler", PRESET_LINE, "profiler_sweep: all_stages"], groups
    out = run_app(tmp_path, "profiler_config=mstx_light", "hydra.run.dir=run", check=True).stdout
    assert "TASK level_none verl.utils.profiler.ProfilerConfig" in out


def test_alias_question_goes_to_the_other_sources(tmp_path: Path) -> None:
    """The old name is free unless another source has the group: the composing repository's
    sources (hydra.searchpath entries included), else those of the search path the plugin
    saw."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import ConfigCompositionException

    from hydra_plugins.mindspeed_prof.mindspeed_prof_plugin import MindspeedProfConfigSource
    from mindspeed_prof.config import validate
    from mindspeed_prof.config.presets import alias_taken_line

    other = tmp_path / "other"
    (other / "profiler").mkdir(parents=True)
    (other / "profiler" / "theirs.yaml").write_text("x: 1\n")
    main = tmp_path / "main"
    main.mkdir()
    (main / "config.yaml").write_text(
        "defaults:\n  - profiler_config: none\n  - _self_\n"
        f"hydra:\n  searchpath: [file://{other}]\n"
    )
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(main), version_base=None):
            cfg = compose("config", overrides=["+profiler=theirs"])  # theirs, not an alias
            assert cfg.profiler.x == 1
            with pytest.raises(ConfigCompositionException) as err:
                compose("config", overrides=["+profiler=none"])  # ours is not served there
            assert str(err.value) == alias_taken_line("none")
            assert validate(
                compose("config", overrides=["profiler_config=full"]).profiler_config
            ).profile
        # no running Hydra: the search path the plugin was handed
        from hydra._internal.config_search_path_impl import ConfigSearchPathImpl

        path = ConfigSearchPathImpl()
        path.append("main", f"file://{main}")
        MindspeedProfConfigSource.search_path = path
        free = MindspeedProfConfigSource("mindspeed-prof", "mindspeed-prof://presets")
        assert free.alias_free() and free.is_config("profiler/none")
        path.append("other", f"file://{other}")
        assert not MindspeedProfConfigSource(
            "mindspeed-prof", "mindspeed-prof://presets"
        ).alias_free()
    finally:
        MindspeedProfConfigSource.search_path = None
        GlobalHydra.instance().clear()
