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
    from mindspeed_prof.capture.buffer import RangeBuffer

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

    from mindspeed_prof.capture.buffer import RangeBuffer

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
    assert len(buf.events) == 3 and buf.keys == [("step_part", "user_annotation")]
    # each recorded on the thread that started it, the one ended elsewhere too
    assert {e[1] for e in buf.events} == {threading.get_native_id()}
    first, second = buf.events[0], buf.events[1]
    assert first[2] <= second[2] and second[3] - second[2] >= 2_000_000  # inner ran past 2 ms


def test_id_ranges_from_many_threads_are_all_recorded_once() -> None:
    import threading

    from mindspeed_prof.capture.buffer import RangeBuffer

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
        enders = [
            threading.Thread(target=lambda part=ids[i::4]: list(map(mstx.range_end, part)))
            for i in range(4)
        ]
        for t in enders:
            t.start()
        for t in enders:
            t.join()
    finally:
        mstx.set_sink(None)
    assert len(set(ids)) == len(ids) == 1600 and len(buf.events) == 1600
    assert mstx._open == {}


def test_id_ranges_enter_and_exit_single_use_sinks_and_go_to_every_sink() -> None:
    from mindspeed_prof.capture.buffer import RangeBuffer

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
    from mindspeed_prof.capture.buffer import RangeBuffer

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

    prof = Profiler.from_config(
        {"profile": True, "mstx": True, "backend": "none", "profile_save_path": str(tmp_path)},
        rank=0,
    )
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


class _IdSink(Recorder):
    """A sink with its own id-based ranges (like ``RangeBuffer``): handles are its tuples."""

    def range_start(self, name: str) -> tuple[str, int]:
        self.events.append(("start", name))
        return name, len(self.events)

    def range_end(self, handle: tuple[str, int]) -> None:
        self.events.append(("end", f"{handle[0]}@{handle[1]}"))


class _StrictExit:
    """A single-use range whose ``__exit__`` takes exactly the three exception arguments."""

    def __init__(self, events: list[tuple[str, Any]]) -> None:
        self.events = events

    def __enter__(self) -> None:
        self.events.append(("enter", None))

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.events.append(("exit", (exc_type, exc, tb)))


def test_start_on_and_end_on_use_a_sinks_own_id_ranges() -> None:
    """A sink with ``range_start``/``range_end`` gets those called (not ``range``), with the
    name, and ``end_on`` hands back the very handle ``start_on`` returned."""
    sink = _IdSink()
    handle = mstx.start_on(sink, "tagged")
    assert handle == ("tagged", 1)
    mstx.end_on(sink, handle)
    assert sink.events == [("start", "tagged"), ("end", "tagged@1")]


def test_start_on_and_end_on_enter_and_exit_a_range_without_id_ranges() -> None:
    """Without ``range_start``/``range_end`` the sink's range is entered, and exited with
    ``(None, None, None)``: no exception."""
    events: list[tuple[str, Any]] = []

    class Plain:
        def range(self, name: str, cat: str = "user_annotation") -> _StrictExit:
            events.append(("range", name))
            return _StrictExit(events)

        def mark(self, name: str) -> None:
            pass

    sink = Plain()
    handle = mstx.start_on(sink, "plain")
    assert isinstance(handle, _StrictExit)
    mstx.end_on(sink, handle)
    assert events == [("range", "plain"), ("enter", None), ("exit", (None, None, None))]


def test_mark_start_range_without_a_message_is_named_range() -> None:
    rec = Recorder()
    mstx.set_sink(rec)
    try:
        mstx.mark_end_range(mstx.mark_start_range())
        mstx.mark_end_range(mstx.mark_start_range(""))
    finally:
        mstx.set_sink(None)
    assert rec.events == [("enter", "range"), ("exit", "range")] * 2


def test_decorator_names_a_callable_without_qualname_by_its_name_or_function() -> None:
    """A callable object has no ``__qualname__``: its ``__name__`` names the range; with
    neither (``functools.partial``) the range is named ``function``."""
    import functools

    class Named:
        def __call__(self, x: int) -> int:
            return x + 1

    named = Named()
    named.__name__ = "named_callable"  # type: ignore[attr-defined]
    timed_named = mstx_timer_decorator(named)
    timed_partial = mstx_timer_decorator(functools.partial(pow, 2))
    rec = Recorder()
    mstx.set_sink(rec)
    try:
        assert timed_named(1) == 2 and timed_partial(3) == 8
    finally:
        mstx.set_sink(None)
    assert rec.events == [
        ("enter", "named_callable"),
        ("exit", "named_callable"),
        ("enter", "function"),
        ("exit", "function"),
    ]


def test_the_oldest_range_ended_by_another_thread_while_it_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the limit the oldest open range is forgotten; if another thread ends it between
    finding it and dropping it, nothing fails."""
    from mindspeed_prof.capture.buffer import RangeBuffer

    class Racing(dict):
        def __iter__(self) -> Any:
            oldest = next(super().__iter__())
            del self[oldest]  # what mstx.range_end(oldest) on another thread would do now
            return iter([oldest])

    monkeypatch.setattr(mstx, "_OPEN_LIMIT", 1)
    monkeypatch.setattr(mstx, "_open", Racing())
    mstx.add_sink(RangeBuffer())
    try:
        first = mstx.range_start("a")
        second = mstx.range_start("b")
    finally:
        mstx.set_sink(None)
    assert list(mstx._open.keys()) == [second] and first != second


def test_single_use_ranges_are_made_anew_and_a_reusable_sinks_own_is_handed_out() -> None:
    """A sink without ``reusable`` gets a fresh range at every entry (a generator-based one
    cannot be entered twice); the one reusable sink's own range is returned as it is."""
    import contextlib
    from collections.abc import Iterator

    from mindspeed_prof.capture.buffer import RangeBuffer

    events: list[str] = []

    class SingleUse:
        @contextlib.contextmanager
        def range(self, name: str, cat: str = "user_annotation") -> Iterator[None]:
            events.append(f"enter {name}")
            yield
            events.append(f"exit {name}")

        def mark(self, name: str) -> None:
            pass

    mstx.set_sink(SingleUse())
    try:
        for _ in range(2):
            with mstx.range("twice"):
                pass
    finally:
        mstx.set_sink(None)
    assert events == ["enter twice", "exit twice"] * 2
    buf = RangeBuffer()
    mstx.set_sink(buf)
    try:
        assert mstx.range("own") is buf.range("own")
    finally:
        mstx.set_sink(None)


# -- counts ------------------------------------------------------------------------------------
def test_count_goes_nowhere_while_no_profiler_counts() -> None:
    assert mstx._counters == ()
    mstx.count("tokens_generated", 5)  # nothing to call, nothing raised
    mstx.add_sink(Recorder())  # a range sink takes no counts
    mstx.count("tokens_generated", [1, 2])
    assert mstx._counters == ()


def test_count_reaches_each_counter_once_until_it_is_removed() -> None:
    got: list[tuple[str, str, Any]] = []

    def first(name: str, value: Any) -> None:
        got.append(("first", name, value))

    def second(name: str, value: Any) -> None:
        got.append(("second", name, value))

    mstx.add_counter(first)
    mstx.add_counter(second)
    mstx.add_counter(first)  # already there: still once
    mstx.count("reward", [0.5])
    mstx.remove_counter(first)
    mstx.count("tokens_generated", 3)
    mstx.remove_counter(first)  # not there: nothing changes
    assert got == [
        ("first", "reward", [0.5]),
        ("second", "reward", [0.5]),
        ("second", "tokens_generated", 3),
    ]
    mstx.remove_counter(second)
    mstx.count("reward", [1.0])
    assert len(got) == 3 and mstx._counters == ()


def test_count_lands_in_the_capture_range_file(tmp_path) -> None:
    import json

    from mindspeed_prof import Profiler

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_with_cpu": False,
                "profile_step_start": 1,
                "profile_step_end": 2,
                "profile_save_path": str(tmp_path),
            }
        },
        rank=0,
    )
    with prof.step(1), prof.stage("actor_update"):
        mstx.count("tokens_trained", 256)
    prof.close()
    (path,) = tmp_path.rglob("*.mstx.trace.json")
    (event,) = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "C"]
    assert (event["name"], event["cat"], event["args"]) == (
        "tokens_trained",
        "count",
        {"value": 256, "step": 1, "stage": "actor_update"},
    )
