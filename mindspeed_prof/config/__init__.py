"""``profiler_config``: schema, validation and presets."""

from __future__ import annotations

from mindspeed_prof.config.schema import (
    STAGES,
    AicMetrics,
    BackendKind,
    ExportType,
    IntegratedConfig,
    Level,
    ProfilerConfig,
    Stage,
)
from mindspeed_prof.config.validate import ConfigError, validate

__all__ = [
    "STAGES",
    "AicMetrics",
    "BackendKind",
    "ConfigError",
    "ExportType",
    "IntegratedConfig",
    "Level",
    "ProfilerConfig",
    "Stage",
    "validate",
]
