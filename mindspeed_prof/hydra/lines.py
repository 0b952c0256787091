"""What a profiled Hydra job says, and which of its processes says it: the job's last line
(where the captures are, or why there are none), and the notes at its start (fields set while
profiling is off, ranks named that the job does not have, where the live figures go).

Each is said once per job: by the process ``reports`` picks, never by every rank.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mindspeed_prof.config.validate import PLANNED_FIELDS
from mindspeed_prof.formats.shell import quote

if TYPE_CHECKING:
    from mindspeed_prof.formats.manifest import Manifest

__all__ = [
    "off_note",
    "ranks_note",
    "reports",
    "shown",
    "telemetry_note",
    "typed_fields",
    "where_line",
    "world_size",
]

_PREFIX = "profiler_config."


def typed_fields(overrides: list[str]) -> dict[str, str]:
    """Field name -> the override that set it, for each ``profiler_config.<section>.<field>=``
    of the command line (``+`` and ``++`` too; a whole section given as a dict is not read)."""
    out: dict[str, str] = {}
    for line in overrides:
        key, eq, _ = line.lstrip("+").partition("=")
        parts = key.split(".")
        if eq and key.startswith(_PREFIX) and len(parts) == 3:
            out[parts[2]] = line
    return out


def world_size() -> int | None:
    """How many ranks this job has: torch.distributed's, else ``WORLD_SIZE``; None where
    neither says (one process: a script, or a Ray driver whose workers are not Hydra jobs)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_world_size())
    text = os.environ.get("WORLD_SIZE", "").strip()
    return int(text) if text.isascii() and text.isdecimal() and int(text) > 0 else None


def reports(rank: int, profile_ranks: object, world: int | None) -> bool:
    """Whether this process tells where the job's captures are: the only process of a job
    of one (a Ray driver included, whatever ``profile_ranks`` says), else the lowest rank of
    ``profile_ranks`` the job has, else rank 0 (to say that none matched)."""
    if world is None or world <= 1:
        return True
    listed = [r for r in profile_ranks if r < world] if isinstance(profile_ranks, list) else []
    return rank == (min(listed) if listed else 0)


def off_note(profile: bool, typed: dict[str, str]) -> str | None:
    """With profiling off, the fields the command line set that only a capture uses, and how
    to turn it on; None when profiling is on or none was set."""
    planned = [line for name, line in typed.items() if name in PLANNED_FIELDS]
    if profile or not planned or "profile" in typed:
        return None
    preset = "stage_scoped" if "stage" in typed else "mstx_light"
    return (
        f"mindspeed-prof: profiling is off (profile: false), so {' '.join(planned)} "
        f"capture{'s' * (len(planned) == 1)} nothing; to profile, pick a preset: "
        f"profiler_config={preset} (mindspeed-prof presets lists them), or add "
        "profiler_config.integrated.profile=true"
    )


def ranks_note(profile_ranks: object, world: int | None) -> str | None:
    """The ranks of ``profile_ranks`` this job of ``world`` ranks does not have; None when it
    has them all, or its size is unknown."""
    if not isinstance(profile_ranks, list) or world is None or world <= 1:
        return None
    absent = [r for r in profile_ranks if r >= world]
    if not absent:
        return None
    if len(absent) == len(profile_ranks):
        return f"mindspeed-prof: {_unmatched(profile_ranks, world)}: nothing will be captured"
    return (
        f"mindspeed-prof: profile_ranks {profile_ranks}: this job has no rank "
        f"{', '.join(map(str, absent))} (ranks 0-{world - 1})"
    )


def _unmatched(profile_ranks: object, world: int | None) -> str | None:
    """``profile_ranks [7] names no rank of this job (ranks 0-1)``, where that is so."""
    if not isinstance(profile_ranks, list) or world is None or world <= 1:
        return None
    if any(r < world for r in profile_ranks):
        return None
    return f"profile_ranks {profile_ranks} names no rank of this job (ranks 0-{world - 1})"


def shown(path: Path, cwd: Path) -> str:
    """``path`` as the launch dir sees it: relative under it, else absolute."""
    return os.path.relpath(path, cwd) if path.is_relative_to(cwd) else str(path)


def telemetry_note(sinks: tuple[str, ...] | list[str], save: Path, cwd: Path) -> str | None:
    """Where the live figures go, once, for the sinks that write where a person looks."""
    if "tensorboard" not in sinks:
        return None
    return (
        "mindspeed-prof: live figures, every step: tensorboard --logdir "
        f"{quote(shown(save / 'telemetry', cwd))}"
    )


def where_line(root: Path, cwd: Path, manifest: Manifest, shared: bool, world: int | None) -> str:
    """``mindspeed-prof: 2 captures in outputs/...; read them: mindspeed-prof analyse ...``,
    or why nothing was captured."""
    from mindspeed_prof.formats.manifest import capture_count, nothing_captured

    there = shown(root, cwd)
    ranks = manifest.window.profile_ranks
    n = capture_count(manifest, shared)
    reason = None if n else _unmatched(ranks, world)
    reason = reason or nothing_captured(manifest, shared)
    if reason:
        return f"mindspeed-prof: nothing captured in {there}: {reason}"
    return (
        f"mindspeed-prof: {n} capture{'' if n == 1 else 's'} in {there}; "
        f"read them: mindspeed-prof analyse {quote(there)}"
    )
