"""A timeline in Perfetto's own protobuf format (``--format perfetto``), written with the
``perfetto`` package's protos (the Perfetto team's, on PyPI; the ``perfetto`` extra).

It takes the same events the JSON writer does: a process track per ``process_name``, a thread
track per ``thread_name``, and each complete slice as a begin and an end ``TrackEvent`` (in ns,
on the wall clock). ``otherData`` becomes the debug annotations of one instant event on a track
of its own, ``mindspeed-prof``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mindspeed_prof.analysis.timeline.event import Out, TraceEvent
from mindspeed_prof.analysis.timeline.nest import Nester

__all__ = ["PerfettoWriter", "available"]

_SEQUENCE = 1
_META_UUID = 1


def available() -> bool:
    try:
        import perfetto.protos.perfetto.trace.perfetto_trace_pb2  # noqa: F401
    except ImportError:
        return False
    return True


class PerfettoWriter:
    """``JsonWriter``'s interface (``add``, ``flush``, ``count``, ``bytes``) over Perfetto packets.

    ``origin_us``: added to every ``ts`` (microseconds from the earliest event) for the wall
    clock, since Perfetto's timestamps are unsigned. Past ``limit`` bytes, ``flush`` raises
    ``OverflowError``.
    """

    def __init__(self, f: Out | None, origin_us: float, limit: int | None = None) -> None:
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

        self._f = f
        self._trace = Trace()
        self._begin, self._end = TrackEvent.TYPE_SLICE_BEGIN, TrackEvent.TYPE_SLICE_END
        self._instant = TrackEvent.TYPE_INSTANT
        self._origin_ns = max(0, round(origin_us * 1000))
        self._tracks: dict[tuple[int, int | None], int] = {}
        self.count = 0
        self.slices = 0
        self.bytes = 0
        self.limit = limit
        self.nest = Nester()

    def _uuid(self, pid: int, tid: int | None) -> int:
        uuid = self._tracks.get((pid, tid))
        if uuid is None:
            uuid = self._tracks[(pid, tid)] = 2 + len(self._tracks)
        return uuid

    def _packet(self) -> Any:  # a protobuf TracePacket (the perfetto package has no types)
        packet = self._trace.packet.add()
        packet.trusted_packet_sequence_id = _SEQUENCE
        return packet

    def _ns(self, us: float) -> int:
        return max(0, self._origin_ns + round(us * 1000))

    def add(self, event: TraceEvent) -> None:
        ph, pid = event["ph"], event["pid"]
        if ph == "M":
            name = event["name"]
            if name == "process_name":
                track = self._packet().track_descriptor
                track.uuid = self._uuid(pid, None)
                track.process.pid = pid
                track.process.process_name = event["args"]["name"]
            elif name == "thread_name":
                track = self._packet().track_descriptor
                track.uuid = self._uuid(pid, event["tid"])
                track.parent_uuid = self._uuid(pid, None)
                track.thread.pid = pid
                track.thread.tid = event["tid"]
                track.thread.thread_name = event["args"]["name"]
            self.count += 1
            return
        self.nest.clamp(event)
        self.slices += 1
        uuid = self._uuid(pid, event["tid"])
        start = self._ns(event["ts"])
        packet = self._packet()
        packet.timestamp = start
        begin = packet.track_event
        begin.type = self._begin
        begin.track_uuid = uuid
        begin.name = event["name"]
        if event.get("cat"):
            begin.categories.append(event["cat"])
        for key, value in event.get("args", {}).items():
            note = begin.debug_annotations.add()
            note.name = key
            note.int_value = int(value)
        packet = self._packet()
        packet.timestamp = max(start, self._ns(event["ts"] + event["dur"]))
        packet.track_event.type = self._end
        packet.track_event.track_uuid = uuid
        self.count += 1
        if len(self._trace.packet) >= 8192:
            self.flush()

    def other_data(self, other: Mapping[str, object]) -> None:
        """``otherData`` as an instant event's annotations (each value as JSON text)."""
        track = self._packet().track_descriptor
        track.uuid = _META_UUID
        track.name = "mindspeed-prof"
        packet = self._packet()
        packet.timestamp = self._origin_ns
        packet.track_event.type = self._instant
        packet.track_event.track_uuid = _META_UUID
        packet.track_event.name = "timeline"
        for key, value in other.items():
            note = packet.track_event.debug_annotations.add()
            note.name = key
            note.string_value = json.dumps(value)

    def flush(self) -> None:
        if not self._trace.packet:
            return
        chunk = self._trace.SerializeToString()  # a Trace's packets concatenate
        if self._f is not None:
            self._f.write(chunk)
        self.bytes += len(chunk)
        self._trace.Clear()
        if self.limit is not None and self.bytes > self.limit:
            raise OverflowError(f"{self.bytes} bytes written, over {self.limit}")
