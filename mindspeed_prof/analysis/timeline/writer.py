"""A timeline's JSON writer: events appended to an open Chrome trace file in encoded chunks,
its bytes counted, stopped past a limit; and ``Writer``, it or the Perfetto one."""

from __future__ import annotations

import msgspec

from mindspeed_prof.analysis.timeline.event import Out, TraceEvent
from mindspeed_prof.analysis.timeline.nest import Nester
from mindspeed_prof.analysis.timeline.perfetto import PerfettoWriter

__all__ = ["JsonWriter", "Over", "Writer"]

_CHUNK = 4096  # events encoded per write
_encode = msgspec.json.Encoder().encode


class Over(OverflowError):
    """The trace being written has passed its budget: stop, plan, write again."""


class JsonWriter:
    """Appends events to an open Chrome trace file in encoded chunks; counts the JSON bytes
    and stops (``Over``) past ``limit``; ``slices``: the ``X`` events among ``count``, each
    kept inside the slice it starts in (``Nester``)."""

    def __init__(self, f: Out | None, limit: int | None = None) -> None:
        self._f = f
        self.limit = limit
        self._pending: list[bytes] = []
        self.count = 0
        self.slices = 0
        self.bytes = 0
        self.nest = Nester()

    def add(self, event: TraceEvent) -> None:
        if event["ph"] == "X":
            self.nest.clamp(event)
            self.slices += 1
        self._pending.append(_encode(event))
        if len(self._pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            chunk = (b"," if self.count else b"") + b",\n".join(self._pending) + b"\n"
            if self._f is not None:
                self._f.write(chunk)
            self.bytes += len(chunk)
            self.count += len(self._pending)
            self._pending = []
            if self.limit is not None and self.bytes > self.limit:
                raise Over


#: Either writer: both take ``add`` and ``flush`` and count ``count`` events and ``bytes``.
Writer = JsonWriter | PerfettoWriter
