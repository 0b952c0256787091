"""Chrome trace events as torch.profiler/Kineto and our range files write them: the event
types msgspec decodes into, and what Kineto's categories mean."""

from __future__ import annotations

import re
from typing import Union

import msgspec

from mindspeed_prof.analysis.readers.phases import stage_of

__all__ = [
    "DEVICE_CATS",
    "HOST_CATS",
    "NAMES",
    "NOT_RECORDED",
    "OTHER_TOOL",
    "PLAIN",
    "RUNTIME_CATS",
    "STAGE",
    "STEP_NAME",
    "UNREAD_DEVICE",
    "Corr",
    "Event",
    "EventArgs",
    "Id",
    "Lane",
    "Number",
    "TraceTop",
    "decode_events",
    "name_kind",
    "number",
]

#: Kineto categories of work on the device, of host calls into the CUDA runtime/driver (and
#: MTIA's), and of host operators (the capitalised ones: Kineto's first format, PyTorch 1.8's).
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "mtia_runtime"})
HOST_CATS = frozenset({"cpu_op", "Operator"})
#: Device activity that is not read as device time, and how a note names it: MTIA's command
#: processor events mix kernels with waits and DMA queues, none with a stream of kernels; CUPTI
#: range-profiler records replay each kernel for its counters (no timeline).
UNREAD_DEVICE = {
    "mtia_ccp_events": "MTIA device events",
    "cuda_profiler_range": "CUDA range-profiler records",
}
#: Of ``unread_device``: kernel launches of a capture that recorded no device activity at all
#: (``readers.missing``): how many, under this key.
NOT_RECORDED = "launches_without_device"
#: Of ``unread_device``: the events of another tool's Chrome trace (``readers.generic``), read
#: as ranges, never as device time.
OTHER_TOOL = "other_tool_events"
#: A step range: ``ProfilerStep#<n>``.
STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")

Number = Union[int, float, str, None]
#: A pid, tid or stream id as a trace writes it.
Id = Union[int, str, None]
#: A host thread (pid, tid) or a device stream (pid, stream).
Lane = tuple[Id, Id]
#: A launch's correlation id: what ties a device op to the call that launched it.
Corr = Union[int, str]


# Fields in the order Kineto writes them (msgspec tries the next declared field first).
class EventArgs(msgspec.Struct, gc=False):
    correlation: Union[Corr, None] = None
    stream: Id = None
    step: Union[int, float, str, None] = None
    bytes: Number = msgspec.field(default=None, name="Bytes")
    allocated: Number = msgspec.field(default=None, name="Total Allocated")
    reserved: Number = msgspec.field(default=None, name="Total Reserved")
    device_type: Number = msgspec.field(default=None, name="Device Type")
    #: Kineto's collective arguments on a kernel c10d launched (``readers.classify``).
    collective: object = msgspec.field(default=None, name="Collective name")
    #: A counter event's (``ph`` C, ``cat`` count; ``readers.counters``): any JSON, checked there.
    value: object = None
    values: object = None
    stage: object = None


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: Id = None
    tid: Id = None
    ts: Number = None
    dur: Number = None
    args: Union[EventArgs, None] = None


class TraceTop(msgspec.Struct):
    traceEvents: list[Event] = []
    mindspeed_prof: Union[dict[str, object], None] = None
    distributedInfo: Union[dict[str, object], None] = None
    deviceProperties: object = None  # Kineto: a list, one entry per visible device
    baseTimeNanoseconds: Union[int, None] = None  # Kineto: wall-clock ns at ts 0
    closed: Union[bool, None] = None  # our range files: set when the recorder closed it


_decoder = msgspec.json.Decoder(Union[TraceTop, list[Event]])  # object or JSON Array Format


def decode_events(raw: bytes) -> list[Event]:
    """Events of a Chrome trace given as an object with ``traceEvents`` or as a bare list."""
    trace = _decoder.decode(raw)
    return trace if isinstance(trace, list) else trace.traceEvents


def number(value: Number) -> float | None:
    """A finite number from a JSON value (torch_npu writes times as strings), else None."""
    kind = type(value)
    if kind is float:  # the common case first: finite floats as they are
        return value if value - value == 0 else None  # type: ignore[return-value,operator]
    if kind is int:
        return float(value)  # type: ignore[arg-type]
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and abs(out) != float("inf") else None


#: A host event's name: its step number (``ProfilerStep#<n>``), ``STAGE`` for a stage's
#: name, ``PLAIN`` for any other; remembered for the first ``NAMES_MAX`` names.
STAGE, PLAIN = "stage", "plain"
NAMES: dict[str, int | str] = {}
NAMES_MAX = 1 << 16


def name_kind(name: str) -> int | str:
    """What a host event's name says it is (see ``NAMES``), remembered."""
    m = STEP_NAME.match(name)
    what: int | str = int(m.group(1)) if m else STAGE if stage_of(name) else PLAIN
    if len(NAMES) < NAMES_MAX:
        NAMES[name] = what
    return what
