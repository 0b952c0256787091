"""A timeline's operator detail: a capture's complete events read again from disk, put on the
wall clock, and written to a track as they are or, under a size budget (``budget``),
with short operators merged per thread into ``merged: N ops`` slices and the operators of cells
out of the budget's scope left out (but for each rank's longest)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.events import DEVICE_CATS
from mindspeed_prof.analysis.timeline.budget import Plan, Stats, Tally
from mindspeed_prof.analysis.timeline.event import Id, Thread, TraceEvent
from mindspeed_prof.formats import NPU_OUTPUT

__all__ = [
    "DETAIL_TID",
    "count_again",
    "Event",
    "NpuDetail",
    "StepOf",
    "npu_detail",
    "raw_events",
    "read_again",
    "wall_events",
    "write_detail",
]

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


def read_again(
    data: TraceData, offset: float, span: tuple[float, float] | None
) -> tuple[list[Event], str | None]:
    """``wall_events`` of ``data`` as a list, or none and the line that says why: a capture
    changed, cut short or removed since it was read leaves its track its ranges only. Read
    whole before anything is written: a failing write is not taken for a failing read."""
    try:
        return list(wall_events(data, offset, span)), None
    except Exception as err:
        return [], _unread(data, err)


def count_again(
    data: TraceData,
    offset: float,
    span: tuple[float, float] | None,
    stats: Stats,
    pid: int,
    step_of: StepOf,
) -> str | None:
    """``wall_events`` of ``data`` counted into the budget's ``stats`` (track ``pid``) as they
    are read, none held at once; or the line ``read_again`` gives where it cannot be read to
    the end."""
    try:
        for thread, cat, name, ts, dur in wall_events(data, offset, span):
            stats.add(pid, step_of(ts), thread, name, cat, dur)
    except Exception as err:
        return _unread(data, err)
    return None


def _unread(data: TraceData, err: Exception) -> str:
    """The line for a capture whose detail raised ``err``; other errors are raised again."""
    from mindspeed_prof.analysis.readers import BadFile
    from mindspeed_prof.analysis.readers.labels import one_line
    from mindspeed_prof.analysis.readers.sniff import unreadable

    if not isinstance(err, (BadFile, *unreadable())):
        raise err
    why = str(err) if isinstance(err, BadFile) else f"{type(err).__name__}: {one_line(err)}"
    return (
        f"{data.path}: its operators and kernels could not be read again ({why}); "
        "its track holds its ranges only"
    )


def wall_events(
    data: TraceData, offset: float, span: tuple[float, float] | None
) -> Iterator[Event]:
    """The operators and kernels of ``data`` on the wall clock (inside ``span`` if given)."""
    for cat, name, ts, dur, opid, otid in raw_events(data):
        if cat in _SKIP_DETAIL or name.startswith("ProfilerStep#"):
            continue
        wall = ts + offset
        if span is not None and not span[0] <= wall <= span[1]:
            continue
        yield (opid, otid), cat, name, wall, dur


@dataclass
class _Track:
    """One track's detail: a thread per original thread (named when first seen), and its
    slices."""

    add: Callable[[TraceEvent], None]
    pid: int
    origin: float
    threads: dict[Thread, int]

    def tid_of(self, thread: Thread, cat: str) -> int:
        tid = self.threads.get(thread)
        if tid is None:
            tid = self.threads[thread] = DETAIL_TID + len(self.threads)
            kind = "device" if cat in _DEVICE_CATS else "host"
            self.add(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": self.pid,
                    "tid": tid,
                    "args": {"name": f"{kind} {thread[0]}/{thread[1]}"},
                }
            )
            self.add(
                {
                    "ph": "M",
                    "name": "thread_sort_index",
                    "pid": self.pid,
                    "tid": tid,
                    "args": {"sort_index": tid},
                }
            )
        return tid

    def slice_(self, event: Event) -> None:
        thread, cat, name, ts, dur = event
        self.add(
            {
                "ph": "X",
                "pid": self.pid,
                "tid": self.tid_of(thread, cat),
                "cat": cat,
                "name": name,
                "ts": round(ts - self.origin, 3),
                "dur": round(dur, 3),
            }
        )

    def flush(self, run: _Run | None, tally: Tally) -> None:
        """``run`` written: one operator as itself, several as one ``merged: N ops`` slice."""
        if run is None:
            return
        first, n = run.first, run.count
        if n == 1:
            self.slice_(first)
            return
        self.add(
            {
                "ph": "X",
                "pid": self.pid,
                "tid": self.threads[first[0]],
                "cat": "merged",
                "name": f"merged: {n} ops",
                "ts": round(first[3] - self.origin, 3),
                "dur": round(run.end - first[3], 3),
                "args": {"ops": n},
            }
        )
        tally.merged += n
        tally.slices += 1


def write_detail(
    add: Callable[[TraceEvent], None],
    pid: int,
    events: Iterable[Event],
    origin: float,
    threads: dict[Thread, int],
    plan: Plan | None,
    step_of: StepOf,
    tally: Tally,
) -> None:
    """Slices of ``events`` on track ``pid``, one detail thread per original thread, each
    thread's in start order (longest first), as the writer keeps them nested."""
    track = _Track(add, pid, origin, threads)
    buffered = list(events)  # one capture's: nesting and merging need each thread in order
    for thread, cat, _, _, _ in buffered:
        track.tid_of(thread, cat)
    buffered.sort(key=lambda e: (threads[e[0]], e[3], -e[4]))
    if plan is None or not plan.active:
        for event in buffered:
            track.slice_(event)
        return
    _merge(track, buffered, plan, step_of, tally)


def _merge(track: _Track, events: list[Event], plan: Plan, step_of: StepOf, tally: Tally) -> None:
    """``events`` (each thread's in time order) under ``plan``: the long ones and each rank's
    longest as themselves, the short ones of a thread merged while they share the kept slice
    around them and the step; the operators of cells out of its scope left out."""
    always = plan.always_us.get(track.pid, float("inf"))
    run: _Run | None = None
    ends: list[float] = []  # the kept slices open on this thread, innermost last
    thread_now: Thread | None = None
    for event in events:
        thread, _, _, ts, dur = event
        if thread != thread_now:
            track.flush(run, tally)
            run, thread_now = None, thread
            ends.clear()
        while ends and ends[-1] <= ts:
            ends.pop()
        step = step_of(ts) if plan.full is not None else None
        in_scope = plan.full is None or (track.pid, step) in plan.full
        if dur >= always or (in_scope and dur >= plan.below_us):
            track.flush(run, tally)
            run = None
            ends.append(ts + dur)
            track.slice_(event)
        elif not in_scope:
            tally.left_out += 1
        else:
            parent = (len(ends), ends[-1] if ends else None)
            if run is not None and run.parent == parent and run.step == step:
                run.count += 1
                run.end = max(run.end, ts + dur)
            else:
                track.flush(run, tally)
                run = _Run(event, 1, ts + dur, parent, step)
    track.flush(run, tally)


#: What a torch_npu capture's detail is read from: a Chrome trace (``trace_view.json``),
#: kernel_details.csv (or msprof's op_summary), a profiler db.
NpuDetail = Literal["trace", "kernels", "db"]


def npu_detail(path: Path) -> tuple[Path, NpuDetail] | None:
    """Where a torch_npu capture's operators and kernels are: its ``trace_view.json``
    (msprof's timeline), else its profiler db, else its ``kernel_details.csv`` (msprof's
    ``op_summary``); ``path`` itself when it is a lone one of these; None where none is."""
    from mindspeed_prof.analysis.readers.npu.folder import TRACE_VIEW, output_files
    from mindspeed_prof.analysis.readers.npu.msprof import msprof_files
    from mindspeed_prof.analysis.readers.sniff import (
        CHROME,
        KERNEL_DETAILS,
        OP_SUMMARY,
        PROFILER_DB,
        TRACE,
        TRACE_LIST,
        is_msprof,
        kind_of,
    )

    if path.is_dir():
        files = msprof_files(path)[0] if is_msprof(path) else output_files(path / NPU_OUTPUT)
    else:
        files = {kind_of(path) or "": path}
    trace = next((files[k] for k in (TRACE_VIEW, TRACE, TRACE_LIST, CHROME) if k in files), None)
    if trace is not None and kind_of(trace) in (TRACE, TRACE_LIST, CHROME):
        return trace, "trace"
    if PROFILER_DB in files:
        return files[PROFILER_DB], "db"
    kernels = files.get(KERNEL_DETAILS) or files.get(OP_SUMMARY)
    return None if kernels is None else (kernels, "kernels")


def raw_events(data: TraceData) -> Iterator[tuple[str, str, float, float, Id, Id]]:
    """``(cat, name, ts, dur, pid, tid)`` of a capture's complete events, read again from disk;
    a torch_npu export without ``trace_view.json`` from its db or its kernel_details.csv
    (``readers.npu.spans``)."""
    from mindspeed_prof.analysis.readers.kineto.chrome import stream_events

    path = data.path
    if data.kind not in ("torch", "db", "npu"):  # another tool's trace (drawn as ranges),
        return  # a range file, a memory file: no operators
    if data.kind == "db":
        from mindspeed_prof.formats.sqlite_trace import read_db_events

        for name, cat, ph, ts, dur, pid, tid, _ in read_db_events(path):
            if ph == "X":
                yield cat, name, ts, dur, pid, tid
        return
    if data.kind == "npu":
        from mindspeed_prof.analysis.readers.npu.spans import db_spans, kernel_spans

        found = npu_detail(path)
        if found is None:
            return
        path, how = found
        if how == "db":
            yield from db_spans(path)
            return
        if how == "kernels":
            for name, ts, dur, stream in kernel_spans(path):
                yield "", name, ts, dur, "NPU", f"stream {stream}"
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
