"""Range markers: ``mstx.range(name)``, ``mstx.mark(name)`` and ``@mstx_timer_decorator``.

While no capture is active every marker returns one shared no-op object: no allocation, no
``record_function``. The profiler installs a sink only for the duration of a capture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ContextManager, Protocol, TypeVar

__all__ = ["RangeSink", "mark", "mstx_timer_decorator", "range", "active_sink", "set_sink"]

F = TypeVar("F", bound=Callable[..., Any])


class RangeSink(Protocol):
    """Where ranges go while a capture is active (span recorder, NVTX, torch_npu mstx, ...)."""

    def range(self, name: str, cat: str = "user_annotation") -> ContextManager[Any]: ...

    def mark(self, name: str) -> None: ...


class _Noop:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NOOP = _Noop()
_sink: RangeSink | None = None


def range(name: str) -> ContextManager[Any]:  # noqa: A001 - the public name users type
    """Context manager timing ``name`` in the active capture; free when none is active."""
    sink = _sink
    if sink is None:
        return _NOOP
    return sink.range(name)


def mark(name: str) -> None:
    """An instant event named ``name`` in the active capture."""
    sink = _sink
    if sink is not None:
        sink.mark(name)


def mstx_timer_decorator(func: F) -> F:
    """MindSpeed-RL's decorator: times every call of ``func`` as a range named after it."""
    name = getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        sink = _sink
        if sink is None:
            return func(*args, **kwargs)
        with sink.range(name):  # the range ends in __exit__, i.e. also on exceptions
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def set_sink(sink: RangeSink | None) -> None:
    """Install (or remove, with ``None``) the sink that markers write to."""
    global _sink
    _sink = sink


def active_sink() -> RangeSink | None:
    return _sink
