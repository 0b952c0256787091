"""``RangeBuffer``: ranges of every thread, in memory, until taken: the hot path of all
recording (the flight recorder's ring and the range file are fed from one)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from itertools import repeat, starmap
from operator import attrgetter
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

__all__ = [
    "Chunk",
    "Count",
    "Event",
    "ITERATION",
    "ITERATION_RANGE",
    "Range",
    "RangeBuffer",
    "STEP_RANGE",
]

#: A counter's value (``prof.count``): a number, or a list of them (a distribution), with the
#: step and stage it was counted in (None: outside any).
Count = tuple["float | list[float]", "int | None", "str | None"]
#: One recorded range: ``(key, thread, start_ns, end_ns)``: ``key`` the index of its (name,
#: category) in its buffer's ``keys``, ``thread`` the native id of the thread that started it,
#: ``end_ns`` -1 for an instant mark; for a count (category ``count``) a ``Count`` instead
#: (typed ``Any``: an int everywhere but in counts, which ``trace_body`` tells apart).
Event = tuple[int, int, int, Any]
#: Ranges recorded during one step: ``(step, events)``.
Chunk = tuple["int | None", list[Event]]
#: A ``step``-category range of this name is written as ``ProfilerStep#<step>``.
STEP_RANGE = "ProfilerStep"
#: A decode iteration's range (``Profiler.iteration``): category and name ``iteration``, kept
#: in the buffer as ``iteration#<i>`` and written with ``"args": {"step": S, "iteration": i}``.
ITERATION = "iteration"
ITERATION_RANGE = "iteration#"

_CACHE_LIMIT = 4096  # distinct names cached per thread before the cache starts over


class Range:
    """Reusable context manager for one (name, category, thread): recording a range allocates
    one tuple; nesting and recursion pair correctly (the open starts on a stack).

    Its ``__enter__`` runs no Python frame: it is a C iterator's ``__next__`` (a clock read
    pushed on the stack), reached through a ``property`` of a C getter; ``__exit__`` is one
    small closure (a frame, the clock read, the event tuple and its append). An exit with
    nothing open records nothing.
    """

    #: ``_enter``/``_exit`` the callables ``__enter__``/``__exit__`` hand out; the rest what they
    #: use, for a replacement of both (a test's clock).
    __slots__ = ("_enter", "_exit", "_starts", "_key", "_tid", "_append")

    if TYPE_CHECKING:

        def __enter__(self) -> None: ...

        def __exit__(self, exc_type: object, exc: object, tb: object) -> None: ...

    else:
        __enter__ = property(attrgetter("_enter"))
        __exit__ = property(attrgetter("_exit"))

    def __init__(self, key: int, tid: int, append: Callable[[Event], None]) -> None:
        starts: list[int] = []  # the open entries' starts, innermost last
        self._starts, self._key, self._tid, self._append = starts, key, tid, append
        pop = starts.pop
        # each next(): perf_counter_ns() pushed on ``starts``, all in C
        self._enter = map(starts.append, starmap(perf_counter_ns, repeat(()))).__next__

        def _exit(
            exc_type: object, exc: object, tb: object, _now: Callable[[], int] = perf_counter_ns
        ) -> None:
            if starts:
                append((key, tid, pop(), _now()))

        self._exit = _exit


class RangeBuffer:
    """Ranges of every thread, in memory, until ``take()``: the hot path of all recording.

    ``range(name)`` returns an object cached for (name, category, calling thread), so
    ``mstx`` may cache it too (``reusable``). Names are interned: an event holds a key into
    ``keys`` (name, category), formatted only when written, and its thread's native id. The
    keys grow with the names recorded, never with the threads: a trainer that starts a thread
    per step keeps one key per name.
    """

    reusable = True

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self.events: list[Event] = []
        self.wall0_ns = time.time_ns()
        self.perf0_ns = perf_counter_ns()
        self._ids: dict[tuple[str, str], int] = {}
        self._local = threading.local()
        self._lock = threading.Lock()

    def key(self, name: str, cat: str = "user_annotation") -> int:
        """The key of ``name`` in category ``cat``."""
        k = (name, cat)
        found = self._ids.get(k)
        if found is None:
            with self._lock:
                found = self._ids.get(k)
                if found is None:
                    found = len(self.keys)
                    self.keys.append(k)  # before it is published: a key read has its entry
                    self._ids[k] = found
        return found

    def range(self, name: str, cat: str = "user_annotation") -> Range:
        cache: dict[tuple[str, str], Range] | None = getattr(self._local, "ranges", None)
        if cache is None or len(cache) > _CACHE_LIMIT:
            cache = self._local.ranges = {}
        found = cache.get((name, cat))
        if found is None:
            found = cache[(name, cat)] = Range(
                self.key(name, cat), threading.get_native_id(), self.events.append
            )
        return found

    def mark(self, name: str) -> None:
        self.events.append(
            (self.key(name, "mark"), threading.get_native_id(), perf_counter_ns(), -1)
        )

    def add_count(
        self, name: str, value: float | list[float], step: int | None, stage: str | None
    ) -> None:
        """A checked count (``capture.count``), with the step and stage it was counted in."""
        self.events.append(
            (
                self.key(name, "count"),
                threading.get_native_id(),
                perf_counter_ns(),
                (value, step, stage),
            )
        )

    def range_start(self, name: str, cat: str = "user_annotation") -> tuple[int, int, int]:
        """An id-based range begins: its handle (key, the calling thread, the start time)."""
        return self.key(name, cat), threading.get_native_id(), perf_counter_ns()

    def range_end(self, handle: tuple[int, int, int]) -> None:
        """It ends, on any thread: recorded on the thread that started it."""
        self.events.append((handle[0], handle[1], handle[2], perf_counter_ns()))

    def take(self) -> list[Event]:
        """Every event recorded so far, removed from the buffer (other threads may append)."""
        events = self.events
        n = len(events)
        chunk = events[:n]
        del events[:n]
        return chunk
