"""What one capture wrote (``CaptureRecord``) and one file a job wrote (``FileEntry``), as the
manifest and the Ray cluster summary record them: the one typed form, written and read back.

A record's fields are in the order they are written. The first eleven are always written; the
rest only where set (``omit_defaults``): the bytes the earlier hand-written form wrote.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec

__all__ = ["CaptureRecord", "FileEntry", "records_of"]


def _always(value: Any) -> Any:
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
    stage: str = _always("")
    step: int = _always(0)
    index: int = _always(0)
    rank: int = _always(0)
    role: str = _always("")
    backend: str = _always("")
    steps: list[int] = _always([])
    warmup_steps: list[int] = _always([])
    reason: str = _always("")
    files: list[str] = _always([])
    recorded: list[str] = _always([])
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


def records_of(entries: object) -> list[CaptureRecord]:
    """The records of a list read from a file (a cluster summary's ``captures``): an entry of
    the wrong shape, or anything but a list, costs only itself."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            out.append(msgspec.convert(entry, CaptureRecord))
        except msgspec.ValidationError:
            continue
    return out
