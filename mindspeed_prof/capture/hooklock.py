"""``HookLock``: one thread at a time in a profiler's hooks.

Trainers call ``prof.stage`` from several threads (an actor and a critic update side by side):
the scheduler, the capturer and the range tap are one state, changed by one thread at a time.
The lock is reentrant (parts call back into their profiler), and it knows its holder, so a
signal handler can tell that it interrupted its own thread inside a hook (and must not run a
hook's work again inside it) from another thread being in one (it may wait a little).

It is the interpreter's own reentrant lock (``with lock:`` runs no Python code: the hooks take
it twice per step), which knows its holder (``_is_owned``, what ``threading.Condition`` asks).
"""

from __future__ import annotations

import _thread

__all__ = ["HookLock"]


class HookLock(_thread.RLock):  # type: ignore[misc]  # final in typeshed only
    """``with lock:`` around a hook; ``for_signal(wait_s)`` for a signal handler."""

    __slots__ = ()

    def for_signal(self, wait_s: float) -> bool:
        """Take the lock for a signal handler: False, without it, when the handler's thread was
        interrupted inside a hook or another thread keeps it past ``wait_s``. ``release`` it."""
        if self._is_owned():  # type: ignore[attr-defined]  # C RLock; not in typeshed
            return False
        return self.acquire(timeout=wait_s)
