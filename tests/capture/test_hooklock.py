"""The hooks' lock: reentrant for parts, and a signal handler never runs a hook's work inside
the hook it interrupted, nor waits long for another thread's."""

from __future__ import annotations

import threading
import time

from mindspeed_prof.capture.hooklock import HookLock


def test_a_signal_handler_gets_a_free_lock_and_releases_it() -> None:
    lock = HookLock()
    assert lock.for_signal(0.0)
    lock.release()
    with lock:  # free again
        pass


def test_the_holders_own_signal_handler_is_refused_even_when_nested() -> None:
    """The handler runs on the thread that is inside a hook (reentrant entries included):
    it is refused at once, and the hook goes on holding the lock."""
    lock = HookLock()
    with lock:
        with lock:  # a part calling back into its profiler
            assert not lock.for_signal(10.0)
        assert not lock.for_signal(10.0)
    assert lock.for_signal(0.0)
    lock.release()


def test_another_threads_hook_is_waited_for_a_bounded_time() -> None:
    lock = HookLock()
    entered, leave = threading.Event(), threading.Event()

    def hook() -> None:
        with lock:
            entered.set()
            leave.wait(30)

    worker = threading.Thread(target=hook)
    worker.start()
    assert entered.wait(30)
    started = time.monotonic()
    assert not lock.for_signal(0.05)  # still held by the worker: given up
    assert time.monotonic() - started >= 0.05
    leave.set()
    worker.join()
    assert lock.for_signal(5.0)  # the worker has left
    lock.release()
