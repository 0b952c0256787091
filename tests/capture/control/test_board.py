"""The capture board's rules, on the class itself (no Ray): order, once per worker, ignoring."""

from __future__ import annotations

import logging
from dataclasses import asdict

import pytest

from mindspeed_prof.capture.control import Request, Worker
from mindspeed_prof.capture.control.board import ControlBoard


def post(board: ControlBoard, **values: object) -> Request:
    request = Request.new(60, **values)
    assert board.post(request.to_json()) == ""
    return request


def told(rank: int, role: str, step: int) -> dict[str, object]:
    return asdict(Worker(rank, role, step))


def ids(found: list[dict[str, object]]) -> list[object]:
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
        caplog: pytest.LogCaptureFixture) -> None:
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
    why = board.status(request.id)["ignored"]
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
    assert "expired" in board.status(expired.id)["ignored"]
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
    status = board.status(request.id)
    assert status["settled"] and status["pending"] == [(1, "actor")]
    assert [a["rank"] for a in status["acks"]] == [0]
    assert [(w["rank"], w["step"]) for w in status["workers"]] == [(0, 2), (1, 2)]
    board.withdraw(request.id)
    assert board.poll(told(2, "actor", 3)) == []  # withdrawn: a worker started later does not take it
