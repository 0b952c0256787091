"""A timeline's slices kept nested as Perfetto nests them: on each thread, a slice that starts
inside the one open before it and ends past its end (by float rounding: epoch microseconds in a
double are a quarter of a microsecond apart, durations are exact) is cut to end with it, on
the nanosecond grid Perfetto reads times on. Perfetto's JSON importer drops a slice that
overlaps its parent instead of nesting in it."""

from __future__ import annotations

from mindspeed_prof.analysis.timeline.event import TraceEvent

__all__ = ["Nester", "ns"]


def ns(us: float) -> int:
    """Microseconds (three decimals) as Perfetto's integer nanoseconds."""
    return round(us * 1000)


class Nester:
    """Per (pid, tid), the slices open (start, end in ns), innermost last; ``clamp`` cuts an
    ``X`` event to end within the slice it starts in. Slices come in start order per thread
    (an earlier start closes the stack above it)."""

    def __init__(self) -> None:
        self._open: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.clamped = 0

    def clamp(self, event: TraceEvent) -> None:
        ts, dur = event.get("ts"), event.get("dur")
        if ts is None or dur is None:  # not a slice of ours: nothing to keep inside
            return
        key = (event["pid"], event.get("tid", 0))
        start = ns(ts)
        end = start + ns(dur)
        stack = self._open.get(key)
        if stack is None:
            stack = self._open[key] = []
        while stack and (stack[-1][1] <= start or stack[-1][0] > start):
            stack.pop()
        if stack and end > stack[-1][1]:
            end = stack[-1][1]
            event["dur"] = (end - start) / 1000
            self.clamped += 1
        stack.append((start, end))
