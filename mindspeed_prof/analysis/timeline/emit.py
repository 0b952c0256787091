"""A timeline's events, track by track: each track's names, its steps, stages and custom ranges
in the window, and its operator detail (written, or counted for the budget instead)."""

from __future__ import annotations

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.timeline.budget import Plan, Stats, Tally
from mindspeed_prof.analysis.timeline.detail import StepOf, count_again, read_again, write_detail
from mindspeed_prof.analysis.timeline.event import Thread, TraceEvent
from mindspeed_prof.analysis.timeline.tracks import Capture, Layout, Track
from mindspeed_prof.analysis.timeline.window import StepWindow
from mindspeed_prof.analysis.timeline.writer import Writer

__all__ = ["RANGE_TIDS", "THREADS", "emit", "emit_track"]

THREADS = {"step": (1, "steps"), "stage": (2, "stages"), "range": (3, "ranges")}
#: Rows of custom ranges of a second, third... recording thread: numbered from here, past any
#: detail row (``detail.DETAIL_TID`` and up).
RANGE_TIDS = 1 << 20


def emit(
    w: Writer,
    layout: Layout,
    plan: Plan | None,
    tally: Tally,
    stats: Stats | None = None,
) -> list[str]:
    """Every track's header, ranges and (unless ``stats`` counts them instead) detail; the
    lines of captures whose detail could not be read again."""
    return [
        line for track in layout.tracks for line in emit_track(w, layout, track, plan, tally, stats)
    ]


def emit_track(
    w: Writer,
    layout: Layout,
    track: Track,
    plan: Plan | None,
    tally: Tally,
    stats: Stats | None = None,
) -> list[str]:
    """One track's header, ranges and (unless ``stats`` counts them instead) detail; the lines
    of its captures whose detail could not be read again (``detail.read_again``)."""
    steps = layout.steps
    pid, key, label, captures = track
    _header(w, pid, label)
    threads: dict[Thread, int] = {}
    rows: dict[str, int] = {}
    problems: list[str] = []
    for c in captures:
        span = None if steps.everything else _window_span(c, steps, layout.offsets)
        for t in c.ranges:
            _write_ranges(w, pid, t, layout.offsets[id(t)], layout.origin, steps, span, rows)
        if not layout.with_detail(key) or not (span or steps.everything):
            continue
        step_of = StepOf(
            (r.ts + layout.offsets[id(t)], r.ts + r.dur + layout.offsets[id(t)], r.step)
            for t in c.ranges
            for r in t.ranges
            if r.kind == "step" and r.step is not None
        )
        for t in c.details:
            if stats is None:
                events, problem = read_again(t, layout.offsets[id(t)], span)
                write_detail(w.add, pid, events, layout.origin, threads, plan, step_of, tally)
            else:
                problem = count_again(t, layout.offsets[id(t)], span, stats, pid, step_of)
            if problem is not None:
                problems.append(problem)
        if stats is not None:
            for t in c.ranges:
                for r in t.ranges:
                    if r.kind == "step" and r.step is not None:
                        cell = (pid, r.step)
                        stats.step_us[cell] = max(stats.step_us.get(cell, 0.0), r.dur)
    return problems


def _header(w: Writer, pid: int, label: str) -> None:
    w.add({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": label}})
    w.add({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
    for tid, name in THREADS.values():
        w.add({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        w.add(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )


def _window_span(
    c: Capture, steps: StepWindow, offsets: dict[int, float]
) -> tuple[float, float] | None:
    """Wall-clock start and end of the capture's steps inside the window."""
    kept = [
        (r.ts + offsets[id(t)], r.ts + r.dur + offsets[id(t)])
        for t in c.ranges
        for r in t.ranges
        if r.kind == "step" and r.step in steps
    ]
    return (min(a for a, _ in kept), max(b for _, b in kept)) if kept else None


def _range_row(w: Writer, pid: int, thread: str, rows: dict[str, int]) -> int:
    """The row of custom ranges recorded on ``thread``: the ``ranges`` row for the first thread
    seen, a row of its own (``ranges · <thread>``) for each other, so ranges of two threads
    never overlap on one row."""
    tid = rows.get(thread)
    if tid is None:
        tid = rows[thread] = THREADS["range"][0] if not rows else RANGE_TIDS + len(rows)
        if tid != THREADS["range"][0]:
            name = f"{THREADS['range'][1]} · {thread}"
            w.add(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
            )
            w.add(
                {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                 "args": {"sort_index": tid}}
            )  # fmt: skip
    return tid


def _write_ranges(
    w: Writer,
    pid: int,
    data: TraceData,
    offset: float,
    origin: float,
    steps: StepWindow,
    span: tuple[float, float] | None,
    rows: dict[str, int],
) -> None:
    shift = offset - origin
    for r in data.ranges:
        if (
            not steps.everything
            and r.step not in steps
            and not (r.step is None and span is not None and span[0] <= r.ts + offset <= span[1])
        ):
            continue
        tid = THREADS[r.kind][0] if r.kind in ("step", "stage") else _range_row(w, pid, r.tid, rows)
        event: TraceEvent = {
            "ph": "X",
            "pid": pid,
            "tid": tid,
            "name": r.name,
            "ts": round(r.ts + shift, 3),
            "dur": round(r.dur, 3),
        }
        if r.step is not None:
            event["args"] = {"step": r.step}
        w.add(event)
