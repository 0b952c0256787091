"""Crash safety: SIGTERM, SIGINT and interpreter exit close every live profiler first."""

from __future__ import annotations

import atexit
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["watch"]


class _Closable(Protocol):
    def close(self) -> None: ...


_live: weakref.WeakSet[Any] = weakref.WeakSet()
_previous: dict[int, Any] = {}
_installed = False


def watch(profiler: _Closable) -> None:
    """Close ``profiler`` on SIGTERM, SIGINT and exit, then let the signal act as before."""
    global _installed
    _live.add(profiler)
    if _installed:
        return
    _installed = True
    atexit.register(_close_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; atexit still applies
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            _previous[sig] = signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass


def _close_all() -> None:
    for profiler in list(_live):
        try:
            profiler.close()
        except Exception:  # closing is best effort; never mask the original exit
            pass


def _on_signal(signum: int, frame: FrameType | None) -> None:
    for profiler in list(_live):  # e.g. a flight-recorder dump, before captures close
        try:
            getattr(profiler, "on_signal", lambda _: None)(signum)
        except Exception:
            pass
    _close_all()
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
