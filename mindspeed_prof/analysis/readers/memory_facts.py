"""Memory facts of time-ordered points (peak, per-stage peaks, a thinned timeline) and of the
allocations per op; ``MemoryEvents``: a trace's ``[memory]`` events, folded into them."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence

from mindspeed_prof.analysis.readers.events import Event, number
from mindspeed_prof.analysis.readers.model import Alloc, Memory, Range, Tally

__all__ = ["HOST", "POINTS", "MemoryEvents", "by_stage", "from_events", "thin", "top"]

#: A timeline is thinned to at most this many points (the peak is always kept).
POINTS = 200
_TOP = 10
_NAN = float("nan")


def thin(points: list[tuple[float, float]]) -> list[list[float]]:
    """At most ``POINTS`` of ``points``, evenly spaced, keeping the highest and the last."""
    if len(points) <= POINTS:
        return [list(p) for p in points]
    stride = len(points) / POINTS
    keep = {int(i * stride) for i in range(POINTS)} | {
        max(range(len(points)), key=lambda i: points[i][1]),
        len(points) - 1,
    }
    return [list(points[i]) for i in sorted(keep)]


def by_stage(points: list[tuple[float, float]], ranges: Sequence[Range]) -> dict[str, float]:
    """Peak of ``points`` (sorted by time) within each stage's runs."""
    times = [p[0] for p in points]
    out: dict[str, float] = {}
    for r in ranges:
        if r.kind != "stage":
            continue
        lo = max(bisect.bisect_left(times, r.ts) - 1, 0)  # the level at the stage's start
        hi = bisect.bisect_right(times, r.ts + r.dur)
        if hi > lo and times[lo] <= r.ts + r.dur:
            peak = max(p[1] for p in points[lo:hi])
            out[r.name] = max(out.get(r.name, 0.0), peak)
    return out


def top(sizes: dict[str, Tally]) -> list[Alloc]:
    """The ``_TOP`` ops that allocated the most bytes."""
    most = sorted(sizes.items(), key=lambda kv: -kv[1].total)[:_TOP]
    return [Alloc(op=k, count=t.count, bytes=int(t.total)) for k, t in most]


#: ``Memory.source`` of a trace whose ``[memory]`` events are all the host's (Device Type 0).
HOST = "host"


def from_events(
    points: list[tuple[float, float]],
    peak_reserved: float | None,
    allocs: dict[str, Tally],
    ranges: Sequence[Range],
    source: str = "trace",
) -> Memory:
    """Memory facts of a trace's ``[memory]`` events: ``points`` (us, allocated bytes) in time
    order, the peak reserved, and allocations per op (the reader finds the innermost host op
    open at each allocation); ``source``: ``trace`` (a device's) or ``HOST``."""
    return Memory(
        source=source,
        peak_allocated_bytes=max((p[1] for p in points), default=None),
        peak_reserved_bytes=peak_reserved,
        by_stage=by_stage(points, ranges),
        top_ops=top(allocs),
        timeline=thin(points),
    )


class MemoryEvents:
    """A trace's ``[memory]`` events as columns (time, allocated, reserved, device type), 32
    bytes each."""

    def __init__(self) -> None:
        self.ts, self.allocated, self.reserved, self.device = (array("d") for _ in range(4))

    def __len__(self) -> int:
        return len(self.ts)

    def add(self, ev: Event) -> tuple[float, float, float | None] | None:
        """Keep an event; returns its allocation (time, bytes, device type) where it
        allocates, else None."""
        ts = number(ev.ts)
        if ts is None:
            return None
        a = ev.args
        assert a is not None
        size, dev = number(a.bytes) or 0.0, number(a.device_type)
        for col, value in zip(
            (self.ts, self.allocated, self.reserved, self.device),
            (ts, number(a.allocated), number(a.reserved), dev),
        ):
            col.append(_NAN if value is None else value)
        return (ts, size, dev) if size > 0 else None

    def on_device(self) -> bool:
        """With a device's events in the trace (Device Type other than 0, the CPU: CUDA's 1,
        ROCm's 6, ...) only device memory counts."""
        return any(d == d and d != 0 for d in self.device)

    def on_host(self) -> bool:
        """Every event is the host's (Device Type 0): host memory, never a device's peak."""
        return bool(len(self.device)) and all(d == 0 for d in self.device)

    def memory(self, allocs: dict[str, Tally], ranges: Sequence[Range]) -> Memory:
        """The facts (``allocs``: the allocations per op of what ``on_device`` says counts)."""
        ts, allocated, reserved, dev = self.ts, self.allocated, self.reserved, self.device
        device = self.on_device()
        keep = (
            [i for i in range(len(ts)) if dev[i] == dev[i] and dev[i] != 0]
            if device
            else range(len(ts))
        )
        order = sorted(keep, key=ts.__getitem__)
        points = [(ts[i], allocated[i]) for i in order if allocated[i] == allocated[i]]
        peak_reserved = max((reserved[i] for i in keep if reserved[i] == reserved[i]), default=None)
        source = HOST if self.on_host() else "trace"
        return from_events(points, peak_reserved, allocs, ranges, source)
