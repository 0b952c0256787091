"""The capture board's rules, on the class itself (no Ray): order, once per worker, ignoring."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mindspeed_prof.capture.control import Request, Status, Worker
from mindspeed_prof.jsonio import Json, JsonObject
from mindspeed_prof.ray import board as board_module
from mindspeed_prof.ray.board import ControlBoard


def post(board: ControlBoard, **values: object) -> Request:
    request = Request.new(60, **values)
    assert board.post(request.to_json()) == ""
    return request


def told(rank: int, role: str, step: int) -> JsonObject:
    return Worker(rank, role, step).to_json()


def ids(found: list[JsonObject]) -> list[Json]:
    return [r["id"] for r in found]


def test_each_worker_gets_each_request_once_in_order_restarts_included() -> None:
    board = ControlBoard()
    first, second = post(board, steps=1), post(board, steps=2, stage="actor_update")
    assert ids(board.poll(told(0, "actor", 5))) == [first.id, second.id]
    assert board.poll(told(0, "actor", 6)) == []  # asked again, or a restarted rank 0: nothing new
    assert ids(board.poll(told(1, "actor", 6))) == [first.id, second.id]
    assert ids(board.poll(told(0, "rollout", 6))) == [first.id, second.id]  # another role's rank 0


def test_ranks_and_role_select_workers() -> None:
    board = ControlBoard()
    request = post(board, steps=1, ranks=[1], role="actor", start_step=10)
    assert board.poll(told(0, "actor", 20)) == [] and board.poll(told(1, "critic", 20)) == []
    assert ids(board.poll(told(1, "actor", 9))) == [request.id]  # early: the scheduler waits


def test_a_request_no_worker_matches_is_ignored_once_every_worker_saw_it_twice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    board = ControlBoard()
    board.poll(told(0, "actor", 1))
    board.poll(told(1, "actor", 1))
    request = post(board, steps=1, ranks=[7])
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in (2, 3):
            board.poll(told(0, "actor", step))
        board.poll(told(1, "actor", 2))
        assert board.status(request.id)["ignored"] == ""  # rank 1 has seen it once only
        board.poll(told(1, "actor", 3))
        board.poll(told(0, "actor", 4))
    why = Status.parse(board.status(request.id)).ignored
    assert "ranks [7]" in why and "ranks [0, 1]" in why
    assert len(caplog.records) == 1 and board.logged() == [caplog.records[0].getMessage()]


def test_malformed_and_expired_requests_are_ignored_with_one_warning_each() -> None:
    board = ControlBoard()
    assert "steps=-1" in board.post({"id": "bad", "created": 1, "expires": 2, "steps": -1})
    assert "unknown field" in board.post({"id": "odd", "created": 1, "expires": 2, "x": 1})
    expired = Request.new(-1.0, steps=1)
    assert board.post(expired.to_json()) == ""
    for step in range(3):
        assert board.poll(told(0, "actor", step)) == []
    assert "expired" in Status.parse(board.status(expired.id)).ignored
    assert len(board.logged()) == 3


def test_a_worker_that_comes_after_the_request_keeps_it() -> None:
    board = ControlBoard()
    board.poll(told(0, "actor", 1))
    request = post(board, steps=1, ranks=[1])
    board.poll(told(0, "actor", 2))
    board.poll(told(2, "actor", 1))  # another worker starts: rank 1 may come too
    for step in (5, 6):
        board.poll(told(0, "actor", step))
        board.poll(told(2, "actor", step))
    assert board.status(request.id)["ignored"] == ""
    assert ids(board.poll(told(1, "actor", 7))) == [request.id]


def test_status_tells_the_command_who_is_still_working() -> None:
    board = ControlBoard()
    board.poll(told(0, "actor", 1))
    request = post(board, steps=1)
    assert board.status(request.id)["settled"] is False
    board.poll(told(0, "actor", 2))
    board.poll(told(1, "actor", 2))
    board.ack({"id": request.id, "rank": 0, "role": "actor", "status": "written", "files": []})
    status = Status.parse(board.status(request.id))
    assert status.settled and status.pending == [(1, "actor")]
    assert [a.rank for a in status.acks] == [0]
    assert [(w.rank, w.step) for w in status.workers] == [(0, 2), (1, 2)]
    board.withdraw(request.id)
    assert (
        board.poll(told(2, "actor", 3)) == []
    )  # withdrawn: a worker started later does not take it


class _Clock:
    """The board's ``time`` module: ``time()`` (the wall clock, seconds since the epoch) at
    ``now``, and ``monotonic()`` at ``tick``."""

    def __init__(self, now: float, tick: float = 50.0) -> None:
        self.now, self.tick = now, tick

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.tick


def at(board_time: float, monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock(board_time)
    monkeypatch.setattr(board_module, "time", clock)
    return clock


def request_at(
    ident: str, expires: float, created: float = 0.0, **values: object
) -> dict[str, object]:
    return {"id": ident, "created": created, "expires": expires, "steps": 1, **values}


def test_a_worker_is_known_as_it_told_at_the_boards_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The board keeps rank, role, step and rate as told, and its own clock as the time."""
    at(1000.0, monkeypatch)
    board = ControlBoard()
    board.poll(Worker(3, "rollout", 17, time=5.0, rate=2.5).to_json())
    board.poll(Worker(1, "actor", None, time=7.0, rate=0.5).to_json())
    assert board.workers() == [
        {"rank": 1, "role": "actor", "step": None, "time": 1000.0, "rate": 0.5},
        {"rank": 3, "role": "rollout", "step": 17, "time": 1000.0, "rate": 2.5},
    ]
    assert board.poll({"rank": 0, "colour": "red"}) == []  # not a worker: nothing, no entry
    assert len(board.workers()) == 2


def test_a_request_lives_its_timeout_from_its_posting_on_the_boards_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request's timeout (``expires - created``, both the command's clock) is counted on the
    board's monotonic clock from its posting: at its end it is still taken, after it dropped,
    and later requests are still handed out in the same look. The command's clock being a day
    off the board's changes nothing."""
    clock = at(1000.0, monkeypatch)
    board = ControlBoard()
    day = 86_400.0
    assert board.post(request_at("now", 1000.0 - day, created=1000.0 - day)) == ""  # 0 s
    assert ids(board.poll(told(0, "actor", 1))) == ["now"]  # at its end: still taken
    assert board.post(request_at("old", 0.5 + day, created=day)) == ""  # 0.5 s
    assert board.post(request_at("new", 1000.0 - day, created=-day)) == ""  # 1000 s
    clock.tick += 1.0
    assert ids(board.poll(told(1, "actor", 1))) == ["new"]
    assert board.status("old")["ignored"] == "expired (the command that posted it gave up)"
    assert board.status("now")["ignored"] == "expired (the command that posted it gave up)"
    assert board.status("new")["ignored"] == ""
    clock.tick += 999.0
    assert ids(board.poll(told(2, "actor", 1))) == ["new"]  # at its end
    clock.tick += 0.001
    assert ids(board.poll(told(3, "actor", 1))) == []
    assert board.status("new")["ignored"] == "expired (the command that posted it gave up)"


def test_a_request_for_other_workers_does_not_hide_the_next_one() -> None:
    board = ControlBoard()
    other = post(board, steps=1, ranks=[1])
    anyone = post(board, steps=1)
    assert ids(board.poll(told(0, "actor", 1))) == [anyone.id]
    assert ids(board.poll(told(0, "actor", 2))) == []
    assert ids(board.poll(told(1, "actor", 2))) == [other.id, anyone.id]
    # both were seen by every worker, the one a worker does not take included
    assert board.status(other.id)["settled"] and board.status(anyone.id)["settled"]


def test_a_malformed_post_is_ignored_under_its_id_cut_to_128_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    board = ControlBoard()
    long_id = "a" * 200
    not_a_dict: Any = [1, 2]
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        why = board.post({"id": long_id, "created": 1, "expires": 2})
        assert board.post(not_a_dict) == "malformed: a request is a JSON object, not list"
        assert board.post({"created": 1, "expires": 2}) == "malformed: field 'id' missing"
    assert why.startswith("malformed: id='aaa")
    assert board.status("a" * 128)["ignored"] == why
    # both are known as "?", and "?" was ignored once already: one warning for the two
    assert board.status("?")["ignored"] == "malformed: a request is a JSON object, not list"
    messages = [r.getMessage() for r in caplog.records]
    assert messages == board.logged()
    assert messages == [
        f"mindspeed-prof: ignoring capture request {'a' * 128}: {why}",
        "mindspeed-prof: ignoring capture request ?: malformed: a request is a "
        "JSON object, not list",
    ]


def test_the_ignore_reason_names_the_requests_and_the_jobs_workers() -> None:
    board = ControlBoard()
    board.poll(told(0, "actor", 1))
    board.poll(told(2, "rollout", 1))
    request = post(board, steps=1, ranks=[7], role="actor")
    for step in (2, 3):
        board.poll(told(0, "actor", step))
        board.poll(told(2, "rollout", step))
    assert board.status(request.id)["ignored"] == (
        "no worker matches (ranks [7], role actor); the job's workers: ranks [0, 2], roles "
        "['actor', 'rollout']"
    )
    assert board.poll(told(7, "actor", 4)) == []  # ignored: a late rank 7 does not take it
    assert board.status(request.id)["pending"] == []


def test_unknown_ids_and_bad_acks_are_no_errors() -> None:
    """The board is reached from outside the job: whatever it is sent, it answers."""
    board = ControlBoard()
    request = post(board, steps=1)
    board.ack({"id": request.id, "rank": "zero"})  # not an ack
    board.ack({"id": "gone", "rank": 0, "role": "actor", "status": "written"})  # no such request
    board.withdraw("gone")
    empty = {"acks": [], "ignored": "", "pending": [], "settled": False, "workers": []}
    assert board.status("gone") == empty
    board.poll(told(0, "actor", 1))
    assert board.status("gone")["settled"] is False
    assert board.status("gone")["workers"] == board.workers()
    assert board.status(request.id)["acks"] == []


def test_opening_the_board_twice_in_a_job_keeps_the_first(ray_cluster: Any) -> None:
    """A driver that opens the board again (the demo did, then a library call) gets the board
    it opened: Ray stops an actor when its owner's handle goes, so replacing it killed it."""
    import gc

    from mindspeed_prof.ray import open_board

    first = open_board()
    again = open_board()
    assert again is first
    del first, again
    gc.collect()
    assert isinstance(ray_cluster.get(open_board().workers.remote(), timeout=60), list)
