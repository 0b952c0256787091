"""On-demand capture through Ray: a named actor, the job's "board", that its workers poll.

The driver opens the board (``mindspeed_prof.ray.open_board()``) as the named actor
``board-<Ray job id>`` in the namespace ``mindspeed_prof``; it lives as long as the driver.
``mindspeed-prof capture --ray`` posts a request on it; each worker's on-demand check (time-gated
like the file route's) asks it for requests without waiting for the answer, which it picks up at
its next check, and reports back where it wrote. The board hands each request to each (rank,
role) once, so a restarted worker does not apply it again. No shared filesystem is needed.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time
from typing import Any

from mindspeed_prof.capture.control import Request

__all__ = ["NAMESPACE", "BoardLink", "ControlBoard", "board_name"]

log = logging.getLogger("mindspeed_prof")

NAMESPACE = "mindspeed_prof"
_LOOKUP_EVERY_S = 30.0  # a worker without a board looks for one again after this long


def board_name(job_id: str) -> str:
    """The board's actor name for the Ray job ``job_id`` (hex, as ``ray list jobs`` shows)."""
    return f"board-{job_id}"


class ControlBoard:
    """The board (a Ray actor; ``ray.remote`` is applied where it is opened).

    Requests are kept in the order posted. A request none of the job's workers matches is
    ignored, with one warning in the job's log, once every worker that asked before it was
    posted has seen it twice and no other has come since (a worker that never asked is unknown
    here); an expired one likewise when a worker next asks.
    """

    def __init__(self) -> None:
        self._requests: dict[str, Request] = {}  # insertion order: the order posted
        self._delivered: set[tuple[str, int, str]] = set()
        self._seen: dict[str, dict[tuple[int, str], int]] = {}  # times asked since posting
        self._posted: dict[str, int] = {}  # when, in events seen by this board
        self._acks: dict[str, dict[tuple[int, str], dict[str, Any]]] = {}
        self._workers: dict[tuple[int, str], int] = {}  # (rank, role): when it first asked
        self._events = itertools.count()
        self._ignored: dict[str, str] = {}
        self._warnings: list[str] = []

    def post(self, data: dict[str, Any]) -> str:
        """Take a request (JSON-like); "" when accepted, else why it is ignored."""
        try:
            request = Request.parse(data)
        except (ValueError, TypeError) as err:
            ident = data.get("id", "?") if isinstance(data, dict) else "?"
            return self._ignore(str(ident), f"malformed: {err}")
        self._requests[request.id] = request
        self._seen[request.id] = {}
        self._posted[request.id] = next(self._events)
        self._acks[request.id] = {}
        return ""

    def poll(self, rank: int, role: str, step: int | None) -> list[dict[str, Any]]:
        """The requests for this worker it has not had yet and that may start at ``step``."""
        now = time.time()
        me = (rank, role)
        if me not in self._workers:
            self._workers[me] = next(self._events)
        found = []
        for request in list(self._requests.values()):
            if request.expires < now:
                self._drop(request.id, "expired (the command that posted it gave up)")
                continue
            seen = self._seen[request.id]
            seen[me] = seen.get(me, 0) + 1
            key = (request.id, rank, role)
            if key in self._delivered or not request.for_worker(rank, role):
                continue
            if request.start_step is not None and (step is None or step < request.start_step):
                continue
            self._delivered.add(key)
            found.append(request.to_json())
        for request in list(self._requests.values()):
            self._check_matched(request)
        return found

    def ack(self, ack: dict[str, Any]) -> None:
        """What a worker did about a request: status, host, node, save root and files."""
        acks = self._acks.get(str(ack.get("id")))
        if acks is not None:
            acks[(int(ack["rank"]), str(ack["role"]))] = ack

    def status(self, ident: str) -> dict[str, Any]:
        """The acks so far; ``ignored`` (why, or ""); ``pending``: the job's workers the
        request is for that have not finished; ``settled``: every worker has seen it."""
        acks = self._acks.get(ident, {})
        request = self._requests.get(ident)
        workers = set(self._workers)
        pending = [] if request is None else sorted(
            w for w in workers if request.for_worker(*w)
            and acks.get(w, {}).get("status") not in ("written", "failed"))
        seen = self._seen.get(ident, {})
        return {"acks": list(acks.values()), "ignored": self._ignored.get(ident, ""),
                "pending": pending, "settled": bool(workers) and workers <= set(seen),
                "workers": sorted(workers)}

    def withdraw(self, ident: str) -> None:
        """The command gave up or is done: no worker takes the request from now on."""
        self._requests.pop(ident, None)

    def _check_matched(self, request: Request) -> None:
        """Ignore ``request`` if it names no worker of the job, as far as the board can know."""
        workers, seen = self._workers, self._seen[request.id]
        if any(request.for_worker(*w) for w in workers):
            return
        posted = self._posted[request.id]
        if any(seen.get(w, 0) < 2 or first >= posted for w, first in workers.items()):
            return  # a worker has not seen it twice, or came after it: others may come
        ranks = sorted({r for r, _ in workers})
        roles = sorted({role for _, role in workers})
        self._drop(request.id, f"no worker matches (ranks {request.ranks}, role "
                   f"{request.role}); the job's workers: ranks {ranks}, roles {roles}")

    def _drop(self, ident: str, why: str) -> None:
        self._requests.pop(ident, None)
        self._ignore(ident, why)

    def _ignore(self, ident: str, why: str) -> str:
        if ident not in self._ignored:
            message = f"mindspeed-prof: ignoring capture request {ident}: {why}"
            self._ignored[ident] = why
            self._warnings.append(message)
            log.warning(message)
        return why

    def logged(self) -> list[str]:
        """The warnings this board wrote to the job's log."""
        return list(self._warnings)


class BoardLink:
    """A worker's side: asks the board without waiting, and takes the answer at the next check.

    Its faults never reach training: a board that is gone is one warning, then no more asking.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._board: Any = None
        self._pending: Any = None  # the ObjectRef of the question in flight
        self._lookup_at = 0.0
        self._gone = False
        self._node = ""

    @classmethod
    def here(cls) -> BoardLink | None:
        """A link for this process when it is a Ray actor (a job's worker), else None.

        Ray is not imported for a process that has not imported it.
        """
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return None
        context = ray.get_runtime_context()
        if context.get_actor_id() is None:
            return None  # the driver, or a task: they do not run training steps
        link = cls(board_name(context.get_job_id()))
        link._node = context.get_node_id()
        return link

    def poll(self, rank: int, role: str, step: int | None) -> list[dict[str, Any]]:
        """The answer to the previous question (requests as JSON), and a new question asked."""
        if self._gone:
            return []
        import ray

        board = self._find()
        if board is None:
            return []
        found: list[dict[str, Any]] = []
        if self._pending is not None:
            ready, _ = ray.wait([self._pending], timeout=0)
            if not ready:
                return []  # the board is slow: asked again once it answered
            self._pending = None
            try:
                found = ray.get(ready[0])
            except ray.exceptions.RayError as err:
                self._lost(err)
                return []
        try:
            self._pending = board.poll.remote(rank, role, step)
        except ray.exceptions.RayError as err:
            self._lost(err)
        return found

    def ack(self, values: dict[str, Any]) -> None:
        """Tell the board (and so the command) what this worker did; no waiting."""
        if self._board is None or self._gone:
            return
        try:
            self._board.ack.remote({**values, "node": self._node})
        except Exception as err:
            self._lost(err)

    def _find(self) -> Any:
        if self._board is not None:
            return self._board
        now = time.monotonic()
        if now < self._lookup_at:
            return None
        self._lookup_at = now + _LOOKUP_EVERY_S
        import ray

        try:
            self._board = ray.get_actor(self.name, namespace=NAMESPACE)
        except ValueError:
            return None  # the driver opened no board (yet)
        return self._board

    def _lost(self, err: Exception) -> None:
        self._gone, self._board, self._pending = True, None, None
        log.warning("mindspeed-prof: the capture board %s is gone (%s); on-demand capture "
                    "through Ray is off for this worker, training goes on", self.name,
                    str(err).splitlines()[0] if str(err) else type(err).__name__)
