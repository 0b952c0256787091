"""On-demand capture through Ray: a named actor, the job's "board", that its workers poll.

The driver opens the board (``mindspeed_prof.ray.open_board()``) as the named actor
``board-<Ray job id>`` in the namespace ``mindspeed_prof``; it lives as long as the driver.
``mindspeed-prof capture --ray`` posts a request on it; each worker's on-demand look (time-gated
like the folder's) asks it for requests without waiting for the answer, which it picks up at its
next look, and reports back where it wrote. ``Board`` is the carrier (``capture.control``'s
``Carrier``, both its sides), registered on import as every Ray actor's request source. The board
hands each request to each (rank, role) once, so a restarted worker does not apply it again, and
knows the step every worker was at. No shared filesystem is needed.

What travels through Ray is JSON-like data (each record's ``to_json``), parsed again on each
side (its ``parse``): a board is reached from outside the job.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time
from typing import TYPE_CHECKING

from mindspeed_prof.capture import plugins
from mindspeed_prof.capture.control.channel import Gone, NotRunning, Status, Worker
from mindspeed_prof.capture.control.request import Ack, Request
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.formats.shell import quote
from mindspeed_prof.jsonio import Json, JsonObject

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.actor import ActorHandle

__all__ = ["NAMESPACE", "Board", "ControlBoard", "board_name", "find_board", "open_board"]

log = logging.getLogger("mindspeed_prof")

NAMESPACE = "mindspeed_prof"
_LOOKUP_EVERY_S = 30.0  # a worker without a board looks for one again after this long
_CALL_TIMEOUT_S = 30.0  # one call of the command's to the board; it answers in ms when alive


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
        self._deadline: dict[str, float] = {}  # the board's monotonic clock
        self._acks: dict[str, dict[tuple[int, str], Ack]] = {}
        self._workers: dict[tuple[int, str], int] = {}  # (rank, role): when it first asked
        self._told: dict[tuple[int, str], Worker] = {}  # where each worker last said it was
        self._events = itertools.count()
        self._ignored: dict[str, str] = {}
        self._warnings: list[str] = []

    def post(self, data: object) -> str:
        """Take a request (JSON-like); "" when accepted, else why it is ignored."""
        try:
            request = Request.parse(data)
        except (ValueError, TypeError) as err:
            ident = data.get("id", "?") if isinstance(data, dict) else "?"
            return self._ignore(str(ident)[:128], f"malformed: {err}")
        self._requests[request.id] = request
        # lives as long as the command said (its own clock's difference), on the board's clock
        self._deadline[request.id] = time.monotonic() + request.expires - request.created
        self._seen[request.id] = {}
        self._posted[request.id] = next(self._events)
        self._acks[request.id] = {}
        return ""

    def poll(self, worker: object) -> list[JsonObject]:
        """The requests for this worker (``Worker.to_json``) it has not had yet."""
        now, clock = time.time(), time.monotonic()
        told = Worker.parse(worker)
        if told is None:
            return []
        rank, role = told.rank, told.role
        me = (rank, role)
        if me not in self._workers:
            self._workers[me] = next(self._events)
        self._told[me] = Worker(rank, role, told.step, now, told.rate)
        found = []
        for request in list(self._requests.values()):
            if clock > self._deadline[request.id]:
                self._drop(request.id, "expired (the command that posted it gave up)")
                continue
            seen = self._seen[request.id]
            seen[me] = seen.get(me, 0) + 1
            key = (request.id, rank, role)
            if key in self._delivered or not request.for_worker(rank, role):
                continue
            self._delivered.add(key)
            found.append(request.to_json())
        for request in list(self._requests.values()):
            self._check_matched(request)
        return found

    def ack(self, data: object) -> None:
        """What a worker did about a request: status, host, node, save root and files."""
        ack = Ack.parse(data)
        acks = self._acks.get(ack.id) if ack is not None else None
        if ack is not None and acks is not None:
            acks[(ack.rank, ack.role)] = ack

    def workers(self) -> list[JsonObject]:
        """Every worker that asked, with the step it was at then."""
        return [w.to_json() for w in self._known()]

    def _known(self) -> list[Worker]:
        return [w for _, w in sorted(self._told.items())]

    def status(self, ident: str) -> JsonObject:
        """The acks so far; ``ignored`` (why, or ""); ``pending``: the job's workers the
        request is for that have not finished; ``settled``: every worker has seen it."""
        acks = self._acks.get(ident, {})
        request = self._requests.get(ident)
        workers = set(self._workers)
        pending = (
            []
            if request is None
            else sorted(
                w for w in workers if request.for_worker(*w) and not (w in acks and acks[w].done)
            )
        )
        seen = self._seen.get(ident, {})
        return Status(
            acks=list(acks.values()),
            ignored=self._ignored.get(ident, ""),
            pending=pending,
            settled=bool(workers) and workers <= set(seen),
            workers=self._known(),
        ).to_json()

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
        self._drop(
            request.id,
            f"no worker matches (ranks {request.ranks}, role "
            f"{request.role}); the job's workers: ranks {ranks}, roles {roles}",
        )

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


#: The board this driver opened, for which cluster and job: Ray stops an actor once its owner's
#: handles are gone (one got by name does not keep it), so a second open returns the first.
_board: ActorHandle | None = None
_opened: tuple[str, str] | None = None


def open_board() -> ActorHandle:
    """On the driver, after ``ray.init``: this job's capture board, the actor
    ``board-<job id>`` in the namespace ``mindspeed_prof`` (opened once; it lives as long as
    the driver). Workers' on-demand checks find it by that name; ``capture --ray`` posts on it."""
    import ray

    global _board, _opened
    context = ray.get_runtime_context()
    here = (str(context.gcs_address), job := context.get_job_id())
    if _board is not None and _opened == here:
        return _board
    actor = ray.remote(num_cpus=0)(ControlBoard)
    _board = actor.options(name=board_name(job), namespace=NAMESPACE, get_if_exists=True).remote()
    _opened = here
    return _board


class Board:
    """The carrier through a job's board. The worker's side (``poll``, ``ack``) asks the board
    without waiting and takes the answer at the next look; its faults never reach training (a
    board that is gone is one warning, then no more asking). The command's side (``open``,
    ``workers``, ``post``, ``status``, ``close``), from ``reach``: Ray's errors are ``Gone``."""

    def __init__(
        self, name: str, node: str = "", board: ActorHandle | None = None, address: str = ""
    ) -> None:
        self.name = name
        self._board = board
        self._pending: ObjectRef[list[Json]] | None = None  # the worker's question in flight
        self._lookup_at = 0.0
        self._gone = False
        self._node = node
        self.address = address  # the command's: the cluster it reached

    @classmethod
    def here(cls) -> Board | None:
        """The worker's side for this process when it is a Ray actor (a job's worker), else
        None. Ray is not imported, nor started, for a process that has not done so itself."""
        ray = sys.modules.get("ray")
        if ray is None or not ray.is_initialized():
            return None
        context = ray.get_runtime_context()
        if context.get_actor_id() is None:
            return None  # the driver, or a task: they do not run training steps
        return cls(board_name(context.get_job_id()), context.get_node_id())

    @classmethod
    def reach(cls, address: str, job: str | None) -> Board:
        """The command's side: the board of ``job`` (or of the one job that has a board) on the
        cluster at ``address`` ("auto": this machine's); ``NotRunning`` when there is none."""
        from mindspeed_prof.ray.link import Unreachable, connect

        try:
            connect(address)
        except Unreachable as err:
            raise NotRunning(str(err)) from None
        import ray

        name = find_board(job)
        return cls(name, board=ray.get_actor(name, namespace=NAMESPACE), address=address)

    # -- the worker's side ----------------------------------------------------------------
    def poll(self, worker: Worker) -> list[Request]:
        """The answer to the previous question, and a new question asked."""
        if self._gone:
            return []
        import ray

        board = self._find()
        if board is None:
            return []
        found: object = []
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
            self._pending = board.poll.remote(worker.to_json())
        except ray.exceptions.RayError as err:
            self._lost(err)
        out = []
        for data in found if isinstance(found, list) else []:
            try:  # the board checked it; a board is reachable from outside, so again here
                out.append(Request.parse(data))
            except (ValueError, TypeError) as err:
                log.warning("mindspeed-prof: ignoring capture request from the board: %s", err)
        return out

    def ack(self, request: Request, ack: Ack) -> None:
        """Tell the board (and so the command) what this worker did; no waiting."""
        if self._board is None or self._gone:
            return
        try:
            self._board.ack.remote({**ack.to_json(), "node": self._node})
        except Exception as err:
            self._lost(err)

    def _find(self) -> ActorHandle | None:
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
        log.warning(
            "mindspeed-prof: the capture board %s is gone (%s); on-demand capture "
            "through Ray is off for this worker, training goes on",
            self.name,
            str(err).splitlines()[0] if str(err) else type(err).__name__,
        )

    # -- the command's side ---------------------------------------------------------------
    where = "each asks its board at most once a second, at a step start"
    hint = "Are its workers running steps, with on_demand: true?"

    def _call(self, method: str, *args: Json) -> object:
        import ray

        try:
            answer: object = ray.get(
                getattr(self._board, method).remote(*args), timeout=_CALL_TIMEOUT_S
            )
        except ray.exceptions.RayError as err:
            raise Gone(
                f"the job's capture board is gone ({type(err).__name__}): the job ended?"
            ) from None
        return answer

    def open(self) -> None:
        """Nothing to do: every worker tells the board its step at each look."""

    def absent(self, request: Request) -> str:
        return ""  # ``reach`` found the board: its job runs

    def workers(self) -> list[Worker]:
        found = self._call("workers")
        told = (Worker.parse(w) for w in (found if isinstance(found, list) else []))
        return [w for w in told if w is not None]

    def post(self, request: Request) -> str:
        return str(self._call("post", request.to_json()))

    def status(self, request: Request) -> Status:
        return Status.parse(self._call("status", request.id))

    def close(self, request: Request) -> None:
        try:  # a worker started later must not take it
            self._call("withdraw", request.id)
        except Gone:
            pass

    def analyse_option(self, written: list[Ack]) -> str:
        """``--ray`` where the captures sit on several nodes, or on one that is not this
        machine: ``analyse`` then reads them where they lie."""
        remote = len({a.node for a in written}) > 1 or any(
            a.host not in ("", host_name()) for a in written
        )
        if not remote:
            return ""
        return " --ray" if self.address == "auto" else f" --ray {quote(self.address)}"


plugins.add_source("ray", Board.here)


def find_board(job: str | None) -> str:
    """The name of the capture board of ``job`` (a Ray job id), or of the one job that has a
    board; ``NotRunning`` when there is none, or several."""
    import ray

    names = sorted(
        a["name"]
        for a in ray.util.list_named_actors(all_namespaces=True)
        if a["namespace"] == NAMESPACE and a["name"].startswith(board_name(""))
    )
    if job is not None:
        if board_name(job) not in names:
            raise NotRunning(
                f"no capture board for Ray job {job} (boards: {', '.join(names) or 'none'})"
            )
        names = [board_name(job)]
    if not names:
        raise NotRunning(
            "no job on this Ray cluster has a capture board: is it running, and "
            "did its driver call mindspeed_prof.ray.open_board()?"
        )
    if len(names) > 1:
        jobs = ", ".join(n.removeprefix(board_name("")) for n in names)
        raise NotRunning(
            f"{len(names)} jobs have a capture board ({jobs}): choose one with --job ID"
        )
    return str(names[0])
