"""Markers: free when no capture is active, drop-in decorator."""

from __future__ import annotations

from typing import Any

import pytest

from mindspeed_prof import mstx
from mindspeed_prof.mstx import mstx_timer_decorator


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def range(self, name: str, cat: str = "user_annotation") -> Any:
        rec = self

        class R:
            def __enter__(self) -> None:
                rec.events.append(("enter", name))

            def __exit__(self, *exc: object) -> None:
                rec.events.append(("exit", name))

        return R()

    def mark(self, name: str) -> None:
        self.events.append(("mark", name))


def test_noop_without_sink_returns_shared_object() -> None:
    assert mstx.active_sink() is None
    assert mstx.range("a") is mstx.range("b")
    mstx.mark("nothing happens")


def test_decorator_keeps_return_and_ends_range_on_error() -> None:
    @mstx_timer_decorator
    def f(x: int) -> int:
        if x < 0:
            raise ValueError("neg")
        return x * 2

    assert f(2) == 4 and f.__name__ == "f"
    rec = Recorder()
    mstx.set_sink(rec)
    try:
        assert f(3) == 6
        with pytest.raises(ValueError):
            f(-1)
        mstx.mark("m")
    finally:
        mstx.set_sink(None)
    name = "test_decorator_keeps_return_and_ends_range_on_error.<locals>.f"
    assert rec.events == [("enter", name), ("exit", name)] * 2 + [("mark", "m")]


def test_each_sink_keeps_receiving_until_removed() -> None:
    from mindspeed_prof.capture.spans import RangeBuffer

    a, b = RangeBuffer(), RangeBuffer()
    mstx.add_sink(a)
    mstx.add_sink(b)
    try:
        with mstx.range("both"):
            pass
        mstx.remove_sink(b)
        with mstx.range("both"):
            pass
        fresh = Recorder()  # single-use ranges mixed with a reusable sink
        mstx.add_sink(fresh)
        with mstx.range("mixed"):
            mstx.mark("m")
    finally:
        mstx.set_sink(None)
    assert len(a.events) == 4 and len(b.events) == 1
    assert fresh.events == [("enter", "mixed"), ("mark", "m"), ("exit", "mixed")]
    assert mstx.range("both") is mstx.range("x") and mstx.active_sink() is None
