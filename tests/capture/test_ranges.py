"""The range tap: step and stage ranges per thread, closed in any order, never lost."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.capture import ranges
from mindspeed_prof.capture.buffer import Event
from mindspeed_prof.capture.ranges import RangeTap

NAMES = ("actor_update", "critic_update", "reward")


class _Threads:
    """The calling thread's id as ``ranges`` knows it (``_local.tid``) and its clock, driven by
    the test: which thread calls, and a clock that ticks at every read."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0
        self.clock = itertools.count(1)
        monkeypatch.setattr(ranges, "_local", self)
        monkeypatch.setattr(ranges, "perf_counter_ns", lambda: next(self.clock))

    @property
    def tid(self) -> int:
        return self.now


def _tap() -> tuple[RangeTap, list[Event]]:
    errors: list[tuple[str, Exception]] = []
    tap = RangeTap(lambda what, err: errors.append((what, err)))
    got: list[Event] = []
    tap.listen(lambda step, events: got.extend(events))
    return tap, got


ops = st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.sampled_from(NAMES)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops=ops)
def test_any_interleaving_of_threads_records_every_closed_range_once(
    ops: list[tuple[int, bool, str]],
) -> None:
    """Opens and closes from up to 3 threads in any order: a close ends the innermost open
    range of its name on its own thread, else the one another thread opened last, else
    nothing. Every range closed is recorded once, on the thread that opened it, with its
    own start; what is still open is counted; a thread with nothing open holds no memory."""
    with pytest.MonkeyPatch.context() as mp:
        threads = _Threads(mp)
        tap, got = _tap()
        model: dict[int, list[tuple[str, int]]] = {}  # thread -> [(name, order opened)]
        expected: list[tuple[int, str, int]] = []
        opened = 0
        for thread, is_open, name in ops:
            threads.now = thread
            if is_open:
                tap.open("stage", name, 1)
                opened += 1
                model.setdefault(thread, []).append((name, opened))
                continue
            took = tap.close("stage", name)
            mine = [i for i, (n, _) in enumerate(model.get(thread, [])) if n == name]
            if mine:
                owner, index = thread, mine[-1]
            else:
                others = [
                    (order, t, i)
                    for t, rs in model.items()
                    if t != thread
                    for i, (n, order) in enumerate(rs)
                    if n == name
                ]
                if not others:
                    assert took is None
                    continue
                _, owner, index = max(others)
            closed_name, _ = model[owner].pop(index)
            expected.append((owner, closed_name, len(expected)))
            assert took is not None and took > 0
        tap.drain(1)
        recorded = [(tid, tap.buffer.keys[key] if tap.buffer else None) for key, tid, _, _ in got]
        assert recorded == [(owner, (name, "stage")) for owner, name, _ in expected]
        assert all(start < end for _, _, start, end in got)
        assert tap.open_count == sum(len(rs) for rs in model.values())
        assert tap.open_threads == {t for t, rs in model.items() if rs}


def test_real_threads_cross_and_a_hook_may_end_on_another_thread() -> None:
    """Two real threads' stages overlap, the first opened closing first; a stage opened on
    one thread is ended by another (a hook-driven trainer's callback thread): all three are
    recorded, each on its opener's thread, and nothing stays open."""
    tap, got = _tap()
    opened, first_closed = threading.Barrier(2, timeout=30), threading.Barrier(2, timeout=30)
    tids: dict[str, int] = {}
    took: dict[str, int | None] = {}

    def first() -> None:  # opens first, closes first while the second is open
        tids["actor_update"] = threading.get_native_id()
        tap.open("stage", "actor_update", 1)
        opened.wait()
        opened.wait()
        took["actor_update"] = tap.close("stage", "actor_update")
        first_closed.wait()

    def second() -> None:
        tids["critic_update"] = threading.get_native_id()
        opened.wait()
        tap.open("stage", "critic_update", 1)
        opened.wait()
        first_closed.wait()
        took["critic_update"] = tap.close("stage", "critic_update")

    def run(*threads: threading.Thread) -> None:
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    run(threading.Thread(target=first), threading.Thread(target=second))
    tap.open("stage", "reward", 1)
    ender = threading.Thread(target=lambda: took.update(reward=tap.close("stage", "reward")))
    run(ender)
    assert all(took[name] is not None for name in ("actor_update", "critic_update", "reward"))
    tap.drain(1)
    assert tap.buffer is not None
    by_name = {tap.buffer.keys[key][0]: (tid, start, end) for key, tid, start, end in got}
    assert set(by_name) == {"actor_update", "critic_update", "reward"}
    assert by_name["actor_update"][0] == tids["actor_update"]
    assert by_name["critic_update"][0] == tids["critic_update"]
    assert by_name["reward"][0] == threading.get_native_id()
    actor, critic = by_name["actor_update"], by_name["critic_update"]
    assert actor[1] < critic[1] < actor[2] < critic[2]  # crossed
    assert tap.open_count == 0 and tap.open_threads == set()


def test_ranges_of_threads_that_ended_without_closing_are_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread that ends with a range open (a hook never called) keeps it only until many
    threads have been seen: then its ranges are dropped, their capture sinks' ranges ended."""
    monkeypatch.setattr(ranges, "_THREADS", 4)
    tap, _ = _tap()
    exited: list[str] = []

    class Sink:
        def range(self, name: str, cat: str = "user_annotation") -> Any:
            @contextmanager
            def cm() -> Iterator[None]:
                yield
                exited.append(name)

            return cm()

        def mark(self, name: str) -> None:
            pass

    tap.attach([Sink()])
    for i in range(4):
        t = threading.Thread(target=tap.open, args=("stage", f"left{i}", 1))
        t.start()
        t.join()
    assert tap.open_count == 4 and exited == []
    tap.open("stage", "alive", 1)  # a fifth thread with ranges: the ended ones are dropped
    assert tap.open_count == 1 and sorted(exited) == [f"left{i}" for i in range(4)]
    assert tap.close("stage", "alive") is not None
    tap.stop()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_records_its_own_thread_id() -> None:
    """The thread id is asked once per thread and kept: a forked child's one thread, which
    inherits the parent's kept id, records ranges under its own."""
    tap, got = _tap()
    tap.open("step", "ProfilerStep", 1)
    tap.close("step", "ProfilerStep")  # the parent's id is kept now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        try:
            tap.open("step", "ProfilerStep", 2)
            tap.close("step", "ProfilerStep")
            tap.drain(2)
            os.write(write, f"{got[-1][1]} {threading.get_native_id()}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        recorded, own = f.read().split()
    os.waitpid(pid, 0)
    tap.drain(1)
    assert got[0][1] == threading.get_native_id()
    assert recorded == own != str(threading.get_native_id())


def test_threads_that_ended_are_forgotten_even_with_nothing_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A thread keeps its empty list of open ranges while it may step again; a trainer that
    starts a thread per step holds lists for at most ``_THREADS`` threads, not one per step."""
    monkeypatch.setattr(ranges, "_THREADS", 4)
    tap, got = _tap()

    def step() -> None:
        tap.open("stage", "reward", 1)
        tap.close("stage", "reward")

    for _ in range(20):
        t = threading.Thread(target=step)
        t.start()
        t.join()
    tap.drain(1)
    assert len(got) == 20 and tap.open_count == 0 and tap.open_threads == set()
    assert len(tap._open) <= 4


def test_steps_pair_across_threads_and_a_stage_outside_the_step_is_not_its(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps are kept apart from stages: a thread ends its own innermost step, else the step
    another thread opened last (a hook-driven trainer); ``here`` names the thread's innermost
    stage only when it opened inside the thread's innermost step."""
    threads = _Threads(monkeypatch)
    tap, got = _tap()
    threads.now = 1
    tap.open("stage", "reward", None)  # outside any step
    tap.open("step", "ProfilerStep", 1)
    assert tap.here() == (True, None) and tap.in_step
    tap.open("stage", "actor_update", 1)
    assert tap.here() == (True, "actor_update")
    threads.now = 2
    assert tap.here() == (True, None)  # another thread: a step is open, no stage of its own
    tap.open("step", "ProfilerStep", 2)  # thread 2's own step
    threads.now = 3
    assert tap.close("step", "ProfilerStep") is not None  # none of its own: the latest, 2's
    assert got == [] and tap.open_count == 3
    tap.drain(2)
    assert [e[1] for e in got] == [2]
    threads.now = 1
    assert tap.close("stage", "actor_update") is not None
    assert tap.close("step", "ProfilerStep") is not None
    assert tap.close("step", "ProfilerStep") is None and not tap.in_step
    assert tap.here() == (False, "reward")
    tap.drain(1)
    assert [(e[1], e[2] < e[3]) for e in got] == [(2, True), (1, True), (1, True)]
    assert tap.open_count == 1 and tap.open_threads == {1}
