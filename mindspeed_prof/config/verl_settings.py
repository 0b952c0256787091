"""verl's profiler settings beyond what to capture: the update loop's mini-batch schedule, the
finish hook, relocating results, the memory window and OOM snapshots; and the settings of a
role that nothing here maps, named in one line per job (``unmapped``)."""

from __future__ import annotations

from collections.abc import Mapping

from mindspeed_prof.config.schema import Section

__all__ = ["UPDATE_STAGES", "extras", "unmapped"]

#: The stage whose mini-batches verl's schedule walks, per role (its update loop).
UPDATE_STAGES = {"actor": "actor_update", "critic": "critic_update"}
_SCHEDULE = ("skip_first", "wait", "warmup", "active", "repeat")
#: global_tool_config.torch_memory settings verl passes to torch that have no field here, and
#: verl's defaults for them.
_MEMORY_DEFAULTS = {"context": "all", "stacks": "all", "kw_args": {}}


def _get(node: object, *keys: str) -> object:
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _schedule(settings: Mapping[str, object]) -> Mapping[str, object] | None:
    """The tool's ``schedule`` block where it is on (``active`` > 0), else None."""
    block = settings.get("schedule")
    if not isinstance(block, Mapping):
        return None
    active = block.get("active")
    return block if isinstance(active, int) and active > 0 else None


def extras(
    block: Mapping[str, object], settings: Mapping[str, object], tool: str, role: str
) -> Section:
    """Our fields for ``block`` (a role's ``profiler``) with ``settings`` its tool's
    ``tool_config``: verl's per-role keys (which take the global ones by ``oc.select``)."""
    out: Section = {}
    if block.get("finish_hook_cmd"):
        out["finish_hook_cmd"] = str(block["finish_hook_cmd"])
        ranks = block.get("finish_hook_ranks")
        out["finish_hook_ranks"] = (
            "all"
            if block.get("finish_hook_all_ranks")
            else (list(ranks) if isinstance(ranks, (list, tuple)) and ranks else None)
        )
    if block.get("relocate_results"):
        out["relocate_results"] = True
    if tool == "torch_memory":
        out["oom_snapshot"] = True  # verl: OOM snapshots are on with the memory tool
        steps = settings.get("memory_snapshot_num_steps")
        if isinstance(steps, int) and not isinstance(steps, bool):
            out["memory_window_steps"] = steps
    schedule = _schedule(settings)
    if schedule is not None and settings.get("discrete") and role in UPDATE_STAGES:
        for name in _SCHEDULE:
            value = schedule.get(name)
            if value is not None:
                out[f"schedule_{name}"] = value
        out["schedule_stage"] = UPDATE_STAGES[role]
    return out


def unmapped(
    cfg_global: Mapping[str, object],
    block: Mapping[str, object],
    path: str,
    tool: str | None,
    role: str,
) -> list[str]:
    """verl settings of this role that are set and that nothing here maps, as verl's keys."""
    out: list[str] = []
    where = f"{path}.tool_config.{tool}"
    settings = _get(block, "tool_config", tool) if tool else None
    if isinstance(settings, Mapping) and _schedule(settings) is not None:
        if not settings.get("discrete"):
            out.append(
                f"{where}.schedule (discrete: false: whole steps are captured, every "
                "mini-batch in them)"
            )
        elif role not in UPDATE_STAGES:
            out.append(f"{where}.schedule (role {role} has no update loop)")
    if isinstance(settings, Mapping) and role != "rollout":
        for key in ("profile_token_start", "profile_token_end"):
            if settings.get(key) is not None:
                out.append(f"{where}.{key} (verl gives it to the rollout engine only)")
    if tool == "torch_memory":
        memory = _get(cfg_global, "global_tool_config", "torch_memory")
        for key, default in _MEMORY_DEFAULTS.items():
            value = _get(memory, key)
            if value is not None and value != default:
                out.append(f"global_profiler.global_tool_config.torch_memory.{key}={value!r}")
    return out
