"""RangeBuffer: every thread's ranges and marks, taken whole while threads keep recording."""

from __future__ import annotations

import threading


def test_range_buffer_take_keeps_an_append_made_while_it_copies() -> None:
    """Another thread appends between take()'s copy and its delete: the event stays."""
    from mindspeed_prof.capture.buffer import RangeBuffer

    class Racing(list):
        def __getitem__(self, index):
            got = super().__getitem__(index)
            if isinstance(index, slice) and not raced:
                raced.append(True)
                self.append((0, 1, 5, 6))  # what another thread's range would do right now
            return got

    raced: list[bool] = []
    buf = RangeBuffer()
    buf.events = Racing()
    with buf.range("a"):
        pass
    first = buf.take()
    assert len(first) == 1 and buf.events == [(0, 1, 5, 6)]
    assert buf.keys[first[0][0]] == ("a", "user_annotation")
    assert buf.range("a") is buf.range("a") and buf.range("a") is not buf.range("a", "stage")


def test_range_buffer_take_loses_nothing_a_running_thread_records() -> None:

    from mindspeed_prof.capture.buffer import RangeBuffer

    buf = RangeBuffer()
    done = threading.Event()
    recorded = 0

    def record() -> None:
        nonlocal recorded
        r = buf.range("worker")
        while not done.is_set() or recorded < 20_000:
            with r:
                pass
            recorded += 1

    worker = threading.Thread(target=record)
    worker.start()
    taken: list[tuple[int, int, int, int]] = []
    while worker.is_alive():
        taken += buf.take()
        done.set()
    worker.join()
    taken += buf.take()
    assert len(taken) == recorded and len(set(taken)) == recorded


def test_a_mark_is_an_instant_event_of_its_name(monkeypatch) -> None:
    """``mark(name)`` records ``(key of (name, "mark"), thread, now, -1)``: -1, no end."""

    from mindspeed_prof.capture import buffer
    from mindspeed_prof.capture.buffer import RangeBuffer

    monkeypatch.setattr(buffer, "perf_counter_ns", lambda: 1_234)
    buf = RangeBuffer()
    buf.key("before")  # key 0: the mark's key is 1
    buf.mark("m")
    assert buf.events == [(1, threading.get_native_id(), 1_234, -1)]
    assert buf.keys[1] == ("m", "mark")


def test_a_range_pairs_nested_entries_and_an_exit_with_none_open_records_nothing(
    monkeypatch,
) -> None:
    """Entered inside itself, each exit ends the innermost entry; its enter is a clock read
    pushed in C, read at construction; an exit with nothing open adds no event."""
    from mindspeed_prof.capture import buffer
    from mindspeed_prof.capture.buffer import RangeBuffer

    clock = iter(range(1, 100))
    monkeypatch.setattr(buffer, "perf_counter_ns", lambda: next(clock))
    buf = RangeBuffer()
    r = buf.range("a")
    with r:
        with r, r:  # entered twice inside itself
            pass
        with r:
            pass
    r.__exit__(None, None, None)
    me = threading.get_native_id()
    assert buf.take() == [(0, me, 4, 5), (0, me, 3, 6), (0, me, 7, 8), (0, me, 2, 9)]  # 1: perf0


def test_a_range_raises_nothing_of_its_own_and_lets_the_exception_through() -> None:
    from mindspeed_prof.capture.buffer import RangeBuffer

    buf = RangeBuffer()
    r = buf.range("a")
    try:
        with r:
            raise KeyError("x")
    except KeyError:
        pass
    else:
        raise AssertionError("the exception was swallowed")
    assert len(buf.take()) == 1 and buf.events == []
