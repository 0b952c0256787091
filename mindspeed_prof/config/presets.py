"""Presets of the ``profiler`` config group, each answering one question."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mindspeed_prof.config.schema import IntegratedConfig, Level, Stage

__all__ = ["CALLBACK_CONFIG", "PRESETS", "SCHEMA_CONFIG", "configs", "register"]

#: A defaults-list entry that turns the Hydra callback on.
CALLBACK_CONFIG = "/mindspeed_prof/callback"
_CALLBACK = {"hydra": {"callbacks": {"mindspeed_prof": {
    "_target_": "mindspeed_prof.hydra.callback.ProfilerCallback"}}}}


#: The ``profiler_config`` schema as a ConfigStore node every preset extends.
SCHEMA_CONFIG = "/mindspeed_prof/schema@_here_"


def _preset(fields: dict[str, Any]) -> dict[str, Any]:
    """A preset node: the typed schema first, then the preset's values, checked against it.

    Plain dicts extending one stored dataclass, rather than one dataclass per preset: storing a
    dataclass costs OmegaConf a type walk at every Hydra app's start (about 20 ms each here).
    """
    values = {k: getattr(v, "name", v) for k, v in fields.items()}
    return {"defaults": [SCHEMA_CONFIG, CALLBACK_CONFIG, "_self_"], "integrated": values}


#: name -> (the question it answers, its field values).
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "none": ("Profiling off; every hook is a no-op.", {}),
    "mstx_light": (
        "Which module or stage is slow, across ranks? Ranges only (MindSpeed-RL's lightweight "
        "mode): tiny files, safe on a full-size run.",
        dict(profile=True, mstx=True, profile_level=Level.level_none, profile_with_cpu=False,
             profile_with_npu=True),
    ),
    "stage_scoped": (
        "What runs inside one stage? One level1 capture per execution of the chosen stage "
        "(set profiler_config.integrated.stage).",
        dict(profile=True, mstx=True, stage=Stage.actor_update, profile_level=Level.level1),
    ),
    "memory_debug": (
        "Where does memory go? Memory and shapes for one step.",
        dict(profile=True, profile_level=Level.level1, profile_with_memory=True,
             profile_record_shapes=True, with_stack=True, profile_step_start=2,
             profile_step_end=3),
    ),
    "full": (
        "Everything about whole steps: level1 ops of all stages, with shapes, for two steps.",
        dict(profile=True, mstx=True, profile_level=Level.level1, profile_record_shapes=True,
             profile_step_start=2, profile_step_end=4),
    ),
    "dpo": (
        "MindSpeed-LLM's DPO path: one warmup step, so end - start + 1 steps are collected.",
        dict(profile=True, profile_level=Level.level1, warmup_steps=1),
    ),
}


def configs() -> Iterator[tuple[str, str, Any, str | None]]:
    """``(group, name, node, package)`` of every config mindspeed-prof gives Hydra."""
    from omegaconf import OmegaConf

    from mindspeed_prof.config.schema import ROLES, STAGES

    # ProfilerConfig, with role sections the command line can add keys to
    # (profiler_config.actor.stage=...; validate() checks them). Typing only ``integrated``
    # keeps the type walk short when an app composes a preset.
    schema: dict[str, Any] = {"integrated": IntegratedConfig}
    for role in ROLES[1:]:
        schema[role] = OmegaConf.create({}, flags={"struct": False})
    yield "mindspeed_prof", "schema", schema, None
    yield "mindspeed_prof", "callback", _CALLBACK, "_global_"
    # With -m, one job per RL stage:
    #   python train.py -m profiler=stage_scoped +profiler_sweep=all_stages
    yield "profiler_sweep", "all_stages", {"hydra": {"sweeper": {"params": {
        "profiler_config.integrated.stage": ",".join(STAGES)}}}}, "_global_"
    for name, (_, fields) in PRESETS.items():
        yield "profiler", name, _preset(fields), "profiler_config"


def register() -> None:
    """Store every config in Hydra's ConfigStore (group ``profiler``, package ``profiler_config``).

    The Hydra plugin does not call this: it serves the same configs lazily (see
    ``hydra_plugins/mindspeed_prof``); this is for apps that want them in the ConfigStore.
    """
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group, name, node, package in configs():
        cs.store(group=group, name=name, node=node, package=package, provider="mindspeed-prof")
