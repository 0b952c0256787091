"""Range markers: ``mstx.range(name)``, ``mstx.mark(name)``, ``@mstx_timer_decorator`` and
id-based ranges, ``range_id = mstx.range_start(name)`` ... ``mstx.range_end(range_id)``
(MindSpeed-RL's second way to mark a range; verl's ``mark_start_range``/``mark_end_range``).

Every profiler that records adds its sinks here and removes only its own, so several
profilers in one process each keep their ranges. ``range(name)`` is one dict lookup: the
context manager for a name is built once per thread and sink set (a shared no-op while no
sink is present), and cached until the sinks change. ``range_start`` returns 0 while no sink is
present; otherwise each sink starts the range and the id keeps what they returned, so any
thread may end it.
"""

from __future__ import annotations

import functools
import itertools
import os
import threading
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, ContextManager, ParamSpec, Protocol, TypeVar, cast

__all__ = [
    "IterationMarker",
    "RangeSink",
    "active_sink",
    "add_counter",
    "add_marker",
    "add_sink",
    "count",
    "end_on",
    "iteration",
    "mark",
    "mark_end_range",
    "remove_marker",
    "mark_start_range",
    "mstx_timer_decorator",
    "range",
    "range_end",
    "range_start",
    "remove_counter",
    "remove_sink",
    "set_sink",
    "sinks",
    "start_on",
]

P = ParamSpec("P")
R = TypeVar("R")
_CACHE_LIMIT = 4096  # distinct names cached per thread before the cache starts over
_OPEN_LIMIT = 1 << 16  # id-based ranges open at once; beyond it the oldest is forgotten


class RangeSink(Protocol):
    """Where ranges go while recording (range buffer, NVTX, torch_npu mstx, record_function).

    A sink whose ``reusable`` attribute is true returns, for a name and the calling thread,
    one context manager that may be entered again (also nested); others return a fresh one.
    A sink may also define ``range_start(name) -> handle`` and ``range_end(handle)`` for
    id-based ranges (reusable sinks must: their context managers pair per thread); without
    them a range from ``range(name)`` is entered and exited.
    """

    def range(self, name: str, cat: str = "user_annotation") -> ContextManager[object]: ...

    def mark(self, name: str) -> None: ...


class _Noop:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _All:
    """Several reusable ranges entered together (one per sink), exited in reverse."""

    __slots__ = ("_ranges", "_reversed")

    def __init__(self, ranges: list[ContextManager[object]]) -> None:
        self._ranges, self._reversed = tuple(ranges), tuple(reversed(ranges))

    def __enter__(self) -> None:
        for r in self._ranges:
            r.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for r in self._reversed:
            r.__exit__(exc_type, exc, tb)


class _Fresh:
    """Single-use ranges of other sinks, made at each entry; one object per thread."""

    __slots__ = ("_sinks", "_name", "_open")

    def __init__(self, sinks: tuple[RangeSink, ...], name: str) -> None:
        self._sinks, self._name = sinks, name
        self._open: list[list[ContextManager[object]]] = []

    def __enter__(self) -> None:
        entered: list[ContextManager[object]] = []
        self._open.append(entered)
        for s in self._sinks:
            cm = s.range(self._name)
            cm.__enter__()
            entered.append(cm)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for cm in reversed(self._open.pop()):
            cm.__exit__(exc_type, exc, tb)


_NOOP = _Noop()
_sinks: tuple[RangeSink, ...] = ()
_lock = threading.Lock()


def _resolve(name: str, sinks: tuple[RangeSink, ...]) -> ContextManager[object]:
    if not sinks:
        return _NOOP
    if not all(getattr(s, "reusable", False) for s in sinks):
        return _Fresh(sinks, name)
    if len(sinks) == 1:
        return sinks[0].range(name)
    return _All([s.range(name) for s in sinks])


class _Cache(dict[str, ContextManager[object]]):
    """One thread's name -> context manager map, emptied whenever the sinks change."""

    #: Every thread's cache (weakly). A class attribute, not a module global: it is derived
    #: state, which tools that snapshot and restore this module's globals must not rewind.
    registry: list[weakref.ref[_Cache]] = []
    #: The registry's length at which the caches of ended threads are dropped from it (a
    #: trainer may start a thread per step): it stays within twice the threads alive.
    prune_at = 64

    def __missing__(self, name: str) -> ContextManager[object]:
        with _lock:  # a sink change clears caches under the same lock: nothing stale stays
            if len(self) > _CACHE_LIMIT:
                self.clear()
            cm = self[name] = _resolve(name, _sinks)
        return cm


_local = threading.local()  # .cache: this thread's _Cache


def _thread_cache() -> _Cache:
    cache = _local.cache = _Cache()
    with _lock:
        registry = _Cache.registry
        registry.append(weakref.ref(cache))
        if len(registry) >= _Cache.prune_at:
            registry[:] = [ref for ref in registry if ref() is not None]
            _Cache.prune_at = max(64, 2 * len(registry))
    return cache


def range(name: str) -> ContextManager[object]:  # noqa: A001 - the public name users type
    """Context manager timing ``name`` in every recording profiler; free when none records."""
    try:
        return _local.cache[name]  # type: ignore[no-any-return]  # .cache: a _Cache
    except AttributeError:  # this thread's first range
        return _thread_cache()[name]


def mark(name: str) -> None:
    """An instant event named ``name`` in every recording profiler."""
    for sink in _sinks:
        sink.mark(name)


#: Where counts go: the ``count`` of every profiler that records them (``add_counter``).
_counters: tuple[Callable[[str, Any], None], ...] = ()


def count(name: str, value: Any) -> None:
    """Add ``value`` to the counter ``name`` in every profiler that records (a number; a
    sequence of numbers is a distribution): ``Profiler.count`` for each. Free when none does;
    a bad name or value is dropped with one warning (docs/counters.md)."""
    for counter in _counters:
        counter(name, value)


def add_counter(counter: Callable[[str, Any], None]) -> None:
    """Send counts to ``counter`` too (until ``remove_counter`` with the same object)."""
    global _counters
    with _lock:
        if not any(c is counter for c in _counters):
            _counters = _counters + (counter,)


def remove_counter(counter: Callable[[str, Any], None]) -> None:
    """Stop sending counts to ``counter``."""
    global _counters
    with _lock:
        _counters = tuple(c for c in _counters if c is not counter)


_ids = itertools.count(1)  # next() on a count is atomic: ids are unique across threads
#: Open id-based ranges: id -> (its end, handle) for each sink that started it.
_open: dict[int, list[tuple[Callable[[object], None], object]]] = {}
#: (start, end) of id-based ranges for each sink, resolved when the sinks change.
_id_ends: tuple[tuple[Callable[[str], object], Callable[[object], None]], ...] = ()


def _id_range(sink: RangeSink) -> tuple[Callable[[str], object], Callable[[object], None]]:
    start, end = getattr(sink, "range_start", None), getattr(sink, "range_end", None)
    if start is not None and end is not None:
        return start, end
    return functools.partial(start_on, sink), functools.partial(end_on, sink)


def range_start(name: str) -> int:
    """Start a range named ``name`` in every recording profiler; its id for ``range_end``.

    Free when nothing records (returns 0). The range may be ended on another thread.
    """
    ends = _id_ends
    if not ends:
        return 0
    started = [(end, start(name)) for start, end in ends]
    range_id = next(_ids)  # after the sinks: a sink that raises leaves nothing open
    if len(_open) >= _OPEN_LIMIT:  # ranges never ended: forget the oldest
        _open.pop(next(iter(_open)), None)
    _open[range_id] = started
    return range_id


def range_end(range_id: int) -> None:
    """End the range ``range_start`` returned ``range_id`` for (0, or an unknown or already
    ended id: nothing happens)."""
    if not range_id:
        return
    started = _open.pop(range_id, None)
    for end, handle in reversed(started or ()):
        end(handle)


def start_on(sink: RangeSink, name: str) -> object:
    """Start an id-based range on one sink: the handle ``end_on`` takes."""
    start = getattr(sink, "range_start", None)
    if start is not None:
        return start(name)
    cm = sink.range(name)
    cm.__enter__()
    return cm


def end_on(sink: RangeSink, handle: object) -> None:
    """End, on ``sink``, the range ``start_on`` returned ``handle`` for."""
    end = getattr(sink, "range_end", None)
    if end is not None:
        end(handle)
    else:
        cast(ContextManager[object], handle).__exit__(None, None, None)  # start_on's range


def mark_start_range(
    message: str | None = None, color: object = None, domain: object = None, category: object = None
) -> int:
    """verl's name for ``range_start`` (``color``, ``domain`` and ``category`` are ignored)."""
    return range_start(message or "range")


def mark_end_range(range_id: int) -> None:
    """verl's name for ``range_end``."""
    range_end(range_id)


def mstx_timer_decorator(func: Callable[P, R]) -> Callable[P, R]:
    """MindSpeed-RL's decorator: times every call of ``func`` as a range named after it."""
    name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if not _sinks:
            return func(*args, **kwargs)
        with range(name):  # the range ends in __exit__, i.e. also on exceptions
            return func(*args, **kwargs)

    return wrapper


def _set(new: tuple[RangeSink, ...]) -> None:
    global _sinks, _id_ends
    with _lock:
        _sinks = new
        _id_ends = tuple(_id_range(s) for s in new)
        live = [(ref, ref()) for ref in _Cache.registry]
        _Cache.registry[:] = [ref for ref, cache in live if cache is not None]
        for _, cache in live:
            if cache is not None:
                cache.clear()


def _new_lock_in_child() -> None:
    """After a fork, in the child, a new lock: one another thread of the parent held at the
    fork would stay held there for good."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_lock_in_child)


def add_sink(sink: RangeSink) -> None:
    """Send ranges and marks to ``sink`` too (until ``remove_sink(sink)``)."""
    if not any(s is sink for s in _sinks):
        _set(_sinks + (sink,))


def remove_sink(sink: RangeSink) -> None:
    """Stop sending to ``sink``; other sinks keep receiving."""
    if any(s is sink for s in _sinks):
        _set(tuple(s for s in _sinks if s is not sink))


def set_sink(sink: RangeSink | None) -> None:
    """Replace every sink by ``sink`` (``None``: no sink at all)."""
    _set(() if sink is None else (sink,))


def sinks() -> tuple[RangeSink, ...]:
    """The sinks ranges go to now."""
    return _sinks


def active_sink() -> RangeSink | None:
    """The most recently added sink, or ``None`` when nothing records."""
    return _sinks[-1] if _sinks else None


# -- decode iterations (``Profiler.iteration``) ------------------------------------------------
class IterationMarker(Protocol):
    """What marks decode iterations: a profiler (``Profiler.iteration``)."""

    def iteration(self, i: int) -> ContextManager[object]: ...


_markers: tuple[IterationMarker, ...] = ()


def add_marker(marker: IterationMarker) -> None:
    """Send ``iteration(i)`` to ``marker`` too (a profiler adds itself; until ``remove_marker``)."""
    global _markers
    with _lock:
        if not any(m is marker for m in _markers):
            _markers = _markers + (marker,)


def remove_marker(marker: IterationMarker) -> None:
    global _markers
    with _lock:
        _markers = tuple(m for m in _markers if m is not marker)


def iteration(i: int) -> ContextManager[object]:
    """``with mstx.iteration(i):`` around decode iteration ``i`` of the current stage, in every
    profiler of this process (``Profiler.iteration``); free when none is there."""
    markers = _markers
    if not markers:
        return _NOOP
    if len(markers) == 1:
        return markers[0].iteration(i)
    return _All([m.iteration(i) for m in markers])
