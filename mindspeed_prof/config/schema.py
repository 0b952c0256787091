"""The ``profiler_config`` schema: MindSpeed-RL's fields as typed dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = [
    "AicMetrics",
    "Backend",
    "ExportType",
    "IntegratedConfig",
    "Level",
    "ProfilerConfig",
    "ROLES",
    "Stage",
    "STAGES",
    "stage_names",
]


class Stage(Enum):
    """What to capture: every step whole (``all``) or one RL stage per execution."""

    all = "all"
    actor_generate = "actor_generate"
    actor_compute_log_prob = "actor_compute_log_prob"
    reference_compute_log_prob = "reference_compute_log_prob"
    critic_compute_values = "critic_compute_values"
    actor_update = "actor_update"
    critic_update = "critic_update"


#: The RL stages in the order one training step runs them.
STAGES: tuple[str, ...] = tuple(s.value for s in Stage if s is not Stage.all)

#: The sections ``profiler_config`` may hold: MindSpeed-RL's ``integrated`` and verl's roles.
ROLES: tuple[str, ...] = ("integrated", "actor", "rollout", "reference", "critic", "reward")


class Level(Enum):
    """How much the op-level profiler records (``level_none``: ranges only)."""

    level_none = "level_none"
    level0 = "level0"
    level1 = "level1"
    level2 = "level2"


class ExportType(Enum):
    """On-disk format of a capture."""

    text = "text"
    db = "db"


class Backend(Enum):
    """Which profiler records the capture."""

    auto = "auto"
    torch_npu = "torch_npu"
    torch = "torch"
    none = "none"


class AicMetrics(Enum):
    """torch_npu AI Core metrics (level1 and level2 only)."""

    none = "none"
    pipe_utilization = "pipe_utilization"
    arithmetic_utilization = "arithmetic_utilization"
    memory = "memory"
    memory_l0 = "memory_l0"
    memory_ub = "memory_ub"
    resource_conflict_ratio = "resource_conflict_ratio"
    l2_cache = "l2_cache"
    memory_access = "memory_access"


@dataclass
class IntegratedConfig:
    """``profiler_config.integrated``: MindSpeed-RL's fields, names and defaults unchanged.

    The fields after ``profile_ranks`` are extensions; each default keeps MindSpeed-RL's behaviour.
    """

    profile: bool = False
    mstx: bool = False
    stage: Any = Stage.all  # one Stage name or a list of them (OmegaConf has no Union)
    profile_save_path: str = "./profiler_data"
    profile_export_type: ExportType = ExportType.text
    profile_step_start: int = 1
    profile_step_end: int = 2
    profile_level: Level = Level.level0
    profile_with_memory: bool = False
    profile_record_shapes: bool = False
    profile_with_cpu: bool = True
    profile_with_npu: bool = True
    profile_with_module: bool = False
    profile_analysis: bool = False
    profile_ranks: Any = "all"
    # Extensions.
    backend: Backend = Backend.auto
    warmup_steps: int = 0
    with_stack: bool = False
    data_simplification: bool = True
    aic_metrics: AicMetrics = AicMetrics.none
    strict: bool = False
    # Captures nobody planned (flight recorder, anomaly trigger, on-demand, disk budget).
    flight_recorder_steps: int = 0
    anomaly_factor: float = 0.0
    anomaly_window: int = 20
    anomaly_capture_steps: int = 2
    anomaly_max_captures: int = 3
    on_demand: bool = True
    max_disk_mb: int = 0


@dataclass
class ProfilerConfig:
    """``profiler_config``: MindSpeed-RL's ``integrated`` section, and one per worker role.

    A role's section holds only what differs from ``integrated`` (any of its fields, checked
    the same way); a worker of that role profiles with ``integrated``'s values overridden by
    them. Role sections are plain mappings so that storing this schema stays cheap at every
    Hydra app's start (``presets.register`` lets the command line add keys to them).
    """

    integrated: IntegratedConfig = field(default_factory=IntegratedConfig)
    actor: dict[str, Any] = field(default_factory=dict)
    rollout: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] = field(default_factory=dict)
    critic: dict[str, Any] = field(default_factory=dict)
    reward: dict[str, Any] = field(default_factory=dict)


def stage_names(stage: Any) -> tuple[str, ...]:
    """A checked ``stage`` value (one ``Stage`` or name, or a list of them) as names."""
    items = stage if isinstance(stage, (list, tuple)) else [stage]
    return tuple(str(getattr(s, "value", s)) for s in items)
