"""A timeline's operator detail: a capture's complete events read again from disk, put on the
wall clock, and written to a track as they are or, under a size budget (``timeline_budget``),
with short operators merged per thread into ``merged: N ops`` slices and the operators of cells
out of the budget's scope left out (but for each rank's longest)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.events import DEVICE_CATS
from mindspeed_prof.analysis.timeline_budget import Plan, Tally
from mindspeed_prof.analysis.timeline_event import Id, Thread, TraceEvent
from mindspeed_prof.formats import NPU_OUTPUT

__all__ = ["DETAIL_TID", "Event", "StepOf", "raw_events", "wall_events", "write_detail"]

DETAIL_TID = 10
_SKIP_DETAIL = frozenset({"user_annotation", "gpu_user_annotation", "stage", "step", "mark"})
_DEVICE_CATS = DEVICE_CATS | {""}  # torch_npu's device events have no category

Event = tuple[Thread, str, str, float, float]  # (thread, cat, name, wall-clock ts, dur)


class StepOf:
    """The step whose wall-clock span holds a time (the latest to start), or None."""

    def __init__(self, spans: Iterable[tuple[float, float, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [s for s, _, _ in ordered]
        self._spans = ordered

    def __call__(self, ts: float) -> int | None:
        i = bisect_right(self._starts, ts) - 1
        if i < 0:
            return None
        start, end, step = self._spans[i]
        return step if ts <= end else None


@dataclass
class _Run:
    """Short operators being merged into one slice: the first, how many, where the last ends,
    the kept slice they lie in (depth, its end) and their step."""

    first: Event
    count: int
    end: float
    parent: tuple[int, float | None]
    step: int | None


def wall_events(data: TraceData, offset: float,
                span: tuple[float, float] | None) -> Iterator[Event]:
    """The operators and kernels of ``data`` on the wall clock (inside ``span`` if given)."""
    for cat, name, ts, dur, opid, otid in raw_events(data):
        if cat in _SKIP_DETAIL or name.startswith("ProfilerStep#"):
            continue
        wall = ts + offset
        if span is not None and not span[0] <= wall <= span[1]:
            continue
        yield (opid, otid), cat, name, wall, dur


def write_detail(add: Callable[[TraceEvent], None], pid: int, events: Iterable[Event],
                 origin: float, threads: dict[Thread, int], plan: Plan | None,
                 step_of: StepOf, tally: Tally) -> None:
    """Slices of ``events`` on track ``pid``, one detail thread per original thread."""

    def tid_of(thread: Thread, cat: str) -> int:
        tid = threads.get(thread)
        if tid is None:
            tid = threads[thread] = DETAIL_TID + len(threads)
            kind = "device" if cat in _DEVICE_CATS else "host"
            add({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                 "args": {"name": f"{kind} {thread[0]}/{thread[1]}"}})
            add({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                 "args": {"sort_index": tid}})
        return tid

    def slice_(tid: int, cat: str, name: str, ts: float, dur: float) -> None:
        add({"ph": "X", "pid": pid, "tid": tid, "cat": cat, "name": name,
             "ts": round(ts - origin, 3), "dur": round(dur, 3)})

    if plan is None or not plan.active:
        for thread, cat, name, ts, dur in events:
            slice_(tid_of(thread, cat), cat, name, ts, dur)
        return
    buffered = list(events)  # one capture's: merging needs each thread in time order
    for thread, cat, _, _, _ in buffered:
        tid_of(thread, cat)
    buffered.sort(key=lambda e: (threads[e[0]], e[3], -e[4]))
    always = plan.always_us.get(pid, float("inf"))
    run: _Run | None = None
    ends: list[float] = []  # the kept slices open on this thread, innermost last
    thread_now: Thread | None = None

    def flush() -> None:
        nonlocal run
        if run is None:
            return
        first, n, end = run.first, run.count, run.end
        if n == 1:
            slice_(threads[first[0]], first[1], first[2], first[3], first[4])
        else:
            add({"ph": "X", "pid": pid, "tid": threads[first[0]], "cat": "merged",
                 "name": f"merged: {n} ops", "ts": round(first[3] - origin, 3),
                 "dur": round(end - first[3], 3), "args": {"ops": n}})
            tally.merged += n
            tally.slices += 1
        run = None

    for event in buffered:
        thread, cat, name, ts, dur = event
        if thread != thread_now:
            flush()
            ends.clear()
            thread_now = thread
        while ends and ends[-1] <= ts:
            ends.pop()
        step = step_of(ts) if plan.full is not None else None
        in_scope = plan.full is None or (pid, step) in plan.full
        if dur >= always or (in_scope and dur >= plan.below_us):
            flush()
            ends.append(ts + dur)
            slice_(threads[thread], cat, name, ts, dur)
        elif not in_scope:
            tally.left_out += 1
        else:
            parent = (len(ends), ends[-1] if ends else None)
            if run is not None and (run.parent != parent or run.step != step):
                flush()
            if run is not None:
                run.count += 1
                run.end = max(run.end, ts + dur)
            else:
                run = _Run(event, 1, ts + dur, parent, step)
    flush()


def raw_events(data: TraceData) -> Iterator[tuple[str, str, float, float, Id, Id]]:
    """``(cat, name, ts, dur, pid, tid)`` of a capture's complete events, read again from disk."""
    from mindspeed_prof.analysis.readers.chrome import stream_events
    from mindspeed_prof.analysis.readers.sniff import TRACE, TRACE_LIST, kind_of

    path = data.path
    if data.kind == "db":
        from mindspeed_prof.formats.sqlite_trace import read_db_events

        for name, cat, ph, ts, dur, pid, tid, _ in read_db_events(path):
            if ph == "X":
                yield cat, name, ts, dur, pid, tid
        return
    if data.kind == "npu":  # a folder's trace_view.json, or a lone one (not a lone CSV or db)
        path = path / NPU_OUTPUT / "trace_view.json" if path.is_dir() else path
        if not path.is_file() or kind_of(path) not in (TRACE, TRACE_LIST):
            return
    for batch in stream_events(path):
        for ev in batch:
            if ev.ph != "X":
                continue
            try:
                ts, dur = float(ev.ts), float(ev.dur)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            yield ev.cat, ev.name, ts, dur, ev.pid, ev.tid
