"""Counters: ``prof.count(name, value)`` and ``mstx.count(name, value)``, how much work a step
or stage did (tokens, samples, rewards) beside how long it took (docs/counters.md).

A count is checked here: a bad name or value is dropped with one warning per name, never
raised into training. A checked count goes to the profiler's parts (``Part.on_count``) and,
while a range recorder is on, to the range buffer with its step (None outside a step) and the
innermost stage open on the calling thread; the range file writes it as a Chrome counter event
(``trace_file.trace_body``).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.formats.counters import names

if TYPE_CHECKING:
    from mindspeed_prof.capture.part import Part
    from mindspeed_prof.capture.ranges import RangeTap

__all__ = ["NAME", "STANDARD", "Countable", "check", "record"]

log = logging.getLogger("mindspeed_prof")


class _ToList(Protocol):
    def tolist(self) -> object: ...


#: What ``count`` takes: a number, or a distribution (a sequence, a numpy array, a tensor).
Countable = float | Sequence[float] | _ToList

#: A counter's name: a letter or ``_`` first, then letters, digits and ``_ . : / -``; at most
#: 100 characters.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:/-]{0,99}\Z")
#: The names the analysis knows (any other is shown as a plain counter): ``formats.counters``.
STANDARD = names()
_ALLOWED = (
    "allowed: a finite number, or a sequence of finite numbers (a distribution: a "
    "list, tuple, numpy array or tensor)"
)
_WARNED_LIMIT = 256  # distinct warnings kept; beyond it no more are given
_warned: set[str] = set()
_warned_lock = threading.Lock()


class _Bad(Exception):
    """Why a count is dropped."""


def check(name: object, value: object) -> float | list[float] | None:
    """``value`` as recorded (a number, or a list of numbers), or None: dropped, with one
    warning per name."""
    try:
        if not isinstance(name, str) or NAME.match(name) is None:
            raise _Bad(
                "bad name; allowed: a letter or '_' first, then letters, digits and "
                "'_', '.', ':', '/', '-', at most 100 characters, e.g. tokens_generated"
            )
        return _value(value)
    except _Bad as err:
        _warn(name, str(err))
        return None
    except Exception as err:  # a value whose conversion raised (a tensor on a lost device)
        _warn(name, f"its value could not be read ({type(err).__name__}: {err}); {_ALLOWED}")
        return None


_PLAIN = frozenset((int, float))


def _value(value: object) -> float | list[float]:
    if type(value) is int:
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise _Bad(f"the value {value} is not finite; {_ALLOWED}")
        return value
    kind = type(value)
    if isinstance(value, (str, bytes, bool)):
        raise _Bad(f"a {kind.__name__} is not a count; {_ALLOWED}")
    tolist = getattr(value, "tolist", None)
    if tolist is not None and not isinstance(value, Sequence):  # numpy, torch
        listed: object = tolist()
        if not isinstance(listed, list):  # a 0-d array or a numpy scalar
            return _number(listed)
        value = listed
    if isinstance(value, Real):
        return _number(value)
    if not isinstance(value, Sequence):
        raise _Bad(f"a {kind.__name__} is not a count; {_ALLOWED}")
    if set(map(type, value)) <= _PLAIN:  # plain numbers (as tolist() gives): C speed
        try:
            if math.isfinite(sum(value)):  # an inf or a NaN makes the sum inf or NaN
                return list(value)
        except OverflowError:  # an int too large for a float: checked one by one
            pass
    return [v if type(v) is int else _number(v) for v in value]


def _number(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, Real):
        raise _Bad(f"{type(v).__name__} {_short(v)} is not a number; {_ALLOWED}")
    if isinstance(v, Integral):
        return int(v)
    f = float(v)
    if not math.isfinite(f):
        raise _Bad(f"the value {f} is not finite; {_ALLOWED}")
    return f


def _short(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _warn(name: object, problem: str) -> None:
    shown = (
        repr(name) if not isinstance(name, str) or len(name) <= 100 else repr(name[:100] + "...")
    )
    key = shown  # one warning per name, whatever is wrong with it
    with _warned_lock:
        if key in _warned or len(_warned) >= _WARNED_LIMIT:
            return
        _warned.add(key)
    log.warning(
        "mindspeed-prof: count(%s, ...) dropped: %s (training goes on; this is warned once)",
        shown,
        problem,
    )


def record(
    tap: RangeTap,
    parts: Sequence[Part],
    step: int | None,
    name: str,
    value: object,
    warn_once: Callable[[str, str], None],
) -> None:
    """Check one count, hand it to ``parts`` and, while ``tap`` records, to its buffer:
    counted in ``step`` (when a step is open) and the calling thread's innermost stage."""
    counted = check(name, value)
    if counted is None or counted == []:  # dropped, or an empty distribution: nothing to add
        return
    try:
        in_step, stage = tap.here()
        step = step if in_step else None
        for part in parts:
            try:
                part.on_count(name, counted, step, stage)
            except Exception as err:
                warn_once(
                    f"count:{type(part).__name__}",
                    f"mindspeed-prof: {type(part).__name__}.on_count failed "
                    f"({type(err).__name__}: {err}); training goes on",
                )
        buffer = tap.buffer
        if tap.recording and buffer is not None:
            buffer.add_count(name, counted, step, stage)
    except Exception as err:  # never into training
        warn_once(
            "count",
            f"mindspeed-prof: a count was not recorded ({type(err).__name__}: "
            f"{err}); training goes on",
        )
