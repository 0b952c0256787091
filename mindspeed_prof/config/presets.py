"""Presets of the ``profiler`` config group, each answering one question."""

from __future__ import annotations

from typing import Any

from mindspeed_prof.config.schema import IntegratedConfig, Level, Stage

__all__ = ["CALLBACK_CONFIG", "PRESETS", "SCHEMA_CONFIG", "register"]

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


def register() -> None:
    """Store the presets in Hydra's ConfigStore: group ``profiler``, package ``profiler_config``."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from mindspeed_prof.config.schema import ROLES, STAGES

    # ProfilerConfig, with role sections the command line can add keys to
    # (profiler_config.actor.stage=...; validate() checks them). Typing only ``integrated``
    # keeps the type walk at every Hydra app's start as short as before roles existed.
    schema: dict[str, Any] = {"integrated": IntegratedConfig}
    for role in ROLES[1:]:
        schema[role] = OmegaConf.create({}, flags={"struct": False})
    cs = ConfigStore.instance()
    cs.store(group="mindspeed_prof", name="schema", node=schema, provider="mindspeed-prof")
    cs.store(group="mindspeed_prof", name="callback", node=_CALLBACK, package="_global_",
             provider="mindspeed-prof")
    # With -m, one job per RL stage:
    #   python train.py -m profiler=stage_scoped +profiler_sweep=all_stages
    cs.store(group="profiler_sweep", name="all_stages", package="_global_",
             provider="mindspeed-prof", node={"hydra": {"sweeper": {"params": {
                 "profiler_config.integrated.stage": ",".join(STAGES)}}}})
    for name, (_, fields) in PRESETS.items():
        cs.store(group="profiler", name=name, node=_preset(fields), package="profiler_config",
                 provider="mindspeed-prof")
