"""Crash safety: SIGTERM, SIGINT, interpreter exit and forks.

On SIGTERM or SIGINT every live profiler keeps what is cheap to keep (its range file written
out, its flight recorder dumped), then the handler the trainer had runs at once (its
checkpoint): no capture's export runs before it. When that handler raises (``sys.exit``,
SIGINT's ``KeyboardInterrupt``), the captures close as the exception leaves the trainer's
steps, or at exit; when it returns, training goes on and so do the captures. Where the trainer
had no handler, every live profiler is closed (nothing else waits for it), then the signal
takes its default effect; an ignored signal stays ignored. A signal without a trainer's handler
that lands while a capture is exported (``exporting``) waits for the export to end (its rename
done) and the hook that ran it to return: a thread then closes every profiler (the range file
holds every finished step) and sends the signal again, which takes its effect.

The handlers and the ``atexit`` hook are installed while at least one profiler is live and
removed when the last one closes, so a process that stopped profiling is left as it was.

A forked child (a reward ``multiprocessing.Pool``, ``os.fork``) inherits its parent's
profilers with their open files, the handlers and the exit hook. At the fork every profiler
(``track``: live or not, an on-demand one may wake later) is disowned in the child
(``os.register_at_fork``), which gets back the handlers the trainer had and no exit hook; the
handlers and the hook also check the pid, for a child forked where no fork hook ran (``fork()``
called from C).

SIGTERM and SIGINT are blocked in the forking thread across the fork while our handlers are
installed, and unblocked in the child once the trainer's handlers are back: a signal sent to a
child that has not run yet (a pool terminated under load before its new worker got a core)
waits for them and takes their effect. Unblocked, it would reach the child with our handler
inherited, before Python's own fork handling, which drops a signal Python has not handled yet:
the worker would live on, and the pool's ``terminate`` would wait for it forever.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Protocol, Union

from mindspeed_prof import mstx  # noqa: F401 - imported first: its fork hook runs before ours
from mindspeed_prof.capture.hooklock import HookLock

__all__ = ["exporting", "signalled", "track", "unwatch", "watch"]

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Closable(Protocol):
    def close(self) -> None: ...


class _Disownable(Protocol):
    def disown(self) -> None: ...


#: A signal's handler as ``signal.signal`` returns it (None: one not set from Python).
_Handler = Union[Callable[[int, Union[FrameType, None]], object], int, signal.Handlers, None]

_made: weakref.WeakSet[_Disownable] = weakref.WeakSet()  # every profiler of this process
_live: weakref.WeakSet[_Closable] = weakref.WeakSet()
_previous: dict[int, _Handler] = {}  # signal -> the handler ours replaced
_pid = os.getpid()  # the process the live profilers belong to
_exporting = 0  # exports under way (``exporting``)
_pending: list[int] = []  # a signal that waits for the exports to end
_received: list[int] = []  # the signals our handler took in this process


def signalled() -> bool:
    """Whether SIGTERM or SIGINT came to this process while a profiler watched it (an
    exception now leaving a step is the signal's, not the trainer's error)."""
    return bool(_received)


@contextmanager
def exporting() -> Iterator[None]:
    """Around a capture's export: a signal without a trainer's handler waits for it."""
    global _exporting
    _exporting += 1
    try:
        yield
    finally:
        _exporting -= 1
        if not _exporting and _pending and os.getpid() == _pid:
            # the hook that exported still runs on this thread: close from another one, which
            # waits for the hook to return (its lock), then sends the signal again
            threading.Thread(
                target=_after_export, args=(_pending[0],), name="mindspeed-prof-signal"
            ).start()


#: How long the signal waits, after an export, for the hooks to return and the profilers to
#: close: past it, it takes its effect anyway (a hook that never returns does not keep a
#: preempted job alive).
AFTER_EXPORT_WAIT_S = 30.0


def _after_export(signum: int) -> None:
    """On a thread of its own: wait for the hook that exported to return, keep what is cheap
    (``on_signal``), close every profiler, then send the signal again."""
    deadline = time.monotonic() + AFTER_EXPORT_WAIT_S
    for profiler in list(_live):
        lock = getattr(profiler, "_lock", None)  # the profiler's hook lock (``HookLock``)
        if isinstance(lock, HookLock) and lock.acquire(
            timeout=max(0.0, deadline - time.monotonic())
        ):
            lock.release()
        try:
            getattr(profiler, "on_signal", lambda _: None)(signum)
        except Exception:
            pass
    closer = threading.Thread(target=_close_all, name="mindspeed-prof-close", daemon=True)
    closer.start()
    closer.join(max(0.0, deadline - time.monotonic()))
    _pending.clear()
    os.kill(os.getpid(), signum)  # our handler, with nothing live: the signal's own effect


def track(profiler: _Disownable) -> None:
    """Disown ``profiler`` in any child this process forks from now on."""
    _made.add(profiler)


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
    _restore_handlers()


def _restore_handlers() -> None:
    for sig, previous in list(_previous.items()):
        if signal.getsignal(sig) is _on_signal:  # else someone chained to ours: keep it
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
            del _previous[sig]


def _close_all() -> None:
    if os.getpid() != _pid:
        return  # a forked child's exit: the profilers are its parent's
    for profiler in list(_live):
        try:
            profiler.close()
        except Exception:  # closing is best effort; never mask the original exit
            pass


def _on_signal(signum: int, frame: FrameType | None) -> None:
    previous = _previous.get(signum, signal.SIG_DFL)
    if os.getpid() == _pid:
        _received[:] = [signum]
        if _exporting and not callable(previous) and previous != signal.SIG_IGN:
            if not _pending:  # after the export (``exporting``)
                _pending.append(signum)
            return
        for profiler in list(_live):  # cheap: the range file written out, a flight dump
            try:
                getattr(profiler, "on_signal", lambda _: None)(signum)
            except Exception:
                pass
    if callable(previous):
        previous(signum, frame)  # the trainer's, at once; its exit closes the captures
        return
    _close_all()
    if previous != signal.SIG_IGN:  # SIG_DFL, or None: a handler not set from Python
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _in_child() -> None:
    """After a fork, in the child: every profiler disowned, the trainer's handlers back."""
    global _pid, _exporting
    _pid, _exporting = os.getpid(), 0
    _pending.clear()
    _received.clear()
    for profiler in list(_made):
        try:
            profiler.disown()
        except Exception:  # the child must go on whatever a profiler left
            pass
    _made.clear()
    _live.clear()
    atexit.unregister(_close_all)
    try:
        _restore_handlers()  # a handler chained to ours stays, and ours still chains on
    except (ValueError, OSError):
        pass


_mask: list[set[int | signal.Signals]] = []  # the forking thread's signal mask before the fork


def _before_fork() -> None:
    """Block SIGTERM and SIGINT in the forking thread while our handlers are installed."""
    if _previous and hasattr(signal, "pthread_sigmask"):
        _mask.append(signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS))


def _unblock() -> None:
    """The forking thread's signal mask as it was before the fork."""
    if _mask:
        signal.pthread_sigmask(signal.SIG_SETMASK, _mask.pop())


def _child_after_fork() -> None:
    try:
        _in_child()
    finally:
        _unblock()  # a signal that came meanwhile now takes the trainer's handler's effect


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=_before_fork, after_in_parent=_unblock, after_in_child=_child_after_fork
    )
