"""The events of any producer's Chrome trace, as msgspec decodes them: ids of any JSON type and
size (``"rank3"``, ``18446744073709551617``, ``3.0``), names and categories that may be absent."""

from __future__ import annotations

from typing import Union

import msgspec

from mindspeed_prof.analysis.readers.events import Number

__all__ = ["AnyId", "Args", "Event", "Top"]

#: A pid or tid as other tools write them: a number of any size or a string.
AnyId = Union[int, float, str, None]


class Args(msgspec.Struct, gc=False):
    """What the reader reads of an event's ``args``: a metadata event's ``name``, a step, a
    rank (other keys are skipped, never built)."""

    name: object = None
    step: object = None
    rank: object = None


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: Union[str, None] = None
    name: Union[str, int, float, None] = None
    ts: Number = None
    dur: Number = None
    pid: AnyId = None
    tid: AnyId = None
    args: Union[Args, None] = None


class Top(msgspec.Struct):
    """The document around the events: the rank fields a producer may record."""

    traceEvents: list[Event] = []
    distributedInfo: Union[dict[str, object], None] = None
    rank: object = None
    deviceProperties: object = None
