"""Counters (``prof.count``, ``mstx.count``): the ``C`` events of range files, flight-recorder
dumps and the db export, folded per (step, stage, name).

On disk (the counters contract): ``{"ph": "C", "cat": "count", "name": NAME, "ts": US,
"args": {"value": V, "step": S, "stage": "..."}}``, or ``"values": [v1, ...]`` for a
distribution; ``step`` and ``stage`` absent outside a step or stage. Calls with the same name
in one (step, stage) add up: their values are summed, their distributions concatenated.

A record that cannot be a counter (a name that is no string, a value that is no finite number,
a bool, a step that is no integer, a stage that is no string, a distribution with a value that
is no finite number or longer than ``MAX_VALUES``) is skipped; the capture gets one problem
line naming the file, how many were skipped and the first. Distributions past
``MAX_KEPT`` values in one capture are skipped the same way (memory stays bounded).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import msgspec

if TYPE_CHECKING:
    from mindspeed_prof.analysis.readers.events import Event

__all__ = ["CATEGORY", "MAX_KEPT", "MAX_VALUES", "Count", "CounterFold", "counter_value"]

#: The category of counter events.
CATEGORY = "count"
#: A distribution longer than this in one event is skipped.
MAX_VALUES = 1 << 20
#: Distribution values kept per capture, at most.
MAX_KEPT = 1 << 23

Key = tuple["int | None", "str | None", str]


class Count(msgspec.Struct, kw_only=True):
    """One counter of one capture in one (step, stage): ``value`` the sum of its scalar calls
    (None: none), ``calls`` how many there were, ``values`` its distributions' values
    concatenated in call order (None: none). ``step``/``stage`` None: recorded outside one."""

    name: str
    step: int | None = None
    stage: str | None = None
    value: float | None = None
    calls: int = 0
    values: list[float] | None = None


def _finite(v: object) -> float | None:
    """A finite number (never a bool), else None."""
    kind = type(v)
    if kind is float:
        f = cast(float, v)
        return f if math.isfinite(f) else None
    if kind is int:
        try:
            out = float(cast(int, v))
        except OverflowError:
            return None
        return out if math.isfinite(out) else None
    return None


def counter_value(args: object) -> tuple[float | None, list[float] | None, str | None]:
    """(scalar, distribution, why not) of one event's args: exactly one of the first two
    set, or the reason the record is hostile."""
    value = getattr(args, "value", None)
    values = getattr(args, "values", None)
    if values is not None:
        if value is not None:
            return None, None, "both value and values"
        if not isinstance(values, list):
            return None, None, "values is not a list"
        if len(values) > MAX_VALUES:
            return None, None, f"a distribution of {len(values):,} values (over {MAX_VALUES:,})"
        out = [f for f in map(_finite, values) if f is not None]
        if len(out) < len(values):
            return None, None, "a value that is not a finite number"
        return None, out, None
    number = _finite(value)
    if number is None:
        return None, None, "no value" if value is None else "a value that is not a finite number"
    return number, None, None


def _step(raw: object) -> tuple[int | None, bool]:
    """(step, whether it is one): absent is None; an integer (or a whole float) is itself."""
    if raw is None:
        return None, True
    if type(raw) is int:
        return raw, True
    if type(raw) is float and math.isfinite(raw) and raw == int(raw):
        return int(raw), True
    return None, False


class CounterFold:
    """Counter events in, ``Count`` rows out (``finish``); hostile ones counted and named."""

    def __init__(self) -> None:
        self.counts: dict[Key, Count] = {}
        self.skipped = 0
        self.first = ""
        self.kept = 0

    def _skip(self, name: object, why: str) -> None:
        if not self.skipped:
            self.first = f"{str(name)[:60]!r}: {why}"
        self.skipped += 1

    def add(self, ev: Event) -> None:
        """One ``C`` event (others of its phase, of another category, are not counters)."""
        if ev.cat != CATEGORY:
            return
        name, args = ev.name, ev.args
        if not isinstance(name, str) or not name:
            self._skip(name, "no name")
            return
        if args is None:
            self._skip(name, "no args")
            return
        step, ok = _step(args.step)
        if not ok:
            self._skip(name, f"step {str(args.step)[:20]!r} is not an integer")
            return
        stage = getattr(args, "stage", None)
        if stage is not None and (not isinstance(stage, str) or not stage):
            self._skip(name, "stage is not a name")
            return
        value, values, why = counter_value(args)
        if why is not None:
            self._skip(name, why)
            return
        if values is not None and self.kept + len(values) > MAX_KEPT:
            self._skip(name, f"over {MAX_KEPT:,} distribution values in the capture")
            return
        key = (step, stage, name)
        row = self.counts.get(key)
        if value is not None and row is not None and not math.isfinite((row.value or 0.0) + value):
            self._skip(name, "its sum is not a finite number")
            return
        if row is None:
            row = self.counts[key] = Count(name=name, step=step, stage=stage)
        if value is not None:
            row.value = (row.value or 0.0) + value
            row.calls += 1
        if values is not None:
            self.kept += len(values)
            if row.values is None:
                row.values = values
            else:
                row.values.extend(values)

    def finish(self, path: object) -> tuple[list[Count], list[str]]:
        """The counters (in (step, stage, name) order) of the capture at ``path``, and one
        problem line naming it for the records skipped."""
        counts = [
            self.counts[k]
            for k in sorted(self.counts, key=lambda k: (k[0] is None, k[0] or 0, k[1] or "", k[2]))
        ]
        if not self.skipped:
            return counts, []
        return counts, [
            f"{path}: {self.skipped:,} counter event{'s' * (self.skipped != 1)} "
            f"skipped (first: {self.first})"
        ]
