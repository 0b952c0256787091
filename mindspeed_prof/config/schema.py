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
    "Stage",
    "STAGES",
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
    stage: Stage = Stage.all
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
    """``profiler_config``: one section per worker role; MindSpeed-RL has ``integrated``."""

    integrated: IntegratedConfig = field(default_factory=IntegratedConfig)
