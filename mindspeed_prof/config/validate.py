"""One ``validate()`` that every entry point runs before any training starts.

A ``profiler_config`` is read as layers over the defaults: ``integrated`` (MindSpeed-RL's 15
fields only, as its own config class demands), ``extensions`` (ours only), then the role's own
section (any field). Each value is checked where it is read, so a message names the section
that set it; the rules between fields come after. With ``profile: false`` the fields of planned
captures are only warned about, once, and their defaults used: profiling that is off never
stops a run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import fields as dataclass_fields
from enum import Enum

from mindspeed_prof.config.schema import (
    EXTENSION_FIELDS,
    EXTENSIONS,
    MINDSPEED_RL_FIELDS,
    ROLE_ALIASES,
    ROLES,
    SECTIONS,
    STAGE_ALIASES,
    TELEMETRY_SINKS,
    AicMetrics,
    BackendKind,
    ExportType,
    IntegratedConfig,
    Level,
    ProfilerConfig,
    Section,
    Stage,
    canonical_role,
    canonical_stage,
    stage_names,
)

__all__ = [
    "MAX_PATTERN",
    "RUN_KEY",
    "ConfigError",
    "PLANNED_FIELDS",
    "did_you_mean",
    "pattern_problem",
    "sections",
    "validate",
]

#: Not a section: the driver's run id in a worker's config (``ray.worker_config``).
RUN_KEY = "run"

_FIELDS = MINDSPEED_RL_FIELDS + EXTENSION_FIELDS
_DEFAULTS = {
    f.name: getattr(IntegratedConfig(), f.name) for f in dataclass_fields(IntegratedConfig)
}

#: Fields that only planned captures use: with ``profile: false`` a bad value is a warning.
#: The others drive what works without ``profile`` (backend, flight recorder, anomaly trigger,
#: on-demand requests, disk budget, strict) and stop a bad run whatever ``profile`` says.
PLANNED_FIELDS = frozenset(MINDSPEED_RL_FIELDS[1:]) | {
    "warmup_steps",
    "profile_steps",
    "profile_continuous_steps",
    "with_stack",
    "data_simplification",
    "aic_metrics",
    "trace_alloc_max_entries",
    "stack_depth",
    "comm_kernels",
    "model_flops_per_token",
    "peak_tflops",
    "iteration_start",
    "iteration_count",
    "iteration_stage",
    "first_microbatch",
    *("schedule_skip_first", "schedule_wait", "schedule_warmup", "schedule_active"),
    *("schedule_repeat", "schedule_stage", "memory_window_steps", "capture_host_mb"),
    *("finish_hook_cmd", "finish_hook_ranks", "relocate_results"),
}
#: The longest regex ``comm_kernels`` (or ``--comm-kernels``) may be: the analysis tries it on
#: every kernel name.
MAX_PATTERN = 1000

_warned: set[str] = set()  # one warning per distinct message per process


def did_you_mean(name: object, allowed: Iterable[object]) -> str:
    """`` (did you mean X?)`` for the allowed name closest to ``name`` (case aside), or
    ``""``."""
    import difflib  # only a name that is wrong needs it

    by_lower = {str(a).lower(): str(a) for a in allowed}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1)
    return f" (did you mean {by_lower[close[0]]}?)" if close else ""


class ConfigError(ValueError):
    """A ``profiler_config`` value that cannot be honoured; the message names the key."""


class _Bad(Exception):
    """A value a field cannot take: ``problem`` ends the message (``allowed: ...``)."""

    def __init__(self, problem: str, shown: object = None) -> None:
        super().__init__(problem)
        self.problem, self.shown = problem, shown


def validate(
    cfg: object, role: str = "integrated", typed: Collection[str] = ()
) -> IntegratedConfig:
    """Return the checked settings of ``role`` or raise ``ConfigError``.

    ``cfg`` is a ``profiler_config`` node (DictConfig, dict, or ``ProfilerConfig``), a tree
    holding one (``{"profiler_config": ...}``), or one flat section (``IntegratedConfig``, or a
    mapping of any fields). A role's settings are ``integrated`` and ``extensions`` with the
    role's section laid over them. Every section that sets something is checked, so a bad
    ``actor`` section stops the run whichever role asks. ``typed``: the fields the command
    line set, whose bad values stop the run even with ``profile: false`` (a typo just typed,
    not a stale value of a config file).
    """
    role = _role(role)
    tree = _tree(cfg)
    warned = PLANNED_FIELDS - frozenset(typed)
    if tree is None:  # one flat section
        return _checked([(role, _plain(cfg), _FIELDS)], role, warned)
    base = [
        ("integrated", tree.get("integrated", {}), MINDSPEED_RL_FIELDS),
        (EXTENSIONS, tree.get(EXTENSIONS, {}), EXTENSION_FIELDS),
    ]
    for name in ROLES[1:]:  # every role's section, so a bad one stops the run whoever asks
        if name != role and tree.get(name):
            _checked([*base, (name, tree[name], _FIELDS)], name, warned)
    own = [(role, tree[role], _FIELDS)] if role != "integrated" and tree.get(role) else []
    return _checked([*base, *own], role, warned)


def sections(cfg: object) -> dict[str, Section]:
    """``cfg`` as plain sections by their canonical names, holding what each sets (nulls
    dropped). A flat section is split: MindSpeed-RL's fields to ``integrated``, ours to
    ``extensions``. Values are not checked (``validate`` does that)."""
    tree = _tree(cfg)
    if tree is not None:
        return tree
    flat = _plain(cfg)
    return {
        "integrated": {k: v for k, v in flat.items() if k not in EXTENSION_FIELDS},
        EXTENSIONS: {k: v for k, v in flat.items() if k in EXTENSION_FIELDS},
    }


# -- reading the sections ---------------------------------------------------------------------
def _role(role: str) -> str:
    name = canonical_role(role)
    if name not in ROLES:
        aliases = ", ".join(f"{a} for {b}" for a, b in ROLE_ALIASES.items())
        hint = did_you_mean(role, [*ROLES, *ROLE_ALIASES])
        raise ConfigError(
            f"role {role!r}: unknown{hint}; allowed roles: {', '.join(ROLES)} "
            f"(verl's names too: {aliases})"
        )
    return name


def _tree(cfg: object) -> dict[str, Section] | None:
    """``cfg``'s sections by canonical name (each a plain dict, nulls dropped), or ``None``
    when ``cfg`` is one flat section."""
    if isinstance(cfg, IntegratedConfig):
        return None
    if isinstance(cfg, ProfilerConfig):
        cfg = {f.name: getattr(cfg, f.name) for f in dataclass_fields(ProfilerConfig)}
    cfg = _container(cfg)
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"profiler_config: expected a mapping, got {type(cfg).__name__}")
    if "profiler_config" in cfg:
        return _tree(cfg["profiler_config"])
    keys = [str(k) for k in cfg if k != RUN_KEY]
    known = set(SECTIONS) | set(ROLE_ALIASES)
    if not any(k in known for k in keys) and any(k in _FIELDS for k in keys):
        return None
    out: dict[str, Section] = {}
    for key in keys:
        name = canonical_role(key)
        if key not in known:
            raise ConfigError(
                f"profiler_config.{key}: unknown section"
                f"{did_you_mean(key, [*SECTIONS, *ROLE_ALIASES])}; allowed sections: "
                f"{', '.join(SECTIONS)} (verl's role names "
                f"{', '.join(ROLE_ALIASES)} too)"
            )
        if name in out:
            raise ConfigError(
                f"profiler_config.{key}: the section {name} is given twice "
                f"({key} is verl's name for it); keep one"
            )
        out[name] = _plain(cfg[key], f"profiler_config.{key}")
    return out


def _container(value: object) -> object:
    """An OmegaConf node as plain Python (interpolations resolved); anything else as it is.

    omegaconf is imported only for its own nodes: a CLI command importing this module pays
    nothing of its 50 ms."""
    if type(value).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(value, resolve=True)
    return value


def _plain(section: object, key: str = "profiler_config") -> Section:
    """A section's set fields (``null`` reads as unset: the value below it)."""
    if section is None:
        return {}
    if isinstance(section, IntegratedConfig):
        section = {name: getattr(section, name) for name in _FIELDS}
    section = _container(section)
    if not isinstance(section, Mapping):
        raise ConfigError(f"{key}: expected a mapping of fields, got {type(section).__name__}")
    return {str(k): v for k, v in section.items() if v is not None}


# -- merging and checking ---------------------------------------------------------------------
def _checked(
    layers: list[tuple[str, Section, tuple[str, ...]]],
    role: str,
    warned: frozenset[str] = PLANNED_FIELDS,
) -> IntegratedConfig:
    """The ``(section, fields, allowed)`` layers over the defaults, each value checked as it
    is read, then the rules; ``role``'s settings. With ``profile: false``, a bad value of a
    field in ``warned`` is a warning and its default is used."""
    values = dict(_DEFAULTS)
    where = {
        name: ("integrated" if name in MINDSPEED_RL_FIELDS else EXTENSIONS) for name in _FIELDS
    }
    if role != "integrated" and len(layers) == 1:  # a flat section given for a role
        where = dict.fromkeys(_FIELDS, role)
    bad: dict[str, str] = {}
    for section, given, allowed in layers:
        for name, value in given.items():
            _known(section, name, allowed)
            where[name] = section
            try:
                values[name] = _CONVERT[name](_container(value))
                bad.pop(name, None)
            except _Bad as err:
                shown = value if err.shown is None else err.shown
                bad[name] = f"profiler_config.{section}.{name}={_show(shown)}: {err.problem}"
    if "profile" in bad:
        raise ConfigError(bad["profile"])
    lenient = not values["profile"]
    ignored: list[str] = []
    for name, message in bad.items():
        if not (lenient and name in warned):
            raise ConfigError(message)
        ignored.append(message)
        values[name] = _DEFAULTS[name]
    cfg = IntegratedConfig(**values)
    while (problem := _first_problem(cfg, where)) is not None:
        reset, message = problem
        if not (lenient and all(name in warned for name in reset)):
            raise ConfigError(message)
        ignored.append(message)
        for name in reset:
            setattr(cfg, name, _DEFAULTS[name])
    if ignored:
        _warn_once(
            "mindspeed-prof: profile is false, so these values are not used "
            f"(defaults instead; with profile: true they stop the run): "
            f"{'; '.join(ignored)}"
        )
    return cfg


def _known(section: str, name: str, allowed: tuple[str, ...]) -> None:
    """Raise for a key ``section`` may not hold (MindSpeed-RL rejects unknown keys too)."""
    if name in allowed:
        return
    key = f"profiler_config.{section}.{name}"
    if section == "integrated" and name in EXTENSION_FIELDS:
        raise ConfigError(
            f"{key}: not one of MindSpeed-RL's fields, which are all "
            "profiler_config.integrated may hold (its config class rejects "
            f"any other key); set it as profiler_config.{EXTENSIONS}.{name}"
        )
    if section == EXTENSIONS and name in MINDSPEED_RL_FIELDS:
        raise ConfigError(
            f"{key}: one of MindSpeed-RL's fields; set it as profiler_config.integrated.{name}"
        )
    raise ConfigError(
        f"{key}: unknown field{did_you_mean(name, allowed)}; allowed fields: {', '.join(allowed)}"
    )


def _show(value: object) -> str:
    return repr(value.value if isinstance(value, Enum) else value)


def _warn_once(message: str) -> None:
    if message not in _warned:
        import logging  # a warning is rare: not every start pays for the module

        _warned.add(message)
        logging.getLogger("mindspeed_prof").warning(message)


# -- one field's value ------------------------------------------------------------------------
def _bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _Bad("must be true or false")


def _int(value: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    raise _Bad("must be an integer")


def _number(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise _Bad("must be a number")


def _path(value: object) -> str:
    if isinstance(value, str) or type(value).__name__.endswith("Path"):
        return str(value)
    raise _Bad("must be a path")


def pattern_problem(text: str) -> str | None:
    """Why ``text`` is not a pattern of communication kernels (None: it is): a Python regex of
    at most ``MAX_PATTERN`` characters."""
    if len(text) > MAX_PATTERN:
        return f"longer than {MAX_PATTERN} characters"
    try:
        re.compile(text)
    except re.error as err:
        return f"not a regular expression ({err})"
    return None


def _regex(value: object) -> str:
    """A Python regex of device kernel names (``comm_kernels``); "" for none."""
    if not isinstance(value, str):
        raise _Bad("must be a regular expression (a string), e.g. 'my_all2all|ep_dispatch'")
    problem = pattern_problem(value)
    if problem:
        raise _Bad(
            f"{problem}; allowed: a Python regular expression matched (re.search) "
            "against device kernel names, e.g. 'my_all2all|ep_dispatch', or '' for none"
        )
    return value


def _hook_ranks(value: object) -> object:
    """``finish_hook_ranks``: None (the captured ranks), ``all``, or a list of ranks."""
    if value is None or value == "all":
        return value
    if isinstance(value, (list, tuple)) and all(
        isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in value
    ):
        return sorted(set(value))
    raise _Bad("allowed: null (the ranks that captured), all, or a list of ranks >= 0")


def _schedule_stage(value: object) -> str:
    """The stage a schedule walks: "" (every captured stage) or one stage."""
    if value in ("", None):
        return ""
    return _window_stage(value)


def _enum(kind: type[Enum]) -> Callable[[object], Enum]:
    def convert(value: object) -> Enum:
        if isinstance(value, kind):
            return value
        if isinstance(value, str) and value in kind.__members__:
            return kind[value]
        raise _Bad(f"{_unknown(value, kind.__members__)}allowed: {', '.join(kind.__members__)}")

    return convert


def _unknown(value: object, allowed: Iterable[object]) -> str:
    """``unknown (did you mean X?); `` where a name in ``allowed`` is close to ``value``."""
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    return f"unknown{hint}; " if hint else ""


def _one_stage(value: object) -> Stage | None:
    if isinstance(value, Stage):
        return value
    return Stage.__members__.get(canonical_stage(value)) if isinstance(value, str) else None


def _stage(value: object) -> Stage | list[Stage]:
    """One ``Stage``, or a list of distinct stages other than ``all`` (MindSpeed-RL takes both);
    verl's names for our stages are read as ours."""
    names = ", ".join(s.name for s in Stage)
    aliases = ", ".join(f"{a} for {b}" for a, b in STAGE_ALIASES.items())
    if not isinstance(value, (list, tuple)):
        stage = _one_stage(value)
        if stage is None:
            raise _Bad(
                f"{_unknown(value, [*Stage.__members__, *STAGE_ALIASES])}"
                f"allowed: {names}, or a list of stages such as "
                f"[actor_generate, actor_update] (verl's names too: {aliases})"
            )
        return stage
    entries = ", ".join(s.name for s in Stage if s is not Stage.all)
    stages: list[Stage] = []
    for item in value:
        stage = _one_stage(item)
        if stage is None or stage is Stage.all:
            why = (
                "'all' stands alone (stage: all)"
                if stage is Stage.all
                else "unknown stage" + did_you_mean(item, [*Stage.__members__, *STAGE_ALIASES])
            )
            raise _Bad(f"bad entry {item!r}, {why}; allowed entries: {entries}", list(value))
        if stage not in stages:
            stages.append(stage)
    if not stages:
        raise _Bad(
            f"an empty list captures nothing; allowed: {names}, or a list of stages "
            "such as [actor_generate, actor_update]",
            [],
        )
    return stages


def _ranks(value: object) -> str | list[int]:
    """``"all"`` or a sorted list of distinct ints >= 0."""
    if value == "all":
        return "all"
    allowed = 'allowed: "all" or a list of integers >= 0, e.g. [0, 1]'
    if isinstance(value, int) and not isinstance(value, bool):
        raise _Bad(f"{allowed}; write [{value}]")
    if not isinstance(value, (list, tuple)) or not value:
        raise _Bad(allowed)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 0:
            raise _Bad(f"bad entry {item!r}; {allowed}", list(value))
    return sorted(set(value))


def _steps(value: object) -> list[int]:
    """A sorted list of distinct steps >= 1 (verl's ``global_profiler.steps``)."""
    allowed = (
        "allowed: null (the window profile_step_start..end) or a list of steps >= 1, e.g. [2, 5]"
    )
    if not isinstance(value, (list, tuple)) or not value:
        raise _Bad(allowed)
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 1:
            raise _Bad(f"bad entry {item!r}; {allowed}", list(value))
    return sorted(set(value))


def _sinks(value: object) -> tuple[str, ...]:
    """``telemetry``: distinct names of ``TELEMETRY_SINKS`` (one name alone is a list of one)."""
    allowed = (
        f"allowed: a list of {', '.join(TELEMETRY_SINKS)}, e.g. [metrics, tensorboard] "
        "([] or null: off)"
    )
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise _Bad(allowed)
    out: list[str] = []
    for item in items:
        if item not in TELEMETRY_SINKS:
            raise _Bad(
                f"bad entry {item!r}{did_you_mean(item, TELEMETRY_SINKS)}; {allowed}", list(items)
            )
        if item not in out:
            out.append(item)
    return tuple(out)


def _window_stage(value: object) -> str:
    """One stage other than ``all`` (verl's names read as ours)."""
    stage = _one_stage(value)
    if stage is None or stage is Stage.all:
        entries = ", ".join(s.name for s in Stage if s is not Stage.all)
        why = (
            "'all' has no iterations"
            if stage is Stage.all
            else _unknown(value, [*Stage.__members__, *STAGE_ALIASES]).rstrip("; ") or "not a stage"
        )
        raise _Bad(f"{why}; allowed: one stage, {entries}")
    return stage.name


_KINDS: dict[type, Callable[[object], object]] = {
    bool: _bool,
    int: _int,
    float: _number,
    str: _path,
}
_ENUMS: dict[str, type[Enum]] = {
    "profile_export_type": ExportType,
    "profile_level": Level,
    "backend": BackendKind,
    "aic_metrics": AicMetrics,
}
_CONVERT: dict[str, Callable[[object], object]] = {
    **{
        name: _KINDS[type(default)]
        for name, default in _DEFAULTS.items()
        if type(default) in _KINDS
    },
    **{name: _enum(kind) for name, kind in _ENUMS.items()},
    "stage": _stage,
    "profile_ranks": _ranks,
    "profile_steps": _steps,
    "comm_kernels": _regex,
    "telemetry": _sinks,
    "iteration_stage": _window_stage,
    "schedule_stage": _schedule_stage,
    "finish_hook_ranks": _hook_ranks,
}
assert set(_CONVERT) == set(_FIELDS), set(_FIELDS) - set(_CONVERT)


# -- rules between fields ---------------------------------------------------------------------
_MODEL_EXAMPLES = {
    "model_flops_per_token": "1.4e10 (2 x 7e9 parameters of a dense model)",
    "peak_tflops": "989 (one H100's dense BF16)",
}
Problem = tuple[tuple[str, ...], str]  # the fields to reset when lenient, and the message


def _first_problem(c: IntegratedConfig, where: dict[str, str]) -> Problem | None:
    """The first rule ``c`` breaks, or None."""

    def key(name: str) -> str:
        return f"profiler_config.{where[name]}.{name}"

    return next((p for rule in _RULES if (p := rule(c, key)) is not None), None)


def _window_steps_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """The step window: 1-based, end after start."""
    if c.profile_step_start < 1:
        return ("profile_step_start",), (
            f"{key('profile_step_start')}={c.profile_step_start}: must be an integer >= 1 "
            "(steps are 1-based)"
        )
    if c.profile_step_end <= c.profile_step_start:
        return ("profile_step_start", "profile_step_end"), (
            f"{key('profile_step_end')}={c.profile_step_end}: must be greater than "
            f"profile_step_start ({c.profile_step_start}); the window is [start, end), "
            f"so profile_step_end={c.profile_step_start + 1} captures one step"
        )
    return None


def _count_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """Counts and sizes: none negative, warmup only with the window, the model facts."""
    for name in ("warmup_steps", "flight_recorder_steps", "anomaly_max_captures", "max_disk_mb"):
        if getattr(c, name) < 0:
            off = "" if name == "warmup_steps" else " (0 turns it off)"
            return (name,), f"{key(name)}={getattr(c, name)}: must be an integer >= 0{off}"
    if c.warmup_steps and c.profile_steps is not None:
        return ("warmup_steps",), (
            f"{key('warmup_steps')}={c.warmup_steps}: warmup steps come before "
            "profile_step_start, and profile_steps replaces the window; set warmup_steps=0, "
            "or use profile_step_start and profile_step_end"
        )
    if c.telemetry_every < 1:
        return ("telemetry_every",), (
            f"{key('telemetry_every')}={c.telemetry_every}: must be an integer >= 1 (steps "
            "between exports to the telemetry sinks)"
        )
    for name in ("model_flops_per_token", "peak_tflops"):
        if not 0 <= getattr(c, name) < float("inf"):  # NaN too
            return (name,), (
                f"{key(name)}={getattr(c, name)}: must be a number >= 0 "
                f"(0: not given), e.g. {_MODEL_EXAMPLES[name]}"
            )
    for name in ("trace_alloc_max_entries", "stack_depth"):
        if getattr(c, name) < 1:
            return (name,), f"{key(name)}={getattr(c, name)}: must be an integer >= 1"
    return None


def _output_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """Where and what a capture writes."""
    if not c.profile_save_path.strip():
        return ("profile_save_path",), f"{key('profile_save_path')}: must be a non-empty path"
    if not (c.profile_with_cpu or c.profile_with_npu or c.mstx):
        return ("profile_with_cpu", "profile_with_npu", "mstx"), (
            f"{key('profile_with_cpu').rsplit('.', 1)[0]}: nothing to collect: "
            "profile_with_cpu, profile_with_npu and mstx are all false; set at least one of "
            "them to true"
        )
    if c.mstx and c.profile_level is Level.level_none and c.profile_export_type is ExportType.db:
        return ("profile_export_type",), (
            f"{key('profile_export_type')}=db: not supported with mstx=true and "
            "profile_level=level_none (torch_npu exports lightweight ranges as text only); "
            "allowed: text, or profile_level in level0, level1, level2"
        )
    return None


def _window_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """Iteration window fields (``capture.iterations``)."""
    for name in ("iteration_start", "iteration_count"):
        if getattr(c, name) < 0:
            return (name,), (
                f"{key(name)}={getattr(c, name)}: must be an integer >= 0 "
                + (
                    "(0: the whole stage, no iteration window)"
                    if name == "iteration_count"
                    else "(the first iteration captured, as prof.iteration numbers them)"
                )
            )
    stages = stage_names(c.stage)
    if c.iteration_count and stages != ("all",) and c.iteration_stage not in stages:
        return ("iteration_stage",), (
            f"{key('iteration_stage')}={c.iteration_stage!r}: an iteration window captures "
            f"inside that stage, which stage={list(stages)} does not capture; allowed: one of "
            f"{', '.join(stages)}, or leave stage at all"
        )
    return None


def _trigger_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """Anomaly trigger fields."""
    if c.anomaly_factor != 0 and not c.anomaly_factor > 1:
        return ("anomaly_factor",), (
            f"{key('anomaly_factor')}={c.anomaly_factor}: must be 0 (off) or a number > 1, "
            "e.g. 2.0 (a step twice its rolling median)"
        )
    if not 0 <= c.anomaly_min_ms < float("inf"):  # NaN too
        return ("anomaly_min_ms",), (
            f"{key('anomaly_min_ms')}={c.anomaly_min_ms}: must be a number >= 0 (the ms a "
            "slow step or stage is over its median as well; 0: anomaly_factor alone decides)"
        )
    if c.anomaly_window < 2:
        return ("anomaly_window",), (
            f"{key('anomaly_window')}={c.anomaly_window}: must be an integer >= 2 "
            "(steps in the rolling median)"
        )
    if c.anomaly_capture_steps < 1:
        return ("anomaly_capture_steps",), (
            f"{key('anomaly_capture_steps')}={c.anomaly_capture_steps}: must be an integer "
            ">= 1 (steps captured after an anomaly)"
        )
    return None


_SCHEDULE = ("schedule_skip_first", "schedule_wait", "schedule_warmup", "schedule_active")


def _memory_problem(c: IntegratedConfig, key: Callable[[str], str]) -> Problem | None:
    """The stage schedule, the memory window and the host budget: counts, none negative."""
    for name in (*_SCHEDULE, "schedule_repeat", "memory_window_steps", "capture_host_mb"):
        if getattr(c, name) < 0:
            return (name,), f"{key(name)}={getattr(c, name)}: must be an integer >= 0 (0: off)"
    if c.schedule_active == 0 and any(getattr(c, n) for n in (*_SCHEDULE[:3], "schedule_repeat")):
        return _SCHEDULE[:3] + ("schedule_repeat",), (
            f"{key('schedule_active')}=0: the schedule is off (every execution captured), so "
            "skip_first, wait, warmup and repeat do nothing; set schedule_active to the "
            "executions to capture, e.g. 1"
        )
    return None


#: The rules between fields, in the order they are checked.
_RULES: tuple[Callable[[IntegratedConfig, Callable[[str], str]], Problem | None], ...] = (
    _window_steps_problem,
    _count_problem,
    _trigger_problem,
    _window_problem,
    _memory_problem,
    _output_problem,
)
