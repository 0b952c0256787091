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


# -- id-based ranges: MindSpeed-RL's "method 2", verl's mark_start_range/mark_end_range -------
def test_id_ranges_are_free_and_inert_when_nothing_records() -> None:
    assert mstx.sinks() == ()
    assert mstx.range_start("tag") == 0 and mstx.mark_start_range("tag") == 0
    mstx.range_end(0)
    mstx.range_end(12345)  # unknown: nothing happens
    mstx.mark_end_range(0)
    assert mstx._open == {}


def test_id_ranges_are_recorded_like_ranges_and_cross_threads() -> None:
    import threading
    import time

    from mindspeed_prof.capture.spans import RangeBuffer

    buf = RangeBuffer()
    mstx.add_sink(buf)
    try:
        outer = mstx.range_start("step_part")
        inner = mstx.range_start("step_part")  # same name, overlapping: each its own times
        time.sleep(0.002)
        mstx.range_end(outer)  # ended out of order
        ended = threading.Thread(target=mstx.range_end, args=(inner,))
        ended.start()
        ended.join()
        with mstx.range("step_part"):
            pass
        mstx.range_end(inner)  # twice: the second does nothing
    finally:
        mstx.set_sink(None)
    assert outer != inner and outer > 0 and inner > 0
    assert len(buf.events) == 3 and len(buf.keys) == 1  # one name, this thread's key
    (name, cat, tid), = buf.keys
    assert (name, cat, tid) == ("step_part", "user_annotation", threading.get_native_id())
    first, second = buf.events[0], buf.events[1]
    assert first[1] <= second[1] and second[2] - second[1] >= 2_000_000  # inner ran past 2 ms


def test_id_ranges_from_many_threads_are_all_recorded_once() -> None:
    import threading

    from mindspeed_prof.capture.spans import RangeBuffer

    buf = RangeBuffer()
    mstx.add_sink(buf)
    ids: list[int] = []
    lock = threading.Lock()

    def start(n: int) -> None:
        got = [mstx.range_start(f"r{n % 4}") for _ in range(200)]
        with lock:
            ids.extend(got)

    try:
        threads = [threading.Thread(target=start, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        enders = [threading.Thread(target=lambda part=ids[i::4]: list(map(mstx.range_end, part)))
                  for i in range(4)]
        for t in enders:
            t.start()
        for t in enders:
            t.join()
    finally:
        mstx.set_sink(None)
    assert len(set(ids)) == len(ids) == 1600 and len(buf.events) == 1600
    assert mstx._open == {}


def test_id_ranges_enter_and_exit_single_use_sinks_and_go_to_every_sink() -> None:
    from mindspeed_prof.capture.spans import RangeBuffer

    rec, buf = Recorder(), RangeBuffer()
    mstx.add_sink(rec)
    mstx.add_sink(buf)
    try:
        range_id = mstx.mark_start_range(message="verl_stage", color="red")
        mstx.mark_end_range(range_id)
    finally:
        mstx.set_sink(None)
    assert rec.events == [("enter", "verl_stage"), ("exit", "verl_stage")]
    assert len(buf.events) == 1


def test_ranges_never_ended_are_forgotten_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from mindspeed_prof.capture.spans import RangeBuffer

    monkeypatch.setattr(mstx, "_OPEN_LIMIT", 3)
    mstx.add_sink(RangeBuffer())
    try:
        ids = [mstx.range_start("leak") for _ in range(5)]
    finally:
        mstx.set_sink(None)
    assert list(mstx._open) == ids[2:]


def test_id_range_lands_in_the_capture_range_file(tmp_path) -> None:
    import json

    from mindspeed_prof import Profiler

    prof = Profiler.from_config({"profile": True, "mstx": True, "backend": "none",
                                 "profile_save_path": str(tmp_path)}, rank=0)
    with prof.step(1):
        range_id = mstx.range_start("your_tag_name")
        with prof.stage("actor_update"):
            pass
        mstx.range_end(range_id)
    prof.close()
    (path,) = (tmp_path / "integrated").glob("*.mstx.trace.json")
    events = {e["name"]: e for e in json.loads(path.read_text())["traceEvents"]}
    tag, stage = events["your_tag_name"], events["actor_update"]
    assert tag["ts"] <= stage["ts"] and tag["ts"] + tag["dur"] >= stage["ts"] + stage["dur"]
    assert tag["args"]["step"] == 1
