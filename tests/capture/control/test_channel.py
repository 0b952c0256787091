"""The command's side of any channel: the start step it plans, when a request is finished."""

from __future__ import annotations

from mindspeed_prof.capture.control import Ack, Request, Status, Worker, start_step, wait_for_workers


def test_the_start_step_is_ahead_of_every_worker_carried_forward_at_its_rate() -> None:
    now = 100.0
    workers = [Worker(0, "actor", 1412, time=99.0, rate=20.0),  # 1412 + 20 * 3.5 = 1482
               Worker(1, "actor", 1489, time=100.0, rate=0.0),  # told now, rate unknown
               Worker(2, "actor", None, time=100.0)]
    assert start_step(workers, now, lead_s=2.5) == 1490
    assert start_step(workers[:1], now, lead_s=2.5) == 1483
    assert start_step([workers[2]], now) is None and start_step([], now) is None
    slow = [Worker(0, "actor", 10, time=100.0, rate=0.1)]  # 10 s a step
    assert start_step(slow, now, lead_s=2.5) == 11


def test_a_request_is_finished_when_its_ranks_are_done_or_all_is_settled() -> None:
    request = Request.new(60, steps=1, ranks=[0, 1])
    done = Ack(id=request.id, rank=0, role="actor", status="written")
    queued = Ack(id=request.id, rank=1, role="actor", status="queued")
    assert not Status(acks=[done, queued], settled=True).finished(request)
    assert Status(acks=[done, Ack(id=request.id, rank=1, role="actor", status="failed")]
                  ).finished(request)
    anyone = Request.new(60, steps=1)
    assert not Status(acks=[done]).finished(anyone)
    assert not Status(acks=[done], settled=True, pending=[(1, "actor")]).finished(anyone)
    assert Status(acks=[done], settled=True).finished(anyone)
    assert Status(ignored="no worker matches").finished(anyone)
    assert not Status(settled=True).finished(anyone)  # nobody answered yet


class _Told:
    """A channel whose workers are told once the command has looked twice."""

    def __init__(self, workers: list[Worker]) -> None:
        self._workers, self.looks = workers, 0

    def open(self) -> None: ...

    def workers(self) -> list[Worker]:
        self.looks += 1
        return self._workers if self.looks > 2 else []

    def post(self, request: Request) -> str:
        return ""

    def status(self, request: Request) -> Status:
        return Status()

    def close(self, request: Request) -> None: ...


def test_waiting_for_workers_keeps_those_the_request_is_for_and_told_lately() -> None:
    request = Request.new(60, steps=1, role="actor")
    channel = _Told([Worker(0, "actor", 5, time=10.0), Worker(1, "critic", 5, time=10.0),
                     Worker(2, "actor", 4, time=1.0)])
    found = wait_for_workers(channel, request, since=5.0, grace_s=5.0)
    assert [w.rank for w in found] == [0] and channel.looks >= 3
    assert wait_for_workers(_Told([]), request, since=0.0, grace_s=0.3) == []
