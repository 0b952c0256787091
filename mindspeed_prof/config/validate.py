"""One ``validate()`` that every entry point runs before any training starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from mindspeed_prof.config.schema import ExportType, IntegratedConfig, Level, ProfilerConfig

__all__ = ["ConfigError", "KEY", "validate"]

#: Prefix of every key named in an error message.
KEY = "profiler_config.integrated"


class ConfigError(ValueError):
    """A ``profiler_config`` value that cannot be honoured; the message names the key."""


def validate(cfg: Any, role: str = "integrated") -> IntegratedConfig:
    """Return the checked ``IntegratedConfig`` for ``role`` or raise ``ConfigError``.

    ``cfg`` is a ``profiler_config`` node (DictConfig, dict, or ``ProfilerConfig``), or the
    role's section itself (``IntegratedConfig`` or a mapping of its fields).
    """
    section = _section(cfg, role)
    merged = _merge(section, role)
    _check_rules(merged, f"profiler_config.{role}")
    return merged


def _section(cfg: Any, role: str) -> Any:
    if isinstance(cfg, IntegratedConfig):
        return cfg
    if isinstance(cfg, ProfilerConfig):
        return getattr(cfg, role, None) if role == "integrated" else None
    if isinstance(cfg, (Mapping, DictConfig)):
        if role in cfg:
            return cfg[role]
        if "profiler_config" in cfg:
            return _section(cfg["profiler_config"], role)
        if any(k in cfg for k in ("profile", "stage", "profile_step_start")):
            return cfg
        raise ConfigError(f"profiler_config.{role}: section missing; found keys {sorted(cfg)}")
    raise ConfigError(f"profiler_config: expected a mapping, got {type(cfg).__name__}")


_FIELDS = tuple(IntegratedConfig.__dataclass_fields__)


def _merge(section: Any, role: str) -> IntegratedConfig:
    if isinstance(section, IntegratedConfig):
        section = OmegaConf.structured(section)
    if isinstance(section, (Mapping, DictConfig)):
        unknown = [str(k) for k in section if k not in _FIELDS]  # Hydra's "+key=" can add them
        if unknown:
            raise ConfigError(f"profiler_config.{role}.{unknown[0]}: unknown field; allowed "
                              f"fields: {', '.join(_FIELDS)}")
    try:
        if OmegaConf.is_config(section) and OmegaConf.get_type(section) is IntegratedConfig:
            obj = OmegaConf.to_object(section)  # composed by Hydra: already typed, skip a merge
        else:
            obj = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(IntegratedConfig),
                                                      section))
    except OmegaConfBaseException as err:
        raise ConfigError(_describe(err, role)) from None
    assert isinstance(obj, IntegratedConfig)
    return obj


def _describe(err: OmegaConfBaseException, role: str) -> str:
    key = getattr(err, "key", None) or getattr(err, "full_key", "") or "?"
    key = str(key).split(".")[-1]
    message = str(err).splitlines()[0]
    if isinstance(err, ConfigKeyError):
        return f"profiler_config.{role}.{key}: unknown field; allowed fields: {', '.join(_FIELDS)}"
    return f"profiler_config.{role}.{key}: {message}"


def _check_rules(c: IntegratedConfig, key: str) -> None:
    if c.profile_step_start < 1:
        raise ConfigError(
            f"{key}.profile_step_start={c.profile_step_start}: must be an integer >= 1 "
            "(steps are 1-based)"
        )
    if c.profile_step_end <= c.profile_step_start:
        raise ConfigError(
            f"{key}.profile_step_end={c.profile_step_end}: must be greater than "
            f"profile_step_start ({c.profile_step_start}); the window is [start, end), "
            f"so profile_step_end={c.profile_step_start + 1} captures one step"
        )
    if c.warmup_steps < 0:
        raise ConfigError(f"{key}.warmup_steps={c.warmup_steps}: must be an integer >= 0")
    c.profile_ranks = _ranks(c.profile_ranks, key)
    _check_triggers(c, key)
    if not c.profile_save_path or not str(c.profile_save_path).strip():
        raise ConfigError(f"{key}.profile_save_path: must be a non-empty path")
    if not (c.profile_with_cpu or c.profile_with_npu or c.mstx):
        raise ConfigError(
            f"{key}: nothing to collect: profile_with_cpu, profile_with_npu and mstx are all "
            "false; set at least one of them to true"
        )
    if c.mstx and c.profile_level is Level.level_none and c.profile_export_type is ExportType.db:
        raise ConfigError(
            f"{key}.profile_export_type=db: not supported with mstx=true and "
            "profile_level=level_none (torch_npu exports lightweight ranges as text only); "
            "allowed: text, or profile_level in level0, level1, level2"
        )


def _check_triggers(c: IntegratedConfig, key: str) -> None:
    """Flight recorder, anomaly trigger and disk budget fields."""
    for name in ("flight_recorder_steps", "anomaly_max_captures", "max_disk_mb"):
        if getattr(c, name) < 0:
            raise ConfigError(f"{key}.{name}={getattr(c, name)}: must be an integer >= 0 "
                              "(0 turns it off)")
    if c.anomaly_factor != 0 and not c.anomaly_factor > 1:
        raise ConfigError(f"{key}.anomaly_factor={c.anomaly_factor}: must be 0 (off) or a "
                          "number > 1, e.g. 2.0 (a step twice its rolling median)")
    if c.anomaly_window < 2:
        raise ConfigError(f"{key}.anomaly_window={c.anomaly_window}: must be an integer >= 2 "
                          "(steps in the rolling median)")
    if c.anomaly_capture_steps < 1:
        raise ConfigError(f"{key}.anomaly_capture_steps={c.anomaly_capture_steps}: must be an "
                          "integer >= 1 (steps captured after an anomaly)")


def _ranks(value: Any, key: str) -> str | list[int]:
    """``"all"`` or a sorted list of distinct ints >= 0."""
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    if value == "all":
        return "all"
    allowed = 'allowed: "all" or a list of integers >= 0, e.g. [0, 1]'
    if isinstance(value, int) and not isinstance(value, bool):
        raise ConfigError(f"{key}.profile_ranks={value!r}: {allowed}; write [{value}]")
    if not isinstance(value, (list, tuple)) or not value:
        raise ConfigError(f"{key}.profile_ranks={value!r}: {allowed}")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise ConfigError(f"{key}.profile_ranks={value!r}: bad entry {item!r}; {allowed}")
    return sorted(set(value))
