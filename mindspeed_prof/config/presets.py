"""Presets of the ``profiler_config`` config group, each answering one question.

A preset's node holds plain values only, and only those it sets: MindSpeed-RL's fields under
``integrated``, ours under ``extensions``, plus an empty section per role. Every section is a
non-struct node, so ``profiler_config.integrated.<field>=...`` works for a field the preset
does not set, and MindSpeed-RL's own config class reads ``integrated`` unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.config.schema import (
    EXTENSION_FIELDS,
    EXTENSIONS,
    ROLES,
    STAGES,
    Level,
    Section,
    Stage,
)

if TYPE_CHECKING:
    from omegaconf import DictConfig

__all__ = [
    "ALIAS",
    "ALIAS_ENTRY",
    "CALLBACK_CONFIG",
    "GROUP",
    "HIDDEN",
    "PRESETS",
    "Preset",
    "alias_node",
    "SPELLINGS",
    "alias_taken_line",
    "canonical",
    "chosen_preset",
    "configs",
    "dispatcher",
    "misspelt_line",
    "not_a_name_line",
    "overridden_fields",
    "overridden_line",
    "preset_sections",
    "register",
    "unknown_preset_line",
]

#: The config group of the presets, and the package (the key) it fills.
GROUP = "profiler_config"
#: The presets' other spelling (the mission's: ``profiler=<preset>``), served where no other
#: config source has a group of that name (verl has one: ``verl/trainer/config/profiler/``).
ALIAS = "profiler"

#: A defaults-list entry that turns the Hydra callback on.
CALLBACK_CONFIG = "/mindspeed_prof/callback"
_CALLBACK: dict[str, object] = {
    "hydra": {
        "callbacks": {
            "mindspeed_prof": {"_target_": "mindspeed_prof.hydra.callback.ProfilerCallback"}
        }
    }
}


def preset_sections(fields: Section) -> dict[str, Section]:
    """A preset's values as the sections they go in, plain (enum members by name)."""
    values = {k: v.name if isinstance(v, Enum) else v for k, v in fields.items()}
    return {
        "integrated": {k: v for k, v in values.items() if k not in EXTENSION_FIELDS},
        EXTENSIONS: {k: v for k, v in values.items() if k in EXTENSION_FIELDS},
    }


def _preset(fields: Section) -> DictConfig:
    """A preset's node: the callback on, then its sections, each open to new keys."""
    from omegaconf import OmegaConf

    body = {**preset_sections(fields), **{role: {} for role in ROLES[1:]}}
    return OmegaConf.create(
        {
            "defaults": [CALLBACK_CONFIG, "_self_"],
            **{
                name: OmegaConf.create(section, flags={"struct": False})
                for name, section in body.items()
            },
        }
    )


class Preset(NamedTuple):
    """A preset: the question it answers, and its field values."""

    question: str
    fields: Section


#: name -> its preset; the values only what differs from the defaults,
#: so a preset never writes a key MindSpeed-RL's DPO argument copy would pass on unasked
#: (``profile_with_npu``: MindSpeed-LLM has no such flag).
#:
#: Every preset's window skips step 1 (warm-up: allocator, compilation, first collectives), as
#: ``full`` and ``memory_debug`` always did; the schema keeps MindSpeed-RL's defaults (start 1,
#: end 2) for a config that picks no preset. ``mstx_light`` holds four steps (ranges are cheap,
#: and a straggler is named only when it is behind in most of them), ``stage_scoped`` two.
PRESETS: dict[str, Preset] = {
    "none": Preset("Profiling off; every hook is a no-op.", {}),
    "mstx_light": Preset(
        "Which module or stage is slow, across ranks? Ranges only (MindSpeed-RL's lightweight "
        "mode) of steps 2-5: tiny files, safe on a full-size run.",
        dict(
            profile=True,
            mstx=True,
            profile_level=Level.level_none,
            profile_with_cpu=False,
            profile_step_start=2,
            profile_step_end=6,
        ),
    ),
    "stage_scoped": Preset(
        "What runs inside one stage? One level1 capture per execution of the chosen stage "
        "(set profiler_config.integrated.stage) in steps 2-3.",
        dict(
            profile=True,
            mstx=True,
            stage=Stage.actor_update,
            profile_level=Level.level1,
            profile_step_start=2,
            profile_step_end=4,
        ),
    ),
    "memory_debug": Preset(
        "Where does memory go? Memory and shapes for one step.",
        dict(
            profile=True,
            profile_level=Level.level1,
            profile_with_memory=True,
            profile_record_shapes=True,
            with_stack=True,
            profile_step_start=2,
            profile_step_end=3,
        ),
    ),
    "full": Preset(
        "Everything about whole steps: level1 ops of all stages, with shapes, for two steps.",
        dict(
            profile=True,
            mstx=True,
            profile_level=Level.level1,
            profile_record_shapes=True,
            profile_step_start=2,
            profile_step_end=4,
        ),
    ),
    "dpo": Preset(
        "MindSpeed-LLM's DPO path: step 1 as the warmup step before the window, then exactly "
        "[start, end) measured: step 2.",
        dict(
            profile=True,
            profile_level=Level.level1,
            warmup_steps=1,
            profile_step_start=2,
            profile_step_end=3,
        ),
    ),
}


#: Other spellings of the presets' names: the design card's (``lightweight-mstx``,
#: ``stage-scoped``, ``memory-debug``); any name with ``-`` for ``_`` is read too.
SPELLINGS: dict[str, str] = {"lightweight-mstx": "mstx_light", "lightweight_mstx": "mstx_light"}


def canonical(name: str) -> str | None:
    """The preset ``name`` stands for (itself, another spelling of it), or None."""
    name = SPELLINGS.get(name, name)
    if name in PRESETS:
        return name
    name = name.replace("-", "_")
    return name if name in PRESETS else SPELLINGS.get(name)


def configs() -> Iterator[tuple[str, str, DictConfig | dict[str, object], str | None]]:
    """``(group, name, node, package)`` of every config mindspeed-prof gives Hydra."""
    yield "mindspeed_prof", "callback", _CALLBACK, "_global_"
    # With -m, one job per RL stage:
    #   python train.py -m profiler_config=stage_scoped +profiler_sweep=all_stages
    yield (
        "profiler_sweep",
        "all_stages",
        {"hydra": {"sweeper": {"params": {"profiler_config.integrated.stage": ",".join(STAGES)}}}},
        "_global_",
    )
    for name, (_, fields) in PRESETS.items():
        yield GROUP, name, _preset(fields), GROUP


# -- the mission's spelling: profiler=<preset> ------------------------------------------------
# Hydra matches a command line's ``profiler=x`` against the entries of the defaults lists it
# composes whose key is ``profiler`` (group ``profiler``, filling the key ``profiler``), and an
# app lists ``profiler_config: <preset>``. So the preset an app lists is a small dispatcher:
#
#   defaults:
#     - /mindspeed_prof/callback
#     - _self_
#     - /profiler@_global_.profiler: []                        # ALIAS_ENTRY
#     - /mindspeed_prof/preset@_global_.profiler_config: ${oc.select:profiler,<preset>}
#
# ``profiler=x`` sets the alias entry's choice, which Hydra records as the known choice
# ``profiler``; the last entry reads it and loads the preset ``x`` itself (one preset, never
# one laid over another), else the app's own. The app's ``_self_`` still merges after it, so
# its ``profiler_config:`` block wins as it does with ``profiler_config=x``. The alias entry is
# an empty list of options, not null: it selects nothing by itself and, unlike a null choice,
# never clashes with another config's ``profiler`` entry (verl's SFT tree lists
# ``profiler@profiler: profiler``), because Hydra records no choice for an options list.
# Where another tree owns ``profiler`` the last entry names the preset outright.
ALIAS_ENTRY: dict[str, list[str]] = {f"/{ALIAS}@_global_.{ALIAS}": []}
#: The presets' bodies: a group of the ``mindspeed_prof`` tree that ``--help`` does not list.
HIDDEN = "mindspeed_prof/preset"


def dispatcher(name: str, alias: bool) -> DictConfig:
    """``profiler_config/<name>``: the defaults list above (``alias``: ``profiler=x`` may
    choose another preset; else ``name`` outright)."""
    from omegaconf import OmegaConf

    choice = f"${{oc.select:{ALIAS},{name}}}" if alias else name
    return OmegaConf.create(
        {
            "defaults": [
                CALLBACK_CONFIG,
                "_self_",
                ALIAS_ENTRY,
                {f"/{HIDDEN}@_global_.{GROUP}": choice},
            ]
        }
    )


def alias_node(name: str) -> DictConfig:
    """``profiler/<name>``: the preset ``name`` at ``profiler_config``, the callback on (its own
    content, at the key ``profiler`` where Hydra puts a group's content, is empty)."""
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {"defaults": [CALLBACK_CONFIG, f"/{HIDDEN}/{name}@_global_.{GROUP}", "_self_"]}
    )


def unknown_preset_line(group: str, name: str) -> str:
    """One line for a preset name that is not one, with the closest name."""
    from mindspeed_prof.config.validate import did_you_mean

    return (
        f"mindspeed-prof: {group}={name}: no such preset{did_you_mean(name, PRESETS)}; "
        f"presets: {', '.join(PRESETS)}"
    )


def not_a_name_line(group: str, override: str) -> str:
    """One line for ``profiler_config=null`` (or any value that is no name: ``override`` as
    typed, ``[1]`` too) on the command line, which Hydra answers with a traceback."""
    if group == "profiler_sweep":
        sweeps = [name for g, name, _, _ in configs() if g == group]
        return f"mindspeed-prof: {override}: a sweep's name is needed; sweeps: {', '.join(sweeps)}"
    return (
        f"mindspeed-prof: {override}: a preset's name is needed; profiling off is "
        f"{group}=none; presets: {', '.join(PRESETS)}"
    )


def misspelt_line(override: str, key: str, meant: str) -> str:
    """One line for an override whose first key is no group nor key of the app, but close to
    one of ours (``profilr=full``): the override as meant, not Hydra's ``+profilr=full``."""
    return (
        f"mindspeed-prof: {override}: no config group or key '{key}' in this app "
        f"(did you mean {override.replace(key, meant, 1)}?)"
    )


def alias_taken_line(name: str) -> str:
    """One line for ``profiler=<our preset>`` where another config tree owns ``profiler``."""
    return (
        f"mindspeed-prof: profiler={name}: 'profiler' is another config group of this app "
        f"(verl has one); select the preset with {GROUP}={name}"
    )


def register() -> None:
    """Store every config in Hydra's ConfigStore (group and package ``profiler_config``).

    The Hydra plugin does not call this: it serves the same configs lazily (see
    ``hydra_plugins/mindspeed_prof``); this is for apps that want them in the ConfigStore.
    """
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group, name, node, package in configs():
        cs.store(group=group, name=name, node=node, package=package, provider="mindspeed-prof")


# -- a preset the primary config overrides ----------------------------------------------------
def chosen_preset(overrides: list[str]) -> str | None:
    """The preset a command line chose (``profiler_config=x``, the alias ``profiler=x``, with
    ``+`` or ``@profiler_config``), or None. The alias's choice wins wherever it stands: the
    preset the app lists loads the one it names (see ``dispatcher``)."""
    chosen: dict[str, str] = {}
    for line in overrides:
        key, eq, value = line.lstrip("+").partition("=")
        group, _, package = key.partition("@")
        if eq and (group == GROUP or (group == ALIAS and package in ("", GROUP))):
            chosen[group] = canonical(value) or value
    return chosen.get(ALIAS, chosen.get(GROUP))


def overridden_fields(
    preset: str, composed: dict[str, Section], overrides: list[str]
) -> list[tuple[str, object, object]]:
    """``(key, composed value, preset value)`` for each field ``preset`` sets that the composed
    config holds otherwise, though the command line did not set it: another config of the
    app (its primary config's ``profiler_config`` block, merged after the preset) won."""
    if preset not in PRESETS:
        return []
    by_hand = {line.lstrip("+~").partition("=")[0] for line in overrides}
    out = []
    for section, values in preset_sections(PRESETS[preset].fields).items():
        for name, value in values.items():
            key = f"{GROUP}.{section}.{name}"
            have = composed.get(section, {}).get(name, value)
            if key not in by_hand and have != value:
                out.append((key, have, value))
    return out


def overridden_line(preset: str, fields: list[tuple[str, object, object]]) -> str:
    """One line naming each field of ``preset`` that the app's config overrode, and the fix."""
    named = ", ".join(f"{key}={have!r} (the preset's: {value!r})" for key, have, value in fields)
    return (
        f"mindspeed-prof: {GROUP}={preset}: the app's config overrides the preset's {named}, "
        "because its defaults list merges it after the preset (_self_ last, or missing); "
        "to let the preset win, delete these keys from the app's profiler_config block, or "
        "list _self_ before the profiler_config entry"
    )
