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
