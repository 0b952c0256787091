"""The command's side of any channel: the start step it plans, when a request is finished."""

from __future__ import annotations

import pytest

from mindspeed_prof.capture.control import (
    Ack,
    Request,
    Status,
    Worker,
    start_step,
    wait,
    wait_for_workers,
)
from mindspeed_prof.capture.control import channel as channel_module


def test_the_start_step_is_ahead_of_every_worker_carried_forward_at_its_rate() -> None:
    now = 100.0
    workers = [
        Worker(0, "actor", 1412, time=99.0, rate=20.0),  # 1412 + 20 * 3.5 = 1482
        Worker(1, "actor", 1489, time=100.0, rate=0.0),  # told now, rate unknown
        Worker(2, "actor", None, time=100.0),
    ]
    assert start_step(workers, now, lead_s=2.5) == 1490
    assert start_step(workers[:1], now, lead_s=2.5) == 1483
    assert start_step([workers[2]], now) is None and start_step([], now) is None
    slow = [Worker(0, "actor", 10, time=100.0, rate=0.1)]  # 10 s a step
    assert start_step(slow, now, lead_s=2.5) == 11


def test_the_start_step_carries_forward_less_than_a_second_and_never_back() -> None:
    now = 100.0
    fast = [Worker(0, "actor", 10, time=100.0, rate=10.0)]
    assert start_step(fast, now, lead_s=0.5) == 16  # 10 + 10 * 0.5, then the next one
    ahead = [Worker(0, "actor", 10, time=103.0, rate=10.0)]  # its clock 3 s ahead of ours
    assert start_step(ahead, now, lead_s=0.5) == 11  # not carried back: 10, then the next one


def test_a_request_is_finished_when_its_ranks_are_done_or_all_is_settled() -> None:
    request = Request.new(60, steps=1, ranks=[0, 1])
    done = Ack(id=request.id, rank=0, role="actor", status="written")
    queued = Ack(id=request.id, rank=1, role="actor", status="queued")
    assert not Status(acks=[done, queued], settled=True).finished(request)
    assert Status(acks=[done, Ack(id=request.id, rank=1, role="actor", status="failed")]).finished(
        request
    )
    anyone = Request.new(60, steps=1)
    assert not Status(acks=[done]).finished(anyone)
    assert not Status(acks=[done], settled=True, pending=[(1, "actor")]).finished(anyone)
    assert Status(acks=[done], settled=True).finished(anyone)
    assert Status(ignored="no worker matches").finished(anyone)
    assert not Status(settled=True).finished(anyone)  # nobody answered yet


class _Clock:
    """``channel``'s ``time`` module: ``monotonic`` reads ``now``; ``sleep`` moves it on by
    ``step`` (a sleep that takes longer than asked), or else by the seconds asked."""

    def __init__(self, now: float = 50.0, step: float | None = None) -> None:
        self.now, self.step = now, step
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        """The command's wall clock: 1,000,000 s past its monotonic one."""
        return self.now + 1e6

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds if self.step is None else self.step
        assert len(self.sleeps) < 1000, "the wait does not stop"


def test_waiting_for_workers_keeps_those_the_request_is_for_that_told_while_it_looked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Workers whose word changed after the first look, or who appeared, the request is for,
    each stamped with the command's own clock when it was seen: their clocks (a day ahead,
    an hour behind) are never compared with it."""
    clock = _Clock()
    monkeypatch.setattr(channel_module, "time", clock)
    request = Request.new(60, steps=1, role="actor")
    stale = Worker(3, "actor", 7, time=5.0)  # there before, never told again: not counted
    looks = [
        [stale, Worker(0, "actor", 4, time=86_400.0)],
        [stale, Worker(0, "actor", 4, time=86_400.0)],
        [stale, Worker(0, "actor", 5, time=86_401.0), Worker(1, "critic", 5, time=9.0)],
        [
            stale,
            Worker(0, "actor", 5, time=86_401.0),
            Worker(1, "critic", 5, time=9.0),
            Worker(2, "actor", 2, time=-3_600.0, rate=4.0),
        ],
    ]
    channel = _Scripted(looks)
    found = wait_for_workers(channel, request, grace_s=5.0)
    assert found == [
        Worker(0, "actor", 5, time=50.5 + 1e6),
        Worker(2, "actor", 2, time=50.75 + 1e6, rate=4.0),
    ]
    assert wait_for_workers(_Scripted([[]]), request, grace_s=0.3) == []


class _Scripted:
    """A channel whose ``workers`` at its n-th look are ``looks[n]`` (the last one after)."""

    def __init__(self, looks: list[list[Worker]]) -> None:
        self.looks_at, self.looks = looks, 0

    def open(self) -> None: ...

    def workers(self) -> list[Worker]:
        self.looks += 1
        return self.looks_at[min(self.looks, len(self.looks_at)) - 1]

    def post(self, request: Request) -> str:
        return ""

    def status(self, request: Request) -> Status:
        return Status()

    def close(self, request: Request) -> None: ...


class _Looks:
    """A channel whose request is finished from its ``finished_at``-th look on."""

    def __init__(self, finished_at: int | None) -> None:
        self.finished_at, self.looks = finished_at, 0

    def open(self) -> None: ...

    def workers(self) -> list[Worker]:
        return []

    def post(self, request: Request) -> str:
        return ""

    def status(self, request: Request) -> Status:
        self.looks += 1
        done = self.finished_at is not None and self.looks >= self.finished_at
        return Status(ignored="gone" if done else "")

    def close(self, request: Request) -> None: ...


def test_wait_looks_every_quarter_second_until_finished_or_the_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(channel_module, "time", clock)
    request = Request.new(60, steps=1)
    never = _Looks(None)
    assert wait(never, request, 1.0).ignored == ""
    assert never.looks == 5 and clock.sleeps == [0.25] * 4  # at 0, .25, .5, .75 and 1 s
    assert clock.now == 51.0
    third = _Looks(3)
    assert wait(third, request, 10.0).ignored == "gone"
    assert third.looks == 3 and clock.now == 51.5
    first = _Looks(1)
    assert wait(first, request, 10.0).ignored == "gone"
    assert first.looks == 1 and clock.now == 51.5
    late = _Looks(None)
    assert wait(late, request, 0.0).ignored == "" and late.looks == 1  # one look, then time up


class _Appear:
    """A channel whose ``workers`` are told from its ``first``-th look on."""

    def __init__(self, workers: list[Worker], first: int) -> None:
        self._workers, self.first, self.looks = workers, first, 0

    def open(self) -> None: ...

    def workers(self) -> list[Worker]:
        self.looks += 1
        return self._workers if self.looks >= self.first else []

    def post(self, request: Request) -> str:
        return ""

    def status(self, request: Request) -> Status:
        return Status()

    def close(self, request: Request) -> None: ...


def test_waiting_for_workers_looks_1_2_s_more_after_the_first_or_up_to_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = [Worker(0, "actor", 5, time=3.0), Worker(1, "actor", 6, time=1.0)]
    others = [Worker(1, "critic", 5, time=3.0), Worker(2, "actor", 5, time=3.0)]
    request = Request.new(60, steps=1, ranks=[0, 1], role="actor")
    clock = _Clock(now=50.0)
    monkeypatch.setattr(channel_module, "time", clock)
    channel = _Appear(others[:1] + kept + others[1:], first=3)
    assert wait_for_workers(channel, request, grace_s=5.0) == [
        Worker(0, "actor", 5, time=50.5 + 1e6),
        Worker(1, "actor", 6, time=50.5 + 1e6),
    ]
    # the first look (50 s) sees nobody, they appear at the third (50.5 s), then looks go on
    # up to 1.2 s later: 51.75 s
    assert channel.looks == 8 and clock.sleeps == [0.25] * 7 and clock.now == 51.75
    clock.now, clock.sleeps = 50.0, []
    nobody = _Appear([], first=1)
    assert wait_for_workers(nobody, request, grace_s=1.0) == []
    assert nobody.looks == 5 and clock.now == 51.0  # 50, 50.25, ... and 51 s: the grace is up


def test_waiting_for_workers_stops_1_2_s_after_the_first_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock(now=-0.35, step=0.6)  # looks at -0.35, 0.25, 0.85, 1.45 s
    monkeypatch.setattr(channel_module, "time", clock)
    request = Request.new(60, steps=1)
    channel = _Appear([Worker(0, "actor", 5, time=10.0)], first=2)
    assert wait_for_workers(channel, request, grace_s=60.0) == [
        Worker(0, "actor", 5, time=0.25 + 1e6)
    ]
    assert channel.looks == 4  # first seen at 0.25 s, done at 1.45 s: 1.2 s apart to the bit
