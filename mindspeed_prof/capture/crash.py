"""Crash safety: SIGTERM, SIGINT and interpreter exit close every live profiler first.

The handlers and the ``atexit`` hook are installed while at least one profiler is live and
removed when the last one closes, so a process that stopped profiling is left as it was.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import weakref
from types import FrameType
from typing import Any, Protocol

__all__ = ["unwatch", "watch"]

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Closable(Protocol):
    def close(self) -> None: ...


_live: weakref.WeakSet[Any] = weakref.WeakSet()
_previous: dict[int, Any] = {}  # signal -> the handler ours replaced


def watch(profiler: _Closable) -> None:
    """Close ``profiler`` on SIGTERM, SIGINT and exit, then let the signal act as before."""
    if not _live:
        atexit.unregister(_close_all)  # a profiler collected without close() left it behind
        atexit.register(_close_all)
    _live.add(profiler)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread; atexit still applies
    for sig in SIGNALS:
        if sig in _previous:
            continue
        try:
            _previous[sig] = signal.signal(sig, _on_signal)
        except (ValueError, OSError):
            pass


def unwatch(profiler: _Closable) -> None:
    """``profiler`` closed; with no live profiler left, restore the handlers and ``atexit``."""
    _live.discard(profiler)
    if _live:
        return
    atexit.unregister(_close_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, previous in list(_previous.items()):
        if signal.getsignal(sig) is _on_signal:  # else someone chained to ours: keep it
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
            del _previous[sig]


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
    previous = _previous.get(signum, signal.SIG_DFL)  # before closing restores it
    _close_all()
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
