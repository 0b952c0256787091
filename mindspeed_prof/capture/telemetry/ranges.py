"""``RangeTimer``: an ``mstx`` sink that adds up each custom range's time per name
(``telemetry_ranges``); the part takes the totals at each step end.

Its own clock reads, one pair per range: only there when asked for.
"""

from __future__ import annotations

import threading
from time import perf_counter_ns

__all__ = ["RangeTimer"]

#: Distinct range names timed, at the most (later names are not timed).
MAX_NAMES = 512


class _Timed:
    """One name's range on one thread (``mstx`` caches it per thread): entered again when
    nested."""

    __slots__ = ("_timer", "_name", "_starts")

    def __init__(self, timer: RangeTimer, name: str) -> None:
        self._timer, self._name = timer, name
        self._starts: list[int] = []

    def __enter__(self) -> None:
        self._starts.append(perf_counter_ns())

    def __exit__(self, *exc: object) -> None:
        if self._starts:
            self._timer.add(self._name, perf_counter_ns() - self._starts.pop())


class RangeTimer:
    """Totals in ns per range name since the last ``take``."""

    reusable = True

    def __init__(self) -> None:
        self._totals: dict[str, int] = {}
        self._lock = threading.Lock()

    def range(self, name: str, cat: str = "user_annotation") -> _Timed:
        return _Timed(self, name)

    def range_start(self, name: str) -> tuple[str, int]:
        return name, perf_counter_ns()

    def range_end(self, handle: tuple[str, int]) -> None:
        name, start = handle
        self.add(name, perf_counter_ns() - start)

    def mark(self, name: str) -> None:
        return None

    def add(self, name: str, took_ns: int) -> None:
        with self._lock:
            totals = self._totals
            if name in totals or len(totals) < MAX_NAMES:
                totals[name] = totals.get(name, 0) + took_ns

    def take(self) -> dict[str, int]:
        """The totals so far, and a fresh start."""
        with self._lock:
            totals, self._totals = self._totals, {}
        return totals
