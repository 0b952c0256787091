"""verl's own profiler settings read as ours: a verl-style worker calling mindspeed-prof's hooks
is profiled as verl's config says.

    prof = Profiler.from_config(from_verl(cfg, "actor"), rank=rank, role="actor")

``cfg`` is verl's composed config (PPO: ``global_profiler`` plus a ``profiler`` block per role;
SFT: the ``profiler`` node and ``trainer.profile_interval``). What maps (``MAPPED``) and what
does not (``NOT_MAPPED``) is listed below and in docs/verl.md; a role's settings that are set
and not mapped are named in one warning line (once per job); a role whose block the tree lacks
is off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from mindspeed_prof.config.schema import IntegratedConfig, Section, Stage, canonical_role
from mindspeed_prof.config.validate import ConfigError, sections, validate
from mindspeed_prof.config.verl_settings import extras, unmapped

__all__ = ["MAPPED", "NOT_MAPPED", "ROLE_PATHS", "from_verl", "verl_fields"]

log = logging.getLogger("mindspeed_prof")

#: Where each role's ``profiler`` block is in verl's PPO config (git's reward_model first).
ROLE_PATHS: dict[str, tuple[str, ...]] = {
    "actor": ("actor_rollout_ref.actor.profiler",),
    "rollout": ("actor_rollout_ref.rollout.profiler",),
    "reference": ("actor_rollout_ref.ref.profiler",),
    "critic": ("critic.profiler",),
    "reward": ("reward_model.profiler", "reward.reward_model.profiler"),
}
#: verl setting -> ours (docs/verl.md's table is this one).
MAPPED: dict[str, str] = {
    "global_profiler.tool: npu | torch | torch_memory": "backend: torch_npu | torch | torch "
    "(torch_memory: profile_with_memory at level_none: the CUDA memory snapshot)",
    "global_profiler.steps (null: off)": "profile_step_start/end when consecutive, else "
    "profile_steps",
    "global_profiler.profile_continuous_steps": "profile_continuous_steps (false: one capture "
    "per step)",
    "global_profiler.save_path, <role>.profiler.save_path": "profile_save_path",
    "<role>.profiler.enable": "profile (with a mapped tool and steps)",
    "<role>.profiler.all_ranks / ranks ([]: rank 0, as verl)": "profile_ranks",
    "tool_config.npu.level": "profile_level",
    "tool_config.npu.contents npu, memory, shapes, module, stack": "profile_with_npu, "
    "profile_with_memory, profile_record_shapes, profile_with_module, with_stack (CPU always "
    "on, as verl)",
    "tool_config.npu.analysis": "profile_analysis",
    "tool_config.npu.discrete (true: each stage its own capture)": "stage: every stage "
    "(false: stage all)",
    "npu: export type Db, msprof_tx, data_simplification (verl hard-codes them)": (
        "profile_export_type: db, mstx: true, data_simplification: true"
    ),
    "tool_config.torch.contents cuda, memory, shapes, stack": "profile_with_npu (the device), "
    "profile_with_memory, profile_record_shapes, with_stack",
    "tool_config.torch.discrete": "stage",
    "tool_config.torch_memory.trace_alloc_max_entries / stack_depth": (
        "trace_alloc_max_entries / stack_depth"
    ),
    "SFT trainer.profile_interval [a, b] (inclusive; -1: off)": (
        "profile_step_start: a, profile_step_end: b + 1"
    ),
    "rollout: tool_config.npu/torch.profile_token_start / profile_token_end (exclusive)": (
        "iteration_start / iteration_count = end - start (null end: to the stage's end)"
    ),
    "rollout: tool_config.<tool>.delay_iterations / max_iterations (vLLM's; 0: no limit)": (
        "iteration_start / iteration_count"
    ),
    "rollout: tool_config.<tool>.start_step / num_steps (SGLang's; null: no limit)": (
        "iteration_start / iteration_count"
    ),
    "<role>.profiler.finish_hook_cmd, finish_hook_all_ranks, finish_hook_ranks": (
        "finish_hook_cmd, finish_hook_ranks (all; the list; [] the ranks that captured)"
    ),
    "<role>.profiler.relocate_results": "relocate_results",
    "tool_config.torch_memory.memory_snapshot_num_steps": "memory_window_steps (and "
    "oom_snapshot: true, verl's automatic OOM snapshots with the memory tool)",
    "actor, critic: tool_config.torch.schedule / npu.schedule (active > 0, discrete: true)": (
        "schedule_skip_first/wait/warmup/active/repeat, schedule_stage: the role's update stage"
    ),
}
NOT_MAPPED: tuple[str, ...] = (
    "global_profiler.tool: nsys, precision_debugger (not profiled; one warning)",
    "global_tool_config.nsys.*, tool_config.nsys.*",
    "npu mstx_domain_exclude: [communication] (verl hard-codes it; no field here)",
    "profile_token_start/end (and their vLLM/SGLang spellings) of roles other than rollout",
    "tool_config.torch/npu.schedule with discrete: false (whole steps are captured), or of a "
    "role without an update loop",
    "torch.step_start/step_end (verl before 0.9)",
    "global_tool_config.torch_memory.context, stacks, kw_args",
)

_TOOLS = {"npu": "torch_npu", "torch": "torch", "torch_memory": "torch"}
_NPU_CONTENTS = ("npu", "cpu", "memory", "shapes", "module", "stack")
_TORCH_CONTENTS = ("cuda", "cpu", "memory", "shapes", "stack")
_LEVELS = ("level_none", "level0", "level1", "level2")
_warned: set[str] = set()


def from_verl(cfg: object, role: str = "actor") -> IntegratedConfig:
    """``role``'s checked settings (an ``IntegratedConfig``) from verl's config."""
    return validate(sections(verl_fields(cfg, role)), canonical_role(role))


def verl_fields(cfg: object, role: str = "actor") -> Section:
    """Our fields (plain, flat) for ``role`` from verl's config; ``ConfigError`` names verl's
    key for a value verl itself would refuse."""
    if not isinstance(cfg, Mapping) and not type(cfg).__module__.startswith("omegaconf"):
        raise ConfigError(f"verl config: expected a mapping, got {type(cfg).__name__}")
    if _select(cfg, "global_profiler") is not None:
        return _ppo(cfg, canonical_role(role))
    if isinstance(_select(cfg, "profiler"), Mapping):
        return _sft(cfg)
    raise ConfigError("verl config: neither global_profiler (PPO) nor profiler (SFT) found")


def _ppo(cfg: object, role: str) -> Section:
    paths = ROLE_PATHS.get(role)
    if paths is None:
        raise ConfigError(
            f"verl role {role!r}: allowed: {', '.join(ROLE_PATHS)} (and ref, reward_model)"
        )
    blocks = [(p, b) for p in paths if isinstance(b := _select(cfg, p), Mapping)]
    if not blocks:  # a tree without this role (no reward model): nothing to profile
        return {"profile": False}
    path, block = blocks[0]
    gp = _mapping(_select(cfg, "global_profiler"), "global_profiler")
    steps = gp.get("steps")
    if steps is not None and (
        not isinstance(steps, list)
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in steps)
    ):
        raise ConfigError(f"global_profiler.steps={steps!r}: allowed: null or a list of steps")
    tool = block.get("tool", gp.get("tool"))
    fields = _block(block, path, tool, bool(steps))
    if isinstance(tool, str) and tool in _TOOLS:
        fields.update(
            extras(block, _settings(block, tool, f"{path}.tool_config.{tool}"), tool, role)
        )
    notes = unmapped(gp, block, path, tool if isinstance(tool, str) else None, role)
    if notes and fields.get("profile"):
        _warn_once(f"mindspeed-prof: verl settings of {role} not mapped: {'; '.join(notes)}")
    if role == "rollout" and fields.get("backend"):
        where = f"{path}.tool_config.{tool}"
        fields.update(_window(_settings(block, tool, where), where))
    if steps:
        fields.update(_steps(sorted(set(steps))))
    fields["profile_continuous_steps"] = bool(gp.get("profile_continuous_steps", False))
    save = block.get("save_path") or gp.get("save_path")
    if save:
        fields["profile_save_path"] = str(save)
    return fields


def _sft(cfg: object) -> Section:
    interval = _select(cfg, "trainer.profile_interval") or [-1, -1]
    if not (
        isinstance(interval, list)
        and len(interval) == 2
        and all(isinstance(s, int) for s in interval)
    ):
        raise ConfigError(
            f"trainer.profile_interval={interval!r}: allowed: [start, end] (inclusive), -1 for off"
        )
    on = -1 not in interval and 1 <= interval[0] <= interval[1]
    block = _mapping(_select(cfg, "profiler"), "profiler")
    fields = _block(block, "profiler", block.get("tool"), on)
    if on:
        fields.update(profile_step_start=interval[0], profile_step_end=interval[1] + 1)
    if block.get("save_path"):
        fields["profile_save_path"] = str(block["save_path"])
    return fields


def _block(block: Mapping[str, object], path: str, tool: object, has_steps: bool) -> Section:
    """A role's ``profiler`` block: switch, ranks and the tool's settings."""
    enable = bool(block.get("enable", False))
    mapped = tool if isinstance(tool, str) and tool in _TOOLS else None
    if tool is not None and mapped is None:
        if enable and has_steps:
            _warn_once(
                f"mindspeed-prof: {path}.tool={tool!r} has no mindspeed-prof backend "
                f"(mapped: {', '.join(_TOOLS)}); this role is not profiled"
            )
        return {"profile": False}
    fields: Section = {"profile": bool(mapped and enable and has_steps)}
    ranks = _listed(block.get("ranks") or [], f"{path}.ranks")
    ints = [r for r in ranks if isinstance(r, int)]  # others: validate names them
    fields["profile_ranks"] = (
        "all"
        if block.get("all_ranks")
        else (sorted(set(ints)) if len(ints) == len(ranks) else ranks) or [0]
    )
    if mapped is None:
        return fields
    fields["backend"] = _TOOLS[mapped]
    where = f"{path}.tool_config.{mapped}"
    settings = _settings(block, mapped, where)
    tool = mapped
    if tool == "npu":
        fields.update(_npu(settings, where))
    elif tool == "torch":
        fields.update(_torch(settings, where))
    else:
        fields.update(profile_with_memory=True, profile_level="level_none", mstx=True)
        for name in ("trace_alloc_max_entries", "stack_depth"):
            if settings.get(name) is not None:
                fields[name] = settings[name]
    return fields


def _npu(settings: Mapping[str, object], where: str) -> Section:
    level = settings.get("level", "level0")
    if level not in _LEVELS:
        raise ConfigError(f"{where}.level={level!r}: allowed: {', '.join(_LEVELS)}")
    has = _contents(settings.get("contents", []), _NPU_CONTENTS, f"{where}.contents")
    return {
        "profile_level": level,
        "profile_export_type": "db",
        "mstx": True,
        "data_simplification": True,
        "profile_with_cpu": True,
        "profile_with_npu": has("npu"),
        "profile_with_memory": has("memory"),
        "profile_record_shapes": has("shapes"),
        "profile_with_module": has("module"),
        "with_stack": has("stack"),
        "profile_analysis": bool(settings.get("analysis", False)),
        "stage": _discrete(settings),
    }


def _torch(settings: Mapping[str, object], where: str) -> Section:
    contents = settings.get("contents", [])
    has = _contents(contents, _TORCH_CONTENTS, f"{where}.contents")
    return {
        "profile_level": "level0",
        "profile_with_cpu": True,
        "profile_with_npu": not contents or has("cuda"),
        "profile_with_memory": has("memory"),
        "profile_record_shapes": has("shapes"),
        "with_stack": has("stack"),
        "stage": _discrete(settings),
    }


#: An iteration window open at its end: to the stage's end.
OPEN_END = 2**31 - 1
#: A window's (start, other, what other means) in verl's and the engines' spellings.
_WINDOWS = (
    ("profile_token_start", "profile_token_end", "end"),
    ("delay_iterations", "max_iterations", "count, 0 none"),
    ("start_step", "num_steps", "count"),
)


def _window(settings: Mapping[str, object], where: str) -> Section:
    """The rollout's window over decode iterations (response tokens): verl's
    ``profile_token_start``/``end``, or vLLM's ``delay_iterations``/``max_iterations``, or
    SGLang's ``start_step``/``num_steps``; ``{}`` when none is set (vLLM's 0/0 is none)."""
    found = [
        (a, b, kind)
        for a, b, kind in _WINDOWS
        if settings.get(a)
        or settings.get(b)
        or (kind != "count, 0 none" and (settings.get(a), settings.get(b)) != (None, None))
    ]
    if not found:
        return {}
    if len(found) > 1:
        raise ConfigError(
            f"{where}: both {found[0][0]}/{found[0][1]} and {found[1][0]}/"
            f"{found[1][1]} set; allowed: one spelling of the window"
        )
    first, second, kind = found[0]
    start, other = _count(settings, first, where) or 0, _count(settings, second, where)
    if kind == "end" and other is not None and other <= start:
        raise ConfigError(
            f"{where}.{second}={other}: allowed: greater than {first} ({start}) "
            "(the end is exclusive), or null"
        )
    count = (
        (other - start if other is not None else OPEN_END) if kind == "end" else (other or OPEN_END)
    )
    return {"iteration_start": start, "iteration_count": count}


def _count(settings: Mapping[str, object], key: str, where: str) -> int | None:
    """An engine's iteration count or index: null or an integer >= 0."""
    value = settings.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"{where}.{key}={value!r}: allowed: null or an integer >= 0")
    return value


def _contents(contents: object, allowed: tuple[str, ...], key: str) -> Callable[[str], bool]:
    """``has(name)`` for verl's ``contents`` list (``None``: everything, as verl)."""
    if contents is None:
        return lambda name: True
    if not isinstance(contents, list) or any(c not in allowed for c in contents):
        raise ConfigError(f"{key}={contents!r}: allowed entries: {', '.join(allowed)}")
    return lambda name: name in contents


def _discrete(settings: Mapping[str, object]) -> str | list[str]:
    """verl's ``discrete: true`` (each annotated stage call its own capture): every stage."""
    if settings.get("discrete"):
        return [s.name for s in Stage if s is not Stage.all]
    return "all"


def _steps(steps: list[int]) -> Section:
    """verl's step list: our window when consecutive, else ``profile_steps``."""
    if steps == list(range(steps[0], steps[-1] + 1)) and steps[0] >= 1:
        return {"profile_step_start": steps[0], "profile_step_end": steps[-1] + 1}
    return {"profile_steps": steps}


def _select(cfg: object, path: str) -> object:
    """The node at ``path`` as plain Python, its interpolations resolved (only what is read:
    verl's ``${oc.select:...}`` defaults come from ``global_profiler``), or None."""
    if type(cfg).__module__.startswith("omegaconf"):
        from omegaconf import Container, OmegaConf

        if not isinstance(cfg, Container):
            return None
        found = OmegaConf.select(cfg, path, default=None)
        return OmegaConf.to_container(found, resolve=True) if OmegaConf.is_config(found) else found
    node = cfg
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _mapping(value: object, key: str) -> Mapping[str, object]:
    """A block of verl's config (empty when unset); ``ConfigError`` for one that is not a
    mapping."""
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}={value!r}: allowed: a mapping")
    return value


def _settings(block: Mapping[str, object], tool: str, where: str) -> Mapping[str, object]:
    """``block.tool_config.<tool>`` (empty when unset)."""
    return _mapping(_mapping(block.get("tool_config"), where.rsplit(".", 1)[0]).get(tool), where)


def _listed(value: object, key: str) -> list[object]:
    """A list of verl's config; ``ConfigError`` for anything else."""
    if not isinstance(value, list):
        raise ConfigError(f"{key}={value!r}: allowed: a list")
    return value


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)
