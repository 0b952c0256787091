"""One ``validate()`` that every entry point runs before any training starts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mindspeed_prof.config.schema import (
    ROLES,
    ExportType,
    IntegratedConfig,
    Level,
    ProfilerConfig,
    Stage,
)

if TYPE_CHECKING:
    from omegaconf.errors import OmegaConfBaseException

__all__ = ["ConfigError", "validate"]

# omegaconf is imported where a value may be one of its nodes: importing this module (as every
# CLI command does, through the schema) costs nothing of its 50 ms. A DictConfig is a Mapping.


class ConfigError(ValueError):
    """A ``profiler_config`` value that cannot be honoured; the message names the key."""


def validate(cfg: Any, role: str = "integrated") -> IntegratedConfig:
    """Return the checked settings of ``role`` or raise ``ConfigError``.

    ``cfg`` is a ``profiler_config`` node (DictConfig, dict, or ``ProfilerConfig``), or one
    section itself (``IntegratedConfig`` or a mapping of its fields). A role's settings are
    ``integrated``'s with the role's section laid over them. Every section that sets something
    is checked, so a bad ``actor`` section stops the run whichever role asks.
    """
    if role not in ROLES:
        raise ConfigError(f"role {role!r}: unknown; allowed roles: {', '.join(ROLES)}")
    sections = _sections(cfg)
    if sections is None:  # one section on its own
        return _checked([(role, cfg)], role)
    base = ("integrated", sections.get("integrated") or {})
    for name in ROLES[1:]:  # every role's section, so a bad one stops the run whoever asks
        if name != role and _layer(sections.get(name)):
            _checked([base, (name, _layer(sections[name]))], name)
    own = _layer(sections.get(role)) if role != "integrated" else {}
    return _checked([base, (role, own)] if own else [base], role)


def _sections(cfg: Any) -> dict[str, Any] | None:
    """``cfg``'s sections by role, or ``None`` when ``cfg`` is one section."""
    if isinstance(cfg, IntegratedConfig):
        return None
    if isinstance(cfg, ProfilerConfig):
        return {name: getattr(cfg, name) for name in ROLES}
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"profiler_config: expected a mapping, got {type(cfg).__name__}")
    if "profiler_config" in cfg:
        return _sections(cfg["profiler_config"])
    keys = [str(k) for k in cfg]
    if not any(k in ROLES for k in keys) and any(k in _FIELDS for k in keys):
        return None
    unknown = [k for k in keys if k not in ROLES]
    if unknown:
        raise ConfigError(f"profiler_config.{unknown[0]}: unknown section; allowed sections: "
                          f"{', '.join(ROLES)}")
    return {k: cfg[k] for k in keys}


def _layer(section: Any) -> dict[str, Any]:
    """The fields a role's section sets (``null`` reads as unset: ``integrated``'s value)."""
    if section is None:
        return {}
    return {k: v for k, v in _items(section).items() if v is not None}


def _items(section: Any) -> dict[str, Any]:
    from omegaconf import DictConfig, OmegaConf

    if isinstance(section, IntegratedConfig):
        return {name: getattr(section, name) for name in _FIELDS}
    if isinstance(section, DictConfig):
        section = OmegaConf.to_container(section, resolve=True)
    if isinstance(section, Mapping):
        return {str(k): v for k, v in section.items()}
    raise ConfigError(f"expected a mapping, got {type(section).__name__}")


_FIELDS = tuple(IntegratedConfig.__dataclass_fields__)


def _checked(layers: list[tuple[str, Any]], role: str) -> IntegratedConfig:
    """The ``(name, section)`` layers merged in order (errors name the layer's key), checked
    as ``role``'s settings."""
    merged = None
    for name, section in layers:
        merged = _merge(section, name, merged)
    assert merged is not None
    _check_rules(merged, f"profiler_config.{role}")
    return merged


def _merge(section: Any, role: str, base: IntegratedConfig | None) -> IntegratedConfig:
    """``section``'s fields over ``base`` (or the defaults), typed by OmegaConf."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(section, IntegratedConfig):
        section = _items(section)
    if isinstance(section, Mapping):
        unknown = [str(k) for k in section if k not in _FIELDS]  # Hydra's "+key=" can add them
        if unknown:
            raise ConfigError(f"profiler_config.{role}.{unknown[0]}: unknown field; allowed "
                              f"fields: {', '.join(_FIELDS)}")
    try:
        if (base is None and OmegaConf.is_config(section)
                and OmegaConf.get_type(section) is IntegratedConfig):
            obj = OmegaConf.to_object(section)  # composed by Hydra: already typed, skip a merge
        else:
            start = OmegaConf.structured(base if base is not None else IntegratedConfig)
            obj = OmegaConf.to_object(OmegaConf.merge(start, section))
    except OmegaConfBaseException as err:
        raise ConfigError(_describe(err, role)) from None
    assert isinstance(obj, IntegratedConfig)
    return obj


def _describe(err: OmegaConfBaseException, role: str) -> str:
    from omegaconf.errors import ConfigKeyError

    key = getattr(err, "key", None) or getattr(err, "full_key", "") or "?"
    key = str(key).split(".")[-1]
    message = str(err).splitlines()[0]
    if isinstance(err, ConfigKeyError):
        return f"profiler_config.{role}.{key}: unknown field; allowed fields: {', '.join(_FIELDS)}"
    return f"profiler_config.{role}.{key}: {message}"


def _check_rules(c: IntegratedConfig, key: str) -> None:
    c.stage = _stage(c.stage, key)
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


def _stage(value: Any, key: str) -> Stage | list[Stage]:
    """One ``Stage``, or a list of distinct stages other than ``all`` (MindSpeed-RL takes both)."""
    value = _plain(value)
    names = ", ".join(s.name for s in Stage)
    if not isinstance(value, (list, tuple)):
        stage = _one_stage(value)
        if stage is None:
            raise ConfigError(f"{key}.stage={value!r}: allowed: {names}, or a list of stages "
                              "such as [actor_generate, actor_update]")
        return stage
    entries = ", ".join(s.name for s in Stage if s is not Stage.all)
    stages: list[Stage] = []
    for item in value:
        stage = _one_stage(item)
        if stage is None or stage is Stage.all:
            why = "'all' stands alone (stage: all)" if stage is Stage.all else "unknown stage"
            raise ConfigError(f"{key}.stage={list(value)!r}: bad entry {item!r}, {why}; "
                              f"allowed entries: {entries}")
        if stage not in stages:
            stages.append(stage)
    if not stages:
        raise ConfigError(f"{key}.stage=[]: an empty list captures nothing; allowed: {names}, "
                          "or a list of stages such as [actor_generate, actor_update]")
    return stages


def _plain(value: Any) -> Any:
    """An OmegaConf node as plain Python; anything else as it is."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def _one_stage(value: Any) -> Stage | None:
    if isinstance(value, Stage):
        return value
    return Stage.__members__.get(value) if isinstance(value, str) else None


def _ranks(value: Any, key: str) -> str | list[int]:
    """``"all"`` or a sorted list of distinct ints >= 0."""
    value = _plain(value)
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
