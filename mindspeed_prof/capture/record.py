"""``CaptureRecord``: what one capture wrote, as the manifest and the Ray summary record it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

__all__ = ["CaptureRecord"]


class _RecordKeys(TypedDict):
    stage: str
    step: int
    index: int
    rank: int
    role: str
    backend: str
    steps: list[int]
    warmup_steps: list[int]
    reason: str
    files: list[str]
    recorded: list[str]


class RecordJson(_RecordKeys, total=False):
    """A record's manifest form (``CaptureRecord.to_json``): optional keys only where set."""

    level: str
    seconds: float
    flush_seconds: float
    trigger: str
    request: str
    skipped: str
    skipped_captures: int
    trigger_step: int
    iterations: list[int]
    engine: str


@dataclass
class CaptureRecord:
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

    stage: str
    step: int
    index: int
    rank: int
    role: str
    backend: str
    level: str | None = None
    steps: list[int] = field(default_factory=list)
    warmup_steps: list[int] = field(default_factory=list)
    reason: str = ""
    files: list[str] = field(default_factory=list)
    seconds: float | None = None
    #: How long the backend's stop held the rank (the trace written out), in seconds.
    flush_seconds: float | None = None
    trigger: str = ""
    request: str = ""
    skipped: str = ""
    skipped_captures: int = 0
    recorded: list[str] = field(default_factory=list)
    trigger_step: int | None = None
    #: The first and last decode iterations marked while it ran (``Profiler.iteration``), and
    #: the rollout engine whose traces its ``files`` list too (``attach_engine``).
    iterations: list[int] = field(default_factory=list)
    engine: str = ""

    def to_json(self) -> RecordJson:
        """The manifest's form: optional fields only where they are set."""
        out: RecordJson = {
            "stage": self.stage,
            "step": self.step,
            "index": self.index,
            "rank": self.rank,
            "role": self.role,
            "backend": self.backend,
            "steps": list(self.steps),
            "warmup_steps": list(self.warmup_steps),
            "reason": self.reason,
            "files": list(self.files),
            "recorded": list(self.recorded),
        }
        if self.level:
            out["level"] = self.level
        if self.seconds:
            out["seconds"] = self.seconds
        if self.flush_seconds is not None:
            out["flush_seconds"] = self.flush_seconds
        if self.trigger:
            out["trigger"] = self.trigger
        if self.request:
            out["request"] = self.request
        if self.skipped:
            out["skipped"] = self.skipped
        if self.skipped_captures:
            out["skipped_captures"] = self.skipped_captures
        if self.trigger_step:
            out["trigger_step"] = self.trigger_step
        if self.iterations:
            out["iterations"] = list(self.iterations)
        if self.engine:
            out["engine"] = self.engine
        return out
