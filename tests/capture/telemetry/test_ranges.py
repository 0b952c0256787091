"""``RangeTimer``: custom ranges' time per name, through ``mstx``."""

from __future__ import annotations

import threading

import pytest

from mindspeed_prof import mstx
from mindspeed_prof.capture.telemetry import ranges as ranges_module
from mindspeed_prof.capture.telemetry.ranges import RangeTimer


class Clock:
    def __init__(self) -> None:
        self.ns = 1_000

    def __call__(self) -> int:
        return self.ns


def test_nested_ranges_of_one_name_and_ranges_ended_on_another_thread_add_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(ranges_module, "perf_counter_ns", clock)
    timer = RangeTimer()
    mstx.add_sink(timer)
    with mstx.range("load"):
        clock.ns += 10
        with mstx.range("load"):  # the same name inside itself: both times count
            clock.ns += 5
        clock.ns += 1
    rid = mstx.range_start("sync")
    clock.ns += 7
    ender = threading.Thread(target=mstx.range_end, args=(rid,))
    ender.start()
    ender.join()
    mstx.mark("ignored")
    assert timer.take() == {"load": 16 + 5, "sync": 7}
    assert timer.take() == {}
    mstx.remove_sink(timer)
    with mstx.range("load"):
        clock.ns += 3
    assert timer.take() == {}


def test_names_beyond_the_limit_are_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranges_module, "MAX_NAMES", 1)
    timer = RangeTimer()
    timer.add("a", 1)
    timer.add("b", 1)
    timer.add("a", 2)
    assert timer.take() == {"a": 3}
