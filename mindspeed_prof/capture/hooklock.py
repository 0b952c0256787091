"""``HookLock``: one thread at a time in a profiler's hooks.

Trainers call ``prof.stage`` from several threads (an actor and a critic update side by side):
the scheduler, the capturer and the range tap are one state, changed by one thread at a time.
The lock is reentrant (parts call back into their profiler), and it knows its holder, so a
signal handler can tell that it interrupted its own thread inside a hook (and must not run a
hook's work again inside it) from another thread being in one (it may wait a little).
"""

from __future__ import annotations

import threading

__all__ = ["HookLock"]


class HookLock:
    """``with lock:`` around a hook; ``for_signal(wait_s)`` for a signal handler."""

    __slots__ = ("_lock", "_owner", "_depth")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner = 0  # the holding thread's ident, 0 when free
        self._depth = 0

    def __enter__(self) -> None:
        self._lock.acquire()
        self._depth += 1
        self._owner = threading.get_ident()

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = 0
        self._lock.release()

    def for_signal(self, wait_s: float) -> bool:
        """Take the lock for a signal handler: False, without it, when the handler's thread was
        interrupted inside a hook or another thread keeps it past ``wait_s``. ``release`` it."""
        if self._owner == threading.get_ident():
            return False
        if not self._lock.acquire(timeout=wait_s):
            return False
        self._depth += 1
        self._owner = threading.get_ident()
        return True

    def release(self) -> None:
        self.__exit__()
