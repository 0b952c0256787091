"""``mindspeed-prof timeline``: every capture under a root merged into one Chrome trace.

One process track per (host, role, rank), named ``rank 3 · actor · host-a`` and sorted by role
then rank; inside it one thread track each for steps, stages and custom ranges, and with
``--detail`` one per original thread for operators and kernels. Every capture records a
(wall-clock, trace-clock) pair at its start (``clock`` in a range file's metadata, Kineto's
``baseTimeNanoseconds`` in a torch trace; torch_npu writes wall-clock times); events are put on
that one wall-clock axis, shown relative to the earliest event. A capture without such a record
is aligned on step starts instead, and its track says so.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.timeline_budget import (
    BudgetError,
    BudgetFacts,
    Plan,
    Stats,
    Tally,
    budget_facts,
    budget_line,
)
from mindspeed_prof.analysis.timeline_budget import plan as plan_budget
from mindspeed_prof.analysis.timeline_clock import align as _align
from mindspeed_prof.analysis.timeline_clock import clock_offset_us
from mindspeed_prof.analysis.timeline_detail import StepOf, wall_events, write_detail
from mindspeed_prof.analysis.timeline_event import Out, Thread, TraceEvent
from mindspeed_prof.analysis.timeline_perfetto import PerfettoWriter
from mindspeed_prof.formats import NPU_OUTPUT, capture_stem
from mindspeed_prof.formats.stem import Stem

__all__ = [
    "BudgetError",
    "StepWindow",
    "Timeline",
    "budget_line",
    "clock_offset_us",
    "parse_ranks",
    "parse_steps",
    "write_timeline",
]

#: Roles in the order an RL loop runs them; other roles follow alphabetically.
ROLE_ORDER = ("integrated", "actor", "rollout", "reference", "critic", "reward", "driver")
THREADS = {"step": (1, "steps"), "stage": (2, "stages"), "range": (3, "ranges")}
_CHUNK = 4096  # events encoded per write
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class StepWindow:
    """Steps ``start <= step < end`` (either side open when None), like the profiler's window."""

    start: int | None = None
    end: int | None = None

    def __contains__(self, step: object) -> bool:
        if not isinstance(step, int):
            return False
        return (self.start is None or step >= self.start) and (self.end is None or step < self.end)

    @property
    def everything(self) -> bool:
        return self.start is None and self.end is None


def parse_steps(text: str) -> StepWindow:
    """``A:B`` (A included, B not), ``A:``, ``:B`` or ``A`` (that step alone)."""
    try:
        if ":" not in text:
            return StepWindow(int(text), int(text) + 1)
        a, b = text.split(":")
        window = StepWindow(int(a) if a.strip() else None, int(b) if b.strip() else None)
    except ValueError:
        raise ValueError(f"--steps {text!r}: use A:B (steps A..B-1), A: or :B") from None
    if window.start is not None and window.end is not None and window.end <= window.start:
        raise ValueError(f"--steps {text!r}: B must be greater than A")
    return window


def parse_ranks(text: str) -> frozenset[int] | None:
    """``all`` (None) or a list like ``0,3,8-11``."""
    if text.strip() == "all":
        return None
    ranks: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            ranks.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ValueError(f"--detail {text!r}: use 'all' or ranks like 0,3,8-11") from None
    return frozenset(ranks)


@dataclass(frozen=True, order=True)
class TrackKey:
    """One process track; ordered by role, then rank (unknown ranks last), then host."""

    role_order: tuple[int, str]
    rank_order: tuple[int, int]
    host: str
    rank: int | None = field(compare=False)

    @property
    def role(self) -> str:
        return self.role_order[1]

    def label(self) -> str:
        return " · ".join(
            [f"rank {rank_label(self.rank)}", self.role] + ([self.host] if self.host else [])
        )


@dataclass
class _Capture:
    """One capture (a stem's range file and op trace): where its ranges and details come from."""

    ranges: list[TraceData]
    details: list[TraceData]


@dataclass
class Timeline:
    """What was written: tracks, event count, bytes, and the problems worth a line each."""

    path: Path
    tracks: list[str] = field(default_factory=list)
    events: int = 0
    bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    aligned_on_steps: list[str] = field(default_factory=list)
    json_bytes: int = 0
    budget: BudgetFacts | None = None


def _role_order(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def _key(data: TraceData) -> TrackKey:
    role = data.meta.role if data.meta.role is not None else data.group
    host = data.meta.host
    if host is None:
        stem = Stem.parse(data.path.name)
        host = stem.host if stem else ""
    return TrackKey(_role_order(str(role)), rank_order(data.rank), host, data.rank)


def _captures(traces: Iterable[TraceData]) -> dict[TrackKey, list[_Capture]]:
    """Traces grouped by track, then by capture; a range file's ranges win over an op trace's."""
    by_stem: dict[tuple[str, str], list[TraceData]] = defaultdict(list)
    for t in traces:
        by_stem[(str(t.path.parent), capture_stem(t.path))].append(t)
    tracks: dict[TrackKey, list[_Capture]] = defaultdict(list)
    for group in by_stem.values():
        spans = [t for t in group if t.kind == "spans"]
        detail = [t for t in group if t.kind != "spans"]
        tracks[_key(group[0])].append(_Capture(spans or group, detail))
    return tracks


class _Over(OverflowError):
    """The trace being written has passed its budget: stop, plan, write again."""


class _Writer:
    """Appends events to an open Chrome trace file in encoded chunks; counts the JSON bytes
    and stops (``_Over``) past ``limit``."""

    def __init__(self, f: Out | None, limit: int | None = None) -> None:
        self._f = f
        self.limit = limit
        self._pending: list[bytes] = []
        self.count = 0
        self.bytes = 0

    def add(self, event: TraceEvent) -> None:
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
                raise _Over


@dataclass
class _Layout:
    """Everything but the events: the tracks in order, the clock, the window."""

    tracks: list[tuple[int, TrackKey, str, list[_Capture]]]
    offsets: dict[int, float]
    origin: float
    steps: StepWindow
    detail: frozenset[int] | None

    def with_detail(self, key: TrackKey) -> bool:
        return self.detail is None or key.rank in self.detail


def write_timeline(
    traces: Iterable[TraceData],
    out: Path,
    detail: frozenset[int] | None = frozenset(),
    steps: StepWindow = StepWindow(),
    max_bytes: int | None = None,
    fmt: str = "json",
) -> Timeline:
    """Merge ``traces`` into the Chrome trace ``out`` (gzipped when it ends in ``.gz``).

    ``detail``: ranks whose operator and kernel events are added (None: every rank).
    ``max_bytes``: the most bytes of (uncompressed) JSON to write: short operators merged, then
    operators of the slowest rank-steps only, as ``timeline_budget`` plans; None: no limit.
    ``fmt``: ``json`` (Chrome's trace format) or ``perfetto`` (``timeline_perfetto``).
    """
    out = Path(out)
    result = Timeline(out)
    traces = list(traces)
    tracks = _captures(traces)
    offsets, on_steps = _align(traces)
    marked = {id(t) for t in on_steps}
    result.aligned_on_steps = [str(t.path) for t in on_steps]
    result.warnings.extend(_duplicates(tracks))
    origin = min(
        (
            r.ts + offsets[id(t)]
            for cs in tracks.values()
            for c in cs
            for t in c.ranges
            for r in t.ranges
            if steps.everything or r.step in steps
        ),
        default=0.0,
    )
    layout = _Layout([], offsets, origin, steps, detail)
    for pid, key in enumerate(sorted(tracks), start=1):
        label = key.label()
        if any(id(t) in marked for c in tracks[key] for t in c.ranges + c.details):
            label += " (clock: aligned on step starts)"
        result.tracks.append(label)
        layout.tracks.append((pid, key, label, tracks[key]))
    plan, stats = None, None
    if max_bytes is not None and _input_bytes(layout) > 2 * max_bytes:  # surely over
        stats = _stats(layout, result)
        plan = plan_budget(stats[0], stats[1], max_bytes)
    cap = max_bytes or 0
    for attempt in range(6):  # an estimate: written again, with less, until it fits
        try:
            written, tally = _write(out, layout, result, plan, fmt, max_bytes)
            break
        except OverflowError:  # _Over, or the perfetto writer's
            if attempt == 5:
                raise BudgetError(f"over the budget of {cap / 1e6:,.1f} MB after 6 tries") from None
            stats = stats or _stats(layout, result)
            plan = plan_budget(*stats, cap if plan is None else int(cap * 0.85 ** (attempt + 1)))
    if plan is not None and plan.active:
        result.budget = budget_facts(plan, tally, max_bytes, _ranks(layout))
    for path in result.aligned_on_steps:
        result.warnings.append(f"{path}: no clock record; aligned on step starts (track marked)")
    result.bytes = out.stat().st_size
    result.json_bytes = written
    return result


def _write(
    out: Path,
    layout: _Layout,
    result: Timeline,
    plan: Plan | None,
    fmt: str = "json",
    limit: int | None = None,
) -> tuple[int, Tally]:
    """Write the trace (through a temporary file); its bytes (before gzip) and what the budget
    did."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tally = Tally()
    try:
        with gzip.open(tmp, "wb") if out.name.endswith(".gz") else open(tmp, "wb") as f:
            w: _Writer | PerfettoWriter = (
                _Writer(f, limit) if fmt == "json" else PerfettoWriter(f, layout.origin, limit)
            )
            head = b'{"displayTimeUnit": "ms", "traceEvents": [\n' if fmt == "json" else b""
            f.write(head)
            _emit(w, layout, plan, tally)
            w.flush()
            other = {
                "origin_wall_us": layout.origin,
                "tracks": result.tracks,
                "aligned_on_step_starts": result.aligned_on_steps,
                "warnings": result.warnings,
            }
            if plan is not None and plan.active:
                other["budget"] = budget_facts(plan, tally, None, _ranks(layout))
            tail = b""
            if isinstance(w, PerfettoWriter):
                w.other_data(other)
                w.flush()
            else:  # json escapes what msgspec cannot write: a path's non-UTF-8
                tail = b'], "otherData": ' + json.dumps(other).encode() + b"}\n"
                f.write(tail)
            result.events = w.count
        if limit is not None and len(head) + w.bytes + len(tail) > limit:
            raise _Over
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(head) + w.bytes + len(tail), tally


def _emit(
    w: _Writer | PerfettoWriter,
    layout: _Layout,
    plan: Plan | None,
    tally: Tally,
    stats: Stats | None = None,
) -> None:
    """Every track's header, ranges and (unless ``stats`` counts them instead) detail."""
    steps = layout.steps
    for pid, key, label, captures in layout.tracks:
        _header(w, pid, label)
        threads: dict[Thread, int] = {}
        for c in captures:
            span = None if steps.everything else _window_span(c, steps, layout.offsets)
            for t in c.ranges:
                _write_ranges(w, pid, t, layout.offsets[id(t)], layout.origin, steps, span)
            if not layout.with_detail(key) or not (span or steps.everything):
                continue
            step_of = StepOf(
                (r.ts + layout.offsets[id(t)], r.ts + r.dur + layout.offsets[id(t)], r.step)
                for t in c.ranges
                for r in t.ranges
                if r.kind == "step" and r.step is not None
            )
            for t in c.details:
                events = wall_events(t, layout.offsets[id(t)], span)
                if stats is None:
                    write_detail(w.add, pid, events, layout.origin, threads, plan, step_of, tally)
                    continue
                for thread, cat, name, ts, dur in events:
                    stats.add(pid, step_of(ts), thread, name, cat, dur)
            if stats is not None:
                for t in c.ranges:
                    for r in t.ranges:
                        if r.kind == "step" and r.step is not None:
                            cell = (pid, r.step)
                            stats.step_us[cell] = max(stats.step_us.get(cell, 0.0), r.dur)


def _input_bytes(layout: _Layout) -> float:
    """The size of the detail files (a db's: unknown, so infinite), a bound on their events."""
    total = 0.0
    for _, key, _, captures in layout.tracks:
        for c in captures if layout.with_detail(key) else ():
            for t in c.details:
                if t.kind == "db":
                    return float("inf")
                path = t.path / NPU_OUTPUT / "trace_view.json" if t.path.is_dir() else t.path
                total += path.stat().st_size if path.is_file() else 0
    return total


def _stats(layout: _Layout, result: Timeline) -> tuple[Stats, int]:
    """The detail's statistics, and the bytes of everything else."""
    stats = Stats()
    counter = _Writer(None)
    _emit(counter, layout, None, Tally(), stats)
    counter.flush()
    return stats, counter.bytes + 2_000 + len(json.dumps(result.tracks)) + 60 * len(result.warnings)


def _ranks(layout: _Layout) -> dict[int, int | None]:
    """Each track's rank, by pid."""
    return {pid: key.rank for pid, key, _, _ in layout.tracks}


def _duplicates(tracks: dict[TrackKey, list[_Capture]]) -> list[str]:
    hosts: dict[tuple[str, tuple[int, int], int | None], list[str]] = defaultdict(list)
    for key in tracks:
        hosts[(key.role, key.rank_order, key.rank)].append(key.host or "?")
    return [
        f"rank {rank_label(rank)} ({role}) claimed by {len(h)} hosts "
        f"({', '.join(sorted(h))}); kept one track each"
        for (role, _, rank), h in sorted(hosts.items(), key=lambda kv: kv[0][:2])
        if len(h) > 1
    ]


def _header(w: _Writer | PerfettoWriter, pid: int, label: str) -> None:
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
    c: _Capture, steps: StepWindow, offsets: dict[int, float]
) -> tuple[float, float] | None:
    """Wall-clock start and end of the capture's steps inside the window."""
    kept = [
        (r.ts + offsets[id(t)], r.ts + r.dur + offsets[id(t)])
        for t in c.ranges
        for r in t.ranges
        if r.kind == "step" and r.step in steps
    ]
    return (min(a for a, _ in kept), max(b for _, b in kept)) if kept else None


def _write_ranges(
    w: _Writer | PerfettoWriter,
    pid: int,
    data: TraceData,
    offset: float,
    origin: float,
    steps: StepWindow,
    span: tuple[float, float] | None,
) -> None:
    shift = offset - origin
    for r in data.ranges:
        if (
            not steps.everything
            and r.step not in steps
            and not (r.step is None and span is not None and span[0] <= r.ts + offset <= span[1])
        ):
            continue
        tid = THREADS.get(r.kind, THREADS["range"])[0]
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
