"""The process's current profiler, kept apart so that setting it imports nothing heavy."""

from __future__ import annotations

from typing import Any

__all__ = ["get_current", "set_current"]

_current: Any = None


def set_current(profiler: Any) -> None:
    global _current
    _current = profiler


def get_current() -> Any:
    return _current
