"""Worker processes that stop on Ctrl-C (``mindspeed_prof.pool``)."""

from __future__ import annotations

import functools
import operator
import time

import pytest

from mindspeed_prof.pool import next_result, workers


def test_an_error_in_a_worker_reaches_the_parent_and_the_pool_stops() -> None:
    with pytest.raises(ZeroDivisionError), workers(2) as (pool, stop):
        results = pool.imap(functools.partial(operator.truediv, 1), [1, 0])
        assert next_result(results, stop) == 1.0
        next_result(results, stop)


def test_ctrl_c_stops_the_wait_at_once_and_the_workers_with_it() -> None:
    """Ctrl-C only sets the flag; the wait acts on it within a tenth of a second, and the
    workers (here, asleep for a minute) are terminated, not waited for."""
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), workers(1) as (pool, stop):
        results = pool.imap(time.sleep, [60])
        stop.set()
        next_result(results, stop)
    assert time.monotonic() - t0 < 30


def test_workers_stop_whatever_sigterm_handler_they_inherit() -> None:
    """A process with a SIGTERM handler that returns (a trainer that checkpoints and goes on, a
    handler a library left) forks workers that inherit it: ``Pool.terminate`` sends them
    SIGTERM and waits; a worker idle in its queue's lock ran the handler and waited on. The
    workers take SIGTERM's default: Ctrl-C still stops them at once. In a process of its own,
    under a timeout: the hang it guards against would stop the suite."""
    import subprocess
    import sys

    script = (
        "import signal, time\n"
        "from mindspeed_prof.pool import next_result, workers\n"
        "signal.signal(signal.SIGTERM, lambda *_: None)\n"
        "t0 = time.monotonic()\n"
        "try:\n"
        "    with workers(2) as (pool, stop):\n"
        "        results = pool.imap(time.sleep, [60])\n"
        "        time.sleep(0.5)  # the idle worker waits in the queue's lock\n"
        "        stop.set()\n"
        "        next_result(results, stop)\n"
        "except KeyboardInterrupt:\n"
        "    print(round(time.monotonic() - t0, 1))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 30
