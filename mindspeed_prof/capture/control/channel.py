"""On-demand capture's one abstraction, the ``Carrier`` that takes requests from the ``capture``
command to a job's workers and their answers back: the save root's folder
(``capture.control.folder``), a Ray job's board (``mindspeed_prof.ray.board``).

A carrier has two sides. A job's worker asks it (its ``RequestSource`` side) for requests at a
step start and answers each with an ``Ack``; the ``capture`` command posts a request on it (its
``Channel`` side) and waits (``wait``, the one wait loop) until every worker it reached has
answered, the request is ignored, or time is up.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import msgspec

from mindspeed_prof.capture.control.request import Ack, Request
from mindspeed_prof.jsonio import JsonObject

__all__ = [
    "LEAD_S",
    "Carrier",
    "Channel",
    "Gone",
    "NotRunning",
    "RequestSource",
    "Status",
    "Worker",
    "start_step",
    "wait",
    "wait_for_workers",
]

_POLL_S = 0.25
#: How far ahead of the workers a request's start step is put: every worker looks at most
#: once a second and a Ray worker takes the board's answer at its next look, so three looks
#: and a margin. A rank that still comes late captures its steps from where it is, and says so.
LEAD_S = 4.0


class Worker(msgspec.Struct, frozen=True):
    """A worker as it last told a channel: rank, role, the step it was at, when (``time``,
    seconds since the epoch) and how fast it ran (``rate``, steps per second; 0 unknown).
    Crosses a board as ``to_json``, read back by ``parse``."""

    rank: int
    role: str
    step: int | None
    time: float = 0.0
    rate: float = 0.0

    def to_json(self) -> JsonObject:
        out: JsonObject = msgspec.to_builtins(self)
        return out

    @classmethod
    def parse(cls, data: object) -> Worker | None:
        """A worker from JSON, or None when it is not one."""
        try:
            return msgspec.convert(data, cls)
        except msgspec.ValidationError:
            return None


def start_step(workers: list[Worker], now: float, lead_s: float = LEAD_S) -> int | None:
    """The first step every worker will start after ``lead_s`` from ``now``, each one's step
    told at ``time`` carried forward at its ``rate`` (None when no worker told its step)."""
    known = [w for w in workers if w.step is not None]
    if not known:
        return None
    return (
        max(
            math.floor(w.step + max(w.rate, 0.0) * max(0.0, now - w.time + lead_s))
            for w in known
            if w.step is not None
        )
        + 1
    )


class RequestSource(Protocol):
    """A carrier's worker side: the requests for it, each returned once (its start step is the
    scheduler's to keep); ``worker`` says where it is, which the command plans with."""

    def poll(self, worker: Worker) -> list[Request]: ...

    def ack(self, request: Request, ack: Ack) -> None: ...


class Status(msgspec.Struct, kw_only=True):
    """What a channel knows of a request: the workers' acks; ``ignored``: why no worker will
    take it ("" when none); ``pending``: workers it is for that have not finished (as far as
    the channel knows them); ``settled``: nothing more is expected to change. Crosses a board
    as ``to_json``, read back by ``parse``."""

    acks: list[Ack] = []
    ignored: str = ""
    pending: list[tuple[int, str]] = []
    settled: bool = False
    workers: list[Worker] = []

    def to_json(self) -> JsonObject:
        out: JsonObject = msgspec.to_builtins(self)
        return out

    @classmethod
    def parse(cls, data: object) -> Status:
        """A status from JSON; ``msgspec.ValidationError`` (a ``ValueError``) when it is not
        one."""
        return msgspec.convert(data, cls)

    def finished(self, request: Request) -> bool:
        """Every worker that answered is done, and nothing more is awaited."""
        if self.ignored:
            return True
        if not self.acks or not all(a.done for a in self.acks):
            return False
        if request.ranks is not None and {a.rank for a in self.acks} >= set(request.ranks):
            return True  # every rank asked for is done, whoever else has not asked yet
        return self.settled and not self.pending


class Channel(Protocol):
    """A carrier's command side: ask the job's workers where they are (``open``), post a
    request, follow it, and ``close`` (the request withdrawn) when done or given up. ``Gone``
    from any of them: the carrier went away while the command waited."""

    def open(self) -> None: ...

    def workers(self) -> list[Worker]: ...

    def post(self, request: Request) -> str: ...

    def status(self, request: Request) -> Status: ...

    def close(self, request: Request) -> None: ...


class Carrier(RequestSource, Channel, Protocol):
    """A way requests travel between the command and a job's workers, both its sides, and what
    the command says of it: ``where`` the workers look (while it waits), ``hint`` (what to
    check when no job took a request)."""

    @property
    def where(self) -> str: ...

    @property
    def hint(self) -> str: ...

    def absent(self, request: Request) -> str:
        """Why no job can take ``request`` (said before it is posted); "" when one may."""
        ...

    def analyse_option(self, written: list[Ack]) -> str:
        """What ``analyse`` needs besides the folder to read the captures ``written`` (" --ray
        ADDRESS" where they lie on other nodes); "" when nothing."""
        ...


class NotRunning(Exception):
    """No job to ask through a carrier; the message is one line."""


class Gone(Exception):
    """The carrier went away while the command waited (the job ended); one line."""


def wait_for_workers(channel: Channel, request: Request, grace_s: float) -> list[Worker]:
    """The workers ``request`` is for that told their step while this command looked, waiting
    up to ``grace_s`` for the first of them and one look more for the others.

    A worker's ``time`` is its own clock (or its board's), which may be hours off ours: it is
    never compared with ours. A worker counts once what it told changed since the first look
    (or it appeared), and its ``time`` is then this command's clock when it was seen (so
    ``start_step`` carries its step forward on one clock)."""
    deadline = time.monotonic() + grace_s
    before = {(w.rank, w.role): (w.step, w.time) for w in channel.workers()}
    found: dict[tuple[int, str], Worker] = {}
    first: float | None = None
    while True:
        time.sleep(_POLL_S)
        seen = time.time()
        for w in channel.workers():
            key = (w.rank, w.role)
            if request.for_worker(w.rank, w.role) and before.get(key) != (w.step, w.time):
                found[key] = msgspec.structs.replace(w, time=seen)
                before[key] = (w.step, w.time)
        now = time.monotonic()
        if found and first is None:
            first = now
        if now >= deadline or (first is not None and now - first >= 1.2):
            return [found[k] for k in sorted(found)]


def wait(channel: Channel, request: Request, timeout_s: float) -> Status:
    """``channel.status(request)`` once it is finished, or at the timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = channel.status(request)
        if status.finished(request) or time.monotonic() >= deadline:
            return status
        time.sleep(_POLL_S)
