"""``mindspeed-prof capture --ray``: post a request on a Ray job's board, wait for the workers."""

from __future__ import annotations

import sys
import time
from typing import Any

from mindspeed_prof.capture.board import NAMESPACE, board_name
from mindspeed_prof.capture.control import Request
from mindspeed_prof.cli.capture import EXIT_NOT_RUNNING, report

__all__ = ["capture_through_ray", "find_board"]

_DONE = ("written", "failed")
_CALL_TIMEOUT_S = 30.0  # one call to the board; it answers in milliseconds when alive


class NotRunning(Exception):
    """No job to ask; the message is one line."""


def find_board(job: str | None) -> Any:
    """The capture board of ``job`` (a Ray job id), or of the one job that has a board."""
    import ray

    names = sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                   if a["namespace"] == NAMESPACE and a["name"].startswith(board_name("")))
    if job is not None:
        if board_name(job) not in names:
            raise NotRunning(f"no capture board for Ray job {job} (boards: "
                             f"{', '.join(names) or 'none'})")
        names = [board_name(job)]
    if not names:
        raise NotRunning("no job on this Ray cluster has a capture board: is it running, and "
                         "did its driver call mindspeed_prof.ray.open_board()?")
    if len(names) > 1:
        jobs = ", ".join(n.removeprefix(board_name("")) for n in names)
        raise NotRunning(f"{len(names)} jobs have a capture board ({jobs}): choose one with "
                         "--job ID")
    return ray.get_actor(names[0], namespace=NAMESPACE)


def capture_through_ray(address: str, job: str | None, request: Request,
                        timeout: float) -> int:
    """Post ``request`` on the job's board, wait for the workers' reports, print them."""
    import ray

    from mindspeed_prof.analysis.cluster import Unreachable, connect

    try:
        connect(address)
        board = find_board(job)
        why = ray.get(board.post.remote(request.to_json()), timeout=_CALL_TIMEOUT_S)
    except (Unreachable, NotRunning) as err:
        return _fail(str(err))
    except ray.exceptions.RayError as err:  # the job ended meanwhile
        return _fail(f"the job's capture board did not answer ({type(err).__name__})")
    if why:
        return _fail(f"request {request.id} ignored: {why}")
    print(f"request {request.id}: waiting up to {timeout:g} s for the job's workers (each "
          "asks its board at most once a second, at a step start)", file=sys.stderr)
    try:
        status = _wait(board, request, timeout)
    except ray.exceptions.RayError as err:
        return _fail(f"the job's capture board is gone ({type(err).__name__}): the job ended?")
    finally:
        try:  # a worker started later must not take it (and waited for: this process ends)
            ray.get(board.withdraw.remote(request.id), timeout=_CALL_TIMEOUT_S)
        except ray.exceptions.RayError:
            pass
    if status["ignored"]:
        return _fail(f"request {request.id} ignored: {status['ignored']}")
    if not status["acks"]:
        workers = len(status["workers"])
        return _fail(f"no worker took request {request.id} within {timeout:g} s ({workers} "
                     "workers asked the board lately: are they running steps, with on_demand: "
                     "true?)")
    return report(request, status["acks"], timeout, "the job's workers report on its board",
                  ray=address)


def _wait(board: Any, request: Request, timeout: float) -> dict[str, Any]:
    """The board's status once every worker the request is for has finished, it is ignored,
    or at the timeout."""
    import ray

    deadline = time.monotonic() + timeout
    while True:
        status: dict[str, Any] = ray.get(board.status.remote(request.id),
                                         timeout=_CALL_TIMEOUT_S)
        acks = status["acks"]
        if status["ignored"]:
            return status
        finished = all(a["status"] in _DONE for a in acks)
        if acks and finished and status["settled"] and not status["pending"]:
            return status
        if acks and finished and request.ranks is not None \
                and {a["rank"] for a in acks} >= set(request.ranks):
            return status  # every rank asked for is done, whoever else has not asked yet
        if time.monotonic() >= deadline:
            return status
        time.sleep(0.25)


def _fail(message: str) -> int:
    print(f"mindspeed-prof: capture: {message}", file=sys.stderr)
    return EXIT_NOT_RUNNING
