"""A capture request and a worker's answer to it: data, type-checked and bounded before use.

A request comes from outside the job (a file someone wrote into ``<save>/control/requests/``, or
a post on a Ray job's board), so it is hostile input: ``Request.parse`` checks every field's type
and range, an ``id`` is a plain token (never a path), and anything else is a ``ValueError`` naming
the field and what is allowed. torch_npu's dynamic-profiling ``profiler_config.json`` is accepted
too (``from_npu``).
"""

from __future__ import annotations

import math
import re
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from mindspeed_prof.config.schema import ROLES, AicMetrics, Level, Stage

__all__ = ["Ack", "CAPTURE_FIELDS", "DONE", "MAX_STEPS", "Request", "from_npu"]

#: Fields a request's ``overrides`` may set, with the values each takes.
CAPTURE_FIELDS: dict[str, tuple[Any, ...]] = {
    "mstx": (True, False), "profile_with_memory": (True, False),
    "profile_record_shapes": (True, False), "profile_with_cpu": (True, False),
    "profile_with_npu": (True, False), "profile_with_module": (True, False),
    "with_stack": (True, False),
    "profile_level": tuple(level.value for level in Level),
    "aic_metrics": tuple(m.value for m in AicMetrics),
}
#: A request captures at most this many steps, on at most this many ranks.
MAX_STEPS, MAX_RANKS = 10_000, 1 << 16
#: Statuses after which a worker does nothing more about a request.
DONE = ("written", "failed")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_LEVELS = tuple(level.value for level in Level)
_STAGES = tuple(s.value for s in Stage)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _time(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Request:
    """Capture the next ``steps`` steps (``0``: none) on ``ranks`` (None: all) of workers of
    ``role`` (None: any), whole steps or each execution of ``stage``; ``flight`` also dumps the
    flight recorder. ``start_step``: the first step to capture (not before it). ``level``,
    ``preset`` and ``overrides`` (``CAPTURE_FIELDS``) change what this capture records."""

    id: str
    created: float
    expires: float
    steps: int = 2
    ranks: list[int] | None = None
    role: str | None = None
    stage: str | None = None
    level: str | None = None
    preset: str | None = None
    flight: bool = False
    start_step: int | None = None
    overrides: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, timeout_s: float, **values: Any) -> Request:
        now = time.time()
        return cls(id=f"{time.time_ns()}-{uuid.uuid4().hex[:8]}", created=now,
                   expires=now + timeout_s, **values).checked()

    @classmethod
    def parse(cls, data: Any) -> Request:
        """A request from JSON; ``ValueError`` naming the first bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"a request is a JSON object, not {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise ValueError(f"unknown field {unknown[0][:40]!r}; allowed: "
                             f"{', '.join(sorted(names))}")
        missing = [n for n in ("id", "created", "expires") if n not in data]
        if missing:
            raise ValueError(f"field {missing[0]!r} missing")
        return cls(**data).checked()

    def checked(self) -> Request:
        """This request, or ``ValueError`` naming the first field that is not allowed."""
        def bad(name: str, allowed: str) -> ValueError:
            shown = repr(getattr(self, name))
            return ValueError(f"{name}={shown[:60]}{'...' if len(shown) > 60 else ''}: "
                              f"{allowed}")

        if not isinstance(self.id, str) or not _ID.fullmatch(self.id):
            raise bad("id", "letters, digits, '_', '-' and '.' (at most 128), not a path")
        for name in ("created", "expires"):
            if not _time(getattr(self, name)):
                raise bad(name, "must be a time in seconds since the epoch")
        if not _int(self.steps) or not 0 <= self.steps <= MAX_STEPS:
            raise bad("steps", f"must be an integer from 0 to {MAX_STEPS}")
        if not isinstance(self.flight, bool):
            raise bad("flight", "must be true or false")
        if self.steps == 0 and not self.flight:
            raise bad("steps", "0 asks for nothing; give steps >= 1 or flight")
        if self.ranks is not None and (
                not isinstance(self.ranks, list) or len(self.ranks) > MAX_RANKS
                or not all(_int(r) and 0 <= r < 1 << 31 for r in self.ranks)):
            raise bad("ranks", "must be a list of integers >= 0")
        if self.start_step is not None and (not _int(self.start_step) or self.start_step < 1):
            raise bad("start_step", "must be an integer >= 1")
        for name, allowed in (("role", ROLES), ("stage", _STAGES), ("level", _LEVELS)):
            if getattr(self, name) is not None and getattr(self, name) not in allowed:
                raise bad(name, f"allowed: {', '.join(allowed)}")
        if self.preset is not None:
            from mindspeed_prof.config.presets import PRESETS

            if self.preset not in PRESETS or self.preset == "none":
                raise bad("preset", f"allowed: {', '.join(p for p in PRESETS if p != 'none')}")
        if not isinstance(self.overrides, dict):
            raise bad("overrides", f"must be an object of {', '.join(CAPTURE_FIELDS)}")
        for key, value in self.overrides.items():
            if key not in CAPTURE_FIELDS:
                raise ValueError(f"overrides.{str(key)[:40]}: unknown; allowed: "
                                 f"{', '.join(CAPTURE_FIELDS)}")
            values = CAPTURE_FIELDS[key]
            if not any(value is a if isinstance(a, bool) else value == a for a in values):
                raise ValueError(f"overrides.{key}={str(value)[:40]!r}: allowed: "
                                 f"{', '.join(str(a).lower() for a in values)}")
        return self

    def for_worker(self, rank: int, role: str) -> bool:
        return (self.ranks is None or rank in self.ranks) and self.role in (None, role)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ack:
    """What one worker did about a request: ``queued``, ``written`` or ``failed`` (``DONE``),
    the files it wrote, where (host, Ray node, save root) and why it failed (``message``)."""

    id: str
    rank: int
    role: str
    status: str
    files: list[str] = field(default_factory=list)
    message: str = ""
    time: float = 0.0
    root: str = ""
    host: str = ""
    node: str = ""
    #: The step the worker captures from (``queued``: was asked to; ``written``: did).
    start_step: int | None = None
    #: What its captures hold: ``ranges``, ``host ops``, ``device ops`` (``written``).
    recorded: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.status in DONE

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def parse(cls, data: Any) -> Ack | None:
        """An ack from JSON (ours), or None when it is not one."""
        if not isinstance(data, dict):
            return None
        try:
            ack = cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
        except TypeError:
            return None
        ok = (isinstance(ack.id, str) and _int(ack.rank) and isinstance(ack.role, str)
              and isinstance(ack.status, str) and isinstance(ack.files, list)
              and all(isinstance(f, str) for f in ack.files))
        return ack if ok else None


def from_npu(data: Any, ident: str) -> dict[str, Any]:
    """torch_npu's dynamic-profiling ``profiler_config.json`` as request fields (then checked
    by ``Request.parse`` like any other request).

    Mapped: ``active`` -> steps, ``start_step`` -> start_step, ``is_rank``/``rank_list`` ->
    ranks, ``experimental_config.profiler_level`` -> level, ``record_shapes``,
    ``profile_memory``, ``with_stack``, ``with_modules`` -> the same capture options.
    Not mapped (the job's config decides): ``prof_dir`` (captures go under the save root),
    ``activities``, ``analyse``, ``warmup``, ``with_flops``, ``async_mode``, and the other
    ``experimental_config`` fields (aic_metrics, export_type, data_simplification, ...).
    A field of the wrong type is passed on as it is, so the check names it.
    """
    if not isinstance(data, dict):
        raise ValueError(f"a profiler_config.json is a JSON object, not {type(data).__name__}")
    now = time.time()
    exp = data.get("experimental_config")
    if exp is None:
        exp = {}
    if not isinstance(exp, dict):
        raise ValueError(f"experimental_config={str(exp)[:40]!r}: must be an object")
    level = exp.get("profiler_level")
    if isinstance(level, str):
        level = level.lower()
    ranks = data.get("rank_list") if data.get("is_rank") else None
    overrides = {ours: data[theirs] for theirs, ours in (
        ("record_shapes", "profile_record_shapes"), ("profile_memory", "profile_with_memory"),
        ("with_stack", "with_stack"), ("with_modules", "profile_with_module")) if theirs in data}
    start = data.get("start_step")
    return {"id": ident, "created": now, "expires": now + 3600.0,
            "steps": data.get("active", 1), "ranks": ranks or None, "level": level or None,
            "overrides": overrides,
            "start_step": None if isinstance(start, int) and start <= 0 else start}
