"""A MindSpeed-RL-shaped app with the README's one line runs MindSpeed-RL-style config code
unchanged.

The stand-ins below are written here from the behaviour of MindSpeed-RL's code (commit
05a90d77: ``config_cls/base_config.py``, ``config_cls/mindstudio_config.py``,
``utils/utils.py`` ``get_grpo_profiler``/``profiler_start``, ``cli/train_dpo.py`` and
MindSpeed-LLM's argparse flags): strict keys, string comparisons, raw values.
"""

from __future__ import annotations

import argparse
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, ListConfig, OmegaConf

from mindspeed_prof.config import validate
from mindspeed_prof.config.presets import PRESETS
from mindspeed_prof.config.schema import Stage, stage_names


# -- stand-ins of MindSpeed-RL's config code ---------------------------------------------------
class BaseConfig:
    """``BaseConfig.update``: each key (``-`` read as ``_``) must be an attribute already;
    its value is stored as given."""

    def update(self, config_dict: Any) -> None:
        for key, value in config_dict.items():
            key = key.replace("-", "_")
            if not hasattr(self, key):
                raise ValueError(
                    f"The key: {key} is missing, causing the setup to fail. Please "
                    "check. If necessary, register it in the config file."
                )
            setattr(self, key, value)


class ProfilerConfig(BaseConfig):
    """``mindstudio_config.ProfilerConfig``: its defaults, then the node's keys."""

    def __init__(self, config_dict: Any, role: str = "") -> None:
        self.role = role
        self.profile = False
        self.mstx = False
        self.stage = "all"
        self.profile_save_path = ""
        self.profile_export_type = "text"
        self.profile_level = "level0"
        self.profile_with_memory = False
        self.profile_record_shapes = False
        self.profile_with_cpu = True
        self.profile_with_npu = True
        self.profile_with_module = False
        self.profile_step_start = 1
        self.profile_step_end = 2
        self.profile_analysis = False
        self.profile_ranks = "all"
        self.update(config_dict)


def grpo_profiler_args(pc: ProfilerConfig, rank: int = 0) -> dict[str, Any] | None:
    """What ``get_grpo_profiler`` computes before calling torch_npu (None: not profiled)."""
    if not pc.profile:
        return None
    ranks: Any = pc.profile_ranks  # "all", a list or an int: as the config gave it
    if ranks != "all":
        try:
            ranks = list(ranks)
        except TypeError:
            ranks = [0]
        if rank not in ranks:
            return None
    levels = {
        "level_none": "Level_none",
        "level0": "Level0",
        "level1": "Level1",
        "level2": "Level2",
    }
    if pc.profile_level not in levels:
        raise ValueError(
            f"profiler_level only supports level0, 1, 2, and level_none, but gets "
            f"{pc.profile_level}"
        )
    if pc.profile_export_type == "text":
        export = "Text"
    elif pc.profile_export_type == "db":
        export = "Db"
    else:
        raise AttributeError("export_type")  # MindSpeed-RL's message reads a missing attribute
    all_steps = pc.stage == "all"
    skip_first = pc.profile_step_start - 1 if all_steps else 0
    active = pc.profile_step_end - pc.profile_step_start if all_steps else 1
    return {
        "level": levels[pc.profile_level],
        "export": export,
        "skip_first": skip_first,
        "active": active,
        "save": pc.profile_save_path,
        "mstx": pc.mstx,
    }


def profiler_start_role(pc: ProfilerConfig, role: str) -> bool:
    """``profiler_start``'s stage test: does this role's code path start a profiler?"""
    if pc.stage != "all":
        try:
            if isinstance(pc.stage, str):
                return role == pc.stage
            return role in list(pc.stage)
        except TypeError:  # MindSpeed-RL: "profiler stage is not iterable", nothing profiled
            return False
    return role == pc.role


def megatron_parser() -> argparse.ArgumentParser:
    """Megatron's and MindSpeed-LLM's profile flags (nothing else: unknown flags exit 2)."""
    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--profile", action="store_true")
    p.add_argument("--profile-step-start", type=int, default=10)
    p.add_argument("--profile-step-end", type=int, default=12)
    p.add_argument("--profile-ranks", nargs="+", type=int, default=[0])
    p.add_argument("--profile-export-type", choices=["text", "db"], default="text")
    p.add_argument(
        "--profile-level", choices=["level_none", "level0", "level1", "level2"], default="level0"
    )
    for flag in ("data-simplification", "with-stack", "with-memory", "record-shapes", "with-cpu"):
        p.add_argument(f"--profile-{flag}", action="store_true")
    p.add_argument("--profile-save-path", type=str, default="./profile_dir")
    return p


def dpo_argv(integrated: DictConfig) -> list[str]:
    """``train_dpo.py``'s copy of every ``profile*`` key into Megatron's argv."""
    copied: dict[str, Any] = {}
    container = OmegaConf.to_container(integrated, resolve=True)
    assert isinstance(container, dict)
    for key, value in container.items():
        assert isinstance(key, str)
        if "profile" in key:
            copied[key] = value
        if key == "profile_ranks" and value == "all":
            copied[key] = -1
    argv: list[str] = []
    for key, value in copied.items():
        flag = f"--{key.replace('_', '-')}"
        if isinstance(value, ListConfig):
            argv += [flag, *map(str, value)]
        elif isinstance(value, bool):
            argv += [flag] if value else []
        elif value is not None:
            argv += [flag, f"{value}"]
    return argv


def parse_megatron(argv: list[str]) -> argparse.Namespace:
    try:
        args, unknown = megatron_parser().parse_known_args(argv)
    except argparse.ArgumentError as err:
        raise AssertionError(f"Megatron's argparse refuses {argv}: {err}") from None
    assert not unknown, f"Megatron's argparse exits 2 on {unknown}"
    return args


# -- a MindSpeed-RL-shaped app ---------------------------------------------------------------
#: tests/st/configs/test_ppo_trainer_qwen25_7b_integrated.yaml's block (MindSpeed-RL 05a90d77)
REAL_BLOCK = """
profiler_config:
  integrated:
    profile: true
    mstx: false
    stage: actor_update
    profile_save_path: ./profiler_data
    profile_export_type: db
    profile_step_start: 1
    profile_step_end: 2
    profile_level: level1
    profile_with_memory: false
    profile_record_shapes: false
    profile_with_cpu: true
    profile_with_npu: true
    profile_with_module: false
    profile_analysis: true
    profile_ranks: [0]
"""
#: the seed doc's DPO block
DPO_BLOCK = """
profiler_config:
  integrated:
    profile: true
    profile_save_path: ./profiler_data
    profile_export_type: text
    profile_step_start: 1
    profile_step_end: 2
    profile_level: level1
    profile_with_memory: false
    profile_record_shapes: false
    profile_with_cpu: true
    profile_ranks: all
"""


def app(tmp_path: Path, block: str = "") -> Path:
    """MindSpeed-RL's config shape: a list-valued model default, no _self_ (Hydra appends
    it), the README's one line added, and maybe a profiler_config block."""
    (tmp_path / "model").mkdir(parents=True, exist_ok=True)
    (tmp_path / "model" / "qwen25_7b.yaml").write_text("qwen25_7b:\n  num_layers: 2\n")
    (tmp_path / "config.yaml").write_text(
        textwrap.dedent("""
        defaults:
          - model:
              - qwen25_7b
          - profiler_config: none
        megatron_training:
          model: qwen25_7b
          global_batch_size: 4
        """)
        + textwrap.dedent(block)
    )
    return tmp_path


def composed(root: Path, *overrides: str) -> DictConfig:
    GlobalHydra.instance().clear()
    try:
        with (
            pytest.warns(UserWarning, match="missing `_self_`"),
            initialize_config_dir(config_dir=str(root), version_base=None),
        ):
            return compose("config", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


PRESET_NAMES = list(PRESETS)


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_mindspeed_rls_config_class_reads_every_preset(tmp_path: Path, preset: str) -> None:
    cfg = composed(app(tmp_path), f"profiler_config={preset}")
    pc = ProfilerConfig(cfg.get("profiler_config", {}).get("integrated", {}), role="integrated")
    args = grpo_profiler_args(pc)
    checked = validate(cfg.profiler_config)
    assert (args is not None) == checked.profile
    if args is not None:
        assert args["level"].lower() == checked.profile_level.value
        assert args["export"].lower() == checked.profile_export_type.value
    for value in cfg.profiler_config.integrated.values():
        assert type(value) in (bool, int, str), (preset, value)
    names = stage_names(checked.stage)
    for role in ("integrated", "actor_update", "actor_generate"):
        assert profiler_start_role(pc, role) == (
            role in names or (names == ("all",) and role == "integrated")
        )


def test_a_full_block_is_read_unchanged_by_both(tmp_path: Path) -> None:
    cfg = composed(app(tmp_path, REAL_BLOCK), "profiler_config=none")
    pc = ProfilerConfig(cfg.profiler_config.integrated, role="integrated")
    assert grpo_profiler_args(pc) == {
        "level": "Level1",
        "export": "Db",
        "skip_first": 0,
        "active": 1,
        "save": "./profiler_data",
        "mstx": False,
    }
    assert profiler_start_role(pc, "actor_update") and not profiler_start_role(pc, "integrated")
    assert list(pc.profile_ranks) == [0]
    c = validate(cfg.profiler_config)
    assert c.stage is Stage.actor_update and c.profile_ranks == [0] and c.profile_analysis


def test_command_line_fields_stay_plain_for_mindspeed_rl(tmp_path: Path) -> None:
    cfg = composed(
        app(tmp_path),
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=[actor_generate,actor_update]",
        "profiler_config.integrated.profile_level=level2",
        "profiler_config.extensions.aic_metrics=memory",
    )
    pc = ProfilerConfig(cfg.profiler_config.integrated, role="integrated")
    assert grpo_profiler_args(pc)["level"] == "Level2"  # type: ignore[index]
    assert profiler_start_role(pc, "actor_generate") and not profiler_start_role(
        pc, "critic_update"
    )
    assert validate(cfg.profiler_config).aic_metrics.value == "memory"


@pytest.mark.parametrize("preset", PRESET_NAMES)
def test_dpo_argument_copy_parses_with_every_preset(tmp_path: Path, preset: str) -> None:
    cfg = composed(app(tmp_path, DPO_BLOCK), f"profiler_config={preset}")
    args = parse_megatron(dpo_argv(cfg.profiler_config.integrated))
    checked = validate(cfg.profiler_config)
    assert args.profile == checked.profile and args.profile_level == checked.profile_level.value
    assert args.profile_export_type == checked.profile_export_type.value
    assert args.profile_ranks == [-1]


def test_dpo_preset_alone_gives_megatron_its_window(tmp_path: Path) -> None:
    cfg = composed(
        app(tmp_path),
        "profiler_config=dpo",
        "profiler_config.integrated.profile_step_start=5",
        "profiler_config.integrated.profile_step_end=7",
    )
    argv = dpo_argv(cfg.profiler_config.integrated)
    assert argv == [
        "--profile",
        "--profile-level",
        "level1",
        "--profile-step-start",
        "5",
        "--profile-step-end",
        "7",
    ]
    args = parse_megatron(argv)
    assert (args.profile_step_start, args.profile_step_end) == (5, 7)
    c = validate(cfg.profiler_config)
    assert c.warmup_steps == 1  # in extensions: never copied


def test_stand_ins_fail_where_mindspeed_rl_fails(tmp_path: Path) -> None:
    """The contract the tests above check is a real one: the first release's shape breaks it."""
    with pytest.raises(ValueError, match="The key: backend is missing"):
        ProfilerConfig({"profile": True, "backend": "auto"})
    with pytest.raises(AssertionError, match="exits 2 on .*--profile-with-npu"):
        parse_megatron(["--profile", "--profile-with-npu"])
    with pytest.raises(AssertionError, match="refuses"):
        parse_megatron(["--profile-export-type", "ExportType.text"])
    enum_like = ProfilerConfig({"profile": True, "profile_level": object()})
    with pytest.raises(ValueError, match="profiler_level only supports"):
        grpo_profiler_args(enum_like)


# -- pickled to Ray workers where mindspeed-prof is not installed ----------------------------
UNPICKLE = textwrap.dedent("""
    import importlib.abc, pickle, sys

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "mindspeed_prof" or name.startswith(
                    "hydra_plugins.mindspeed_prof"):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    sys.meta_path.insert(0, Hide())
    try:
        import mindspeed_prof
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("mindspeed_prof still importable")
    cfg = pickle.load(open(sys.argv[1], "rb"))
    assert not [m for m in sys.modules if m.startswith("mindspeed_prof")]
    print(cfg.profiler_config.integrated.profile_level, cfg.profiler_config.extensions.with_stack)
""")


def test_composed_config_unpickles_without_mindspeed_prof(tmp_path: Path) -> None:
    cfg = composed(app(tmp_path / "app"), "profiler_config=memory_debug")
    (tmp_path / "cfg.pkl").write_bytes(pickle.dumps(cfg))
    (tmp_path / "unpickle.py").write_text(UNPICKLE)
    proc = subprocess.run(
        [sys.executable, str(tmp_path / "unpickle.py"), str(tmp_path / "cfg.pkl")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["level1", "True"]
