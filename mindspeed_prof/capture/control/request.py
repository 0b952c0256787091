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
from collections.abc import Callable
from typing import Literal

import msgspec

from mindspeed_prof.config.schema import ROLES, AicMetrics, Level, Stage
from mindspeed_prof.jsonio import JsonObject

__all__ = [
    "CAPTURE_FIELDS",
    "DONE",
    "MAX_STEPS",
    "Ack",
    "AckStatus",
    "Option",
    "Request",
    "from_npu",
]

#: A capture option's value: a switch, or a level's or AI Core metric's name.
Option = bool | str
#: Fields a request's ``overrides`` may set, with the values each takes.
CAPTURE_FIELDS: dict[str, tuple[Option, ...]] = {
    "mstx": (True, False),
    "profile_with_memory": (True, False),
    "profile_record_shapes": (True, False),
    "profile_with_cpu": (True, False),
    "profile_with_npu": (True, False),
    "profile_with_module": (True, False),
    "with_stack": (True, False),
    "profile_level": tuple(level.value for level in Level),
    "aic_metrics": tuple(m.value for m in AicMetrics),
}
#: A request captures at most this many steps, on at most this many ranks.
MAX_STEPS, MAX_RANKS = 10_000, 1 << 16
#: What a worker did about a request (on disk and on the board as these strings).
AckStatus = Literal["queued", "written", "failed"]
#: Statuses after which a worker does nothing more about a request.
DONE: tuple[AckStatus, ...] = ("written", "failed")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_LEVELS = tuple(level.value for level in Level)
_STAGES = tuple(s.value for s in Stage)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _time(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """Capture the next ``steps`` steps (``0``: none) on ``ranks`` (None: all) of workers of
    ``role`` (None: any), whole steps or each execution of ``stage``; ``flight`` also dumps the
    flight recorder. ``start_step``: the first step to capture (not before it). ``level``,
    ``preset`` and ``overrides`` (``CAPTURE_FIELDS``) change what this capture records.

    Written as JSON by ``to_json`` and read back by ``parse`` (which checks every field)."""

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
    overrides: dict[str, Option] = {}

    @classmethod
    def new(cls, timeout_s: float, **values: object) -> Request:
        now = time.time()
        return cls.parse(
            {
                "id": f"{time.time_ns()}-{uuid.uuid4().hex[:8]}",
                "created": now,
                "expires": now + timeout_s,
                **values,
            }
        )

    @classmethod
    def parse(cls, data: object) -> Request:
        """A request from JSON; ``ValueError`` naming the first bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"a request is a JSON object, not {type(data).__name__}")
        names = cls.__struct_fields__
        unknown = sorted(str(k) for k in data if k not in names)
        if unknown:
            raise ValueError(
                f"unknown field {unknown[0][:40]!r}; allowed: {', '.join(sorted(names))}"
            )
        missing = [n for n in ("id", "created", "expires") if n not in data]
        if missing:
            raise ValueError(f"field {missing[0]!r} missing")
        return cls(**data).checked()  # unchecked until here: the values are anyone's

    def checked(self) -> Request:
        """This request, or ``ValueError`` naming the first field that is not allowed."""
        for check in _CHECKS:
            error = check(self)
            if error is not None:
                raise error
        return self

    def for_worker(self, rank: int, role: str) -> bool:
        return (self.ranks is None or rank in self.ranks) and self.role in (None, role)

    def starting_at(self, step: int) -> Request:
        """This request, its capture starting at ``step``."""
        return msgspec.structs.replace(self, start_step=step)

    def to_json(self) -> JsonObject:
        out: JsonObject = msgspec.to_builtins(self)
        return out


def _bad(name: str, value: object, allowed: str) -> ValueError:
    shown = repr(value)
    return ValueError(f"{name}={shown[:60]}{'...' if len(shown) > 60 else ''}: {allowed}")


def _id(r: Request) -> ValueError | None:
    ok = isinstance(r.id, str) and _ID.fullmatch(r.id)
    return (
        None
        if ok
        else _bad("id", r.id, "letters, digits, '_', '-' and '.' (at most 128), not a path")
    )


def _times(r: Request) -> ValueError | None:
    for name, value in (("created", r.created), ("expires", r.expires)):
        if not _time(value):
            return _bad(name, value, "must be a time in seconds since the epoch")
    return None


def _steps(r: Request) -> ValueError | None:
    if not _int(r.steps) or not 0 <= r.steps <= MAX_STEPS:
        return _bad("steps", r.steps, f"must be an integer from 0 to {MAX_STEPS}")
    if not isinstance(r.flight, bool):
        return _bad("flight", r.flight, "must be true or false")
    if r.steps == 0 and not r.flight:
        return _bad("steps", r.steps, "0 asks for nothing; give steps >= 1 or flight")
    return None


def _ranks(r: Request) -> ValueError | None:
    ranks: object = r.ranks
    if ranks is None or (
        isinstance(ranks, list)
        and len(ranks) <= MAX_RANKS
        and all(_int(x) and 0 <= x < 1 << 31 for x in ranks)
    ):
        return None
    return _bad("ranks", ranks, "must be a list of integers >= 0")


def _start_step(r: Request) -> ValueError | None:
    if r.start_step is not None and (not _int(r.start_step) or r.start_step < 1):
        return _bad("start_step", r.start_step, "must be an integer >= 1")
    return None


def _choices(r: Request) -> ValueError | None:
    for name, value, allowed in (
        ("role", r.role, ROLES),
        ("stage", r.stage, _STAGES),
        ("level", r.level, _LEVELS),
    ):
        if value is not None and value not in allowed:
            return _bad(name, value, f"allowed: {', '.join(allowed)}")
    return None


def _preset(r: Request) -> ValueError | None:
    if r.preset is None:
        return None
    from mindspeed_prof.config.presets import PRESETS

    if r.preset not in PRESETS or r.preset == "none":
        return _bad("preset", r.preset, f"allowed: {', '.join(p for p in PRESETS if p != 'none')}")
    return None


def _overrides(r: Request) -> ValueError | None:
    overrides: object = r.overrides
    if not isinstance(overrides, dict):
        return _bad("overrides", overrides, f"must be an object of {', '.join(CAPTURE_FIELDS)}")
    for key, value in overrides.items():
        if key not in CAPTURE_FIELDS:
            return ValueError(
                f"overrides.{str(key)[:40]}: unknown; allowed: {', '.join(CAPTURE_FIELDS)}"
            )
        values = CAPTURE_FIELDS[key]
        if not any(value is a if isinstance(a, bool) else value == a for a in values):
            return ValueError(
                f"overrides.{key}={str(value)[:40]!r}: allowed: "
                f"{', '.join(str(a).lower() for a in values)}"
            )
    return None


#: A request's checks, in the order their errors are reported.
_CHECKS: tuple[Callable[[Request], ValueError | None], ...] = (
    _id,
    _times,
    _steps,
    _ranks,
    _start_step,
    _choices,
    _preset,
    _overrides,
)


class Ack(msgspec.Struct, frozen=True, kw_only=True):
    """What one worker did about a request: ``queued``, ``written`` or ``failed`` (``DONE``),
    the files it wrote, where (host, Ray node, save root) and why it failed (``message``).

    Written as JSON by ``to_json`` and read back by ``parse``."""

    id: str
    rank: int
    role: str
    status: AckStatus
    files: list[str] = []
    message: str = ""
    time: float = 0.0
    root: str = ""
    host: str = ""
    node: str = ""
    #: The step the worker captures from (``queued``: was asked to; ``written``: did).
    start_step: int | None = None
    #: What its captures hold: ``ranges``, ``host ops``, ``device ops`` (``written``).
    recorded: list[str] = []

    @property
    def done(self) -> bool:
        return self.status in DONE

    def to_json(self) -> JsonObject:
        out: JsonObject = msgspec.to_builtins(self)
        return out

    @classmethod
    def parse(cls, data: object) -> Ack | None:
        """An ack from JSON (ours; fields it does not know are left out), or None when it is
        not one."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError:
            return None


def from_npu(data: object, ident: str) -> dict[str, object]:
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
    overrides = {
        ours: data[theirs]
        for theirs, ours in (
            ("record_shapes", "profile_record_shapes"),
            ("profile_memory", "profile_with_memory"),
            ("with_stack", "with_stack"),
            ("with_modules", "profile_with_module"),
        )
        if theirs in data
    }
    start = data.get("start_step")
    return {
        "id": ident,
        "created": now,
        "expires": now + 3600.0,
        "steps": data.get("active", 1),
        "ranks": ranks or None,
        "level": level or None,
        "overrides": overrides,
        "start_step": None if isinstance(start, int) and start <= 0 else start,
    }
