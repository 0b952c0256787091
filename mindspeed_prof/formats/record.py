"""What one capture wrote (``CaptureRecord``) and one file a job wrote (``FileEntry``), as the
manifest and the Ray cluster summary record them: the one typed form, written and read back.

A record's fields are in the order they are written. The first eleven are always written; the
rest only where set (``omit_defaults``): the bytes the earlier hand-written form wrote.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

__all__ = ["CaptureRecord", "FileEntry", "always", "field_line"]


def always(value: Any) -> Any:
    """A default that is always written: ``omit_defaults`` leaves out only the defaults it can
    compare (a plain value, or ``list``'s), never those of another factory. A record read
    without the field (hand-written, hostile) gets ``value``."""
    return msgspec.field(default_factory=lambda: copy.copy(value))


class CaptureRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One capture (or flight dump, or the count of captures the disk budget skipped).

    ``stage`` is ``all`` for whole steps; ``steps`` the steps it covered, ``warmup_steps`` those
    of them that are warmup; ``reason`` why it ended (``window_end``, ``stage_end``, ``error``,
    ``close``, ``trigger_end``...; a flight dump's: what asked for it; ``disk_budget``);
    ``trigger`` why an unplanned capture ran (``anomaly``, ``on_demand``, ``flight``);
    ``request`` the on-demand request it answers; ``skipped``/``skipped_captures``: the disk
    budget's reason and count; ``recorded``: what it holds (``ranges``, ``host ops``,
    ``device ops``); ``trigger_step``: the step an anomaly was seen at (flight dumps);
    ``iterations``, ``engine``: see below.
    """

    # -- always written ---------------------------------------------------------------------
    stage: str = always("")
    step: int = always(0)
    index: int = always(0)
    rank: int = always(0)
    role: str = always("")
    backend: str = always("")
    steps: list[int] = always([])
    warmup_steps: list[int] = always([])
    reason: str = always("")
    files: list[str] = always([])
    recorded: list[str] = always([])
    # -- written where set ------------------------------------------------------------------
    level: str | None = None
    seconds: float | None = None
    #: How long the backend's stop held the rank (the trace written out), in seconds.
    flush_seconds: float | None = None
    trigger: str = ""
    request: str = ""
    skipped: str = ""
    skipped_captures: int = 0
    trigger_step: int | None = None
    #: The first and last decode iterations marked while it ran (``Profiler.iteration``), and
    #: the rollout engine whose traces its ``files`` list too (``attach_engine``).
    iterations: list[int] = []
    engine: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record as JSON holds it (what crosses Ray from a worker)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


class FileEntry(msgspec.Struct):
    """A file a job wrote: its path (under the save root in a manifest; on the worker's node
    in the cluster summary) and its size (None: gone)."""

    path: str
    bytes: int | None = None


def field_line(err: msgspec.ValidationError) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$.rank``` as ``rank: expected int, got
    str`` (one line, the field first)."""
    what, _, where = str(err).partition(" - at ")
    field = where.strip("`").removeprefix("$.").removeprefix("$") or "the document"
    return f"{field[:80]}: {what[:1].lower()}{what[1:200]}".replace("`", "")
