"""One event of a timeline as its writers take it (Chrome trace's fields): a process or thread
name (``ph`` ``M``) or a complete slice (``X``); and the file they write to."""

from __future__ import annotations

from typing import Protocol, TypedDict

__all__ = ["Id", "Out", "Thread", "TraceEvent"]

#: A process or thread id as a capture records it.
Id = int | str | None
#: An original thread: (pid, tid).
Thread = tuple[Id, Id]


class TraceEvent(TypedDict, total=False):
    """``ph`` and ``pid`` always; a slice's ``name``, ``ts`` and ``dur`` (us), ``cat``; the
    ``tid`` of a thread's events; ``args``: a name or sort index (``M``), a step or count
    (``X``)."""

    ph: str
    pid: int
    tid: int
    name: str
    cat: str
    ts: float
    dur: float
    args: dict[str, str | int]


class Out(Protocol):
    """Where a writer puts its bytes: a file open for binary writing, gzip's or not."""

    def write(self, data: bytes, /) -> object: ...
