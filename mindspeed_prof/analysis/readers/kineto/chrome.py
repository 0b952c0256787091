"""Chrome trace files (torch.profiler/Kineto JSON, the span recorder's range files): read a
slice of events at a time and folded into a capture's ``TraceData``."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from pathlib import Path

from mindspeed_prof.analysis.readers.events import Event, TraceTop
from mindspeed_prof.analysis.readers.fold import Collector
from mindspeed_prof.analysis.readers.kineto.device_peak import device_name
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.ranks import rank_of, world_size
from mindspeed_prof.analysis.readers.stream import TraceStream
from mindspeed_prof.formats.header import KIND_SPANS, read_header

__all__ = ["INTERRUPTED", "read_json", "stream_events"]

#: How a problem line says a range file was never closed.
INTERRUPTED = "interrupted: never closed"


def stream_events(path: Path) -> Iterator[list[Event]]:
    """The events of a Chrome trace file in batches, read a slice at a time (``stream``)."""
    return TraceStream(path, Event, TraceTop).batches()


def read_json(path: Path, group: str, size: int, comm_kernels: str = "") -> TraceData:
    """Read ``path`` a slice of events at a time (``stream``): memory does not grow with it.
    ``comm_kernels``: the user's pattern of communication kernels (``readers.classify``)."""
    stream = TraceStream(path, Event, TraceTop)
    fold = Collector(comm_kernels)
    count = 0
    with _gc_paused():
        for batch in stream.batches():
            count += len(batch)
            fold.add(batch)
    trace = stream.top or TraceTop()
    meta, odd = read_header(trace.mindspeed_prof, path)
    meta.base_time_ns = trace.baseTimeNanoseconds
    meta.device_memory_bytes = device_memory(trace.deviceProperties)
    meta.device_name = device_name(trace.deviceProperties)
    if not meta.engine:  # a rollout engine's: its own workers
        meta.world_size = world_size(trace.distributedInfo)
    kind = "spans" if meta.kind == KIND_SPANS else "torch"
    data = TraceData(
        path, kind, rank_of(path, meta, trace.distributedInfo), group, size, events=count, meta=meta
    )
    fold.finish(data, meta.step)
    data.problems.extend(stream.problems())
    if odd:
        data.problems.append(odd)
    if kind == "spans" and meta.format is not None and not trace.closed:
        data.problems.append(
            f"{path}: {INTERRUPTED} (the process that wrote it was killed, or "
            f"is still writing); {len(data.ranges):,} ranges kept"
        )
    return data


def device_memory(properties: object) -> int | None:
    """A device's memory in bytes from Kineto's ``deviceProperties`` (``totalGlobalMem``),
    where every listed device has the same (None: none listed, they differ, or it is not a
    list of objects)."""
    listed = properties if isinstance(properties, list) else []
    sizes = {p.get("totalGlobalMem") for p in listed if isinstance(p, dict)}
    sizes = {s for s in sizes if isinstance(s, int) and not isinstance(s, bool) and s > 0}
    return sizes.pop() if len(sizes) == 1 else None


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic GC off: decoded events and the fold's state make no cycles, and its passes
    over the millions of objects a big trace creates made time per MB grow with the file."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
