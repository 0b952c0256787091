"""Presets of the ``profiler`` config group, each answering one question."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mindspeed_prof.config.schema import IntegratedConfig, Level, ProfilerConfig, Stage

__all__ = ["CALLBACK_CONFIG", "PRESETS", "register"]

#: A defaults-list entry that turns the Hydra callback on (``conf/mindspeed_prof/callback.yaml``).
CALLBACK_CONFIG = "/mindspeed_prof/callback"


def _preset(doc: str, **fields: Any) -> type[ProfilerConfig]:
    """A ``ProfilerConfig`` subclass whose ``integrated`` defaults are ``fields``."""

    @dataclass
    class Preset(ProfilerConfig):
        defaults: list[Any] = field(default_factory=lambda: [CALLBACK_CONFIG, "_self_"])
        integrated: IntegratedConfig = field(default_factory=lambda: IntegratedConfig(**fields))

    Preset.__doc__ = doc
    return Preset


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
    """Store every preset in Hydra's ConfigStore (group ``profiler``, package ``profiler_config``)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for name, (doc, fields) in PRESETS.items():
        cs.store(group="profiler", name=name, node=_preset(doc, **fields),
                 package="profiler_config", provider="mindspeed-prof")
