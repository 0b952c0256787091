"""Worker processes that stop on Ctrl-C: ``workers(jobs)`` and ``next_result``, what
``analyse --jobs`` reads captures in and ``timeline --jobs`` writes tracks in."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import multiprocessing.pool
    from multiprocessing.pool import IMapIterator

__all__ = ["next_result", "workers"]

T = TypeVar("T")


@contextmanager
def workers(jobs: int) -> Iterator[tuple[multiprocessing.pool.Pool, threading.Event]]:
    """A pool of ``jobs`` processes, and the flag Ctrl-C sets (``next_result`` acts on it);
    on leaving, the pool is closed, or terminated when an error leaves.

    A ``multiprocessing.Pool``, not a ``ProcessPoolExecutor``: the executor deadlocks at exit
    when a worker is killed halfway through sending a result, ``Pool.terminate`` does not.
    Ctrl-C only sets a flag, acted on between waits, so no lock is left half-taken.
    """
    import multiprocessing  # with its pickle and sockets: only where workers run

    stop = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: stop.set()) if main else None
    # SIGTERM blocked across the forks: one that comes before a worker has run its initializer
    # waits for SIG_DFL there, not the handler it inherited (crash.py does the same for ours)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pool = multiprocessing.Pool(jobs, initializer=_worker_signals)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        yield pool, stop
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        if main:
            signal.signal(signal.SIGINT, previous)


def next_result(results: IMapIterator[T], stop: threading.Event) -> T:
    """The next result, checking for Ctrl-C every tenth of a second."""
    import multiprocessing

    while not stop.is_set():
        try:
            return results.next(timeout=0.1)
        except multiprocessing.TimeoutError:
            continue
    raise KeyboardInterrupt


def _worker_signals() -> None:
    """Workers leave Ctrl-C to the parent, which stops them, and die of SIGTERM whatever
    handler they inherited: ``Pool.terminate`` stops them with it and waits, and a handler
    that returns (a trainer's that checkpoints and goes on, one a library left) kept an idle
    worker waiting in its queue's lock, and the parent with it, for ever."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # blocked across the fork
