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
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.readers.events import DEVICE_CATS
from mindspeed_prof.analysis.readers.model import rank_label, rank_order
from mindspeed_prof.formats import NPU_OUTPUT, capture_stem

__all__ = ["StepWindow", "Timeline", "parse_ranks", "parse_steps", "write_timeline"]

#: Roles in the order an RL loop runs them; other roles follow alphabetically.
ROLE_ORDER = ("integrated", "actor", "rollout", "reference", "critic", "reward", "driver")
THREADS = {"step": (1, "steps"), "stage": (2, "stages"), "range": (3, "ranges")}
_DETAIL_TID = 10
_SKIP_DETAIL = frozenset({"user_annotation", "gpu_user_annotation", "stage", "step", "mark"})
_DEVICE_CATS = DEVICE_CATS | {""}  # torch_npu's device events have no category
_HOST_IN_STEM = re.compile(r"^rank\d+_(.+)_\d+_step\d+")
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
        return " · ".join([f"rank {rank_label(self.rank)}", self.role]
                          + ([self.host] if self.host else []))


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


def _role_order(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def _key(data: TraceData) -> TrackKey:
    role = data.meta.role if data.meta.role is not None else data.group
    host = data.meta.host
    if host is None:
        m = _HOST_IN_STEM.match(data.path.name)
        host = m.group(1) if m else ""
    return TrackKey(_role_order(str(role)), rank_order(data.rank), host, data.rank)


def clock_offset_us(data: TraceData) -> float | None:
    """Microseconds to add to this capture's ``ts`` for wall-clock time; None without a record."""
    clock = data.meta.clock
    if clock is not None and clock.wall_ns is not None and clock.trace_ns is not None:
        return (clock.wall_ns - clock.trace_ns) / 1000.0
    base = data.meta.base_time_ns
    if base is not None:
        return base / 1000.0
    if data.kind == "npu":  # torch_npu converts its device clock to wall-clock microseconds
        return 0.0
    return None


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


def _step_starts(data: TraceData) -> dict[int, float]:
    starts: dict[int, float] = {}
    for r in data.ranges:
        if r.kind == "step" and r.step is not None:
            starts[r.step] = min(r.ts, starts.get(r.step, r.ts))
    return starts


def _align(traces: list[TraceData]) -> tuple[dict[int, float], list[TraceData]]:
    """Per trace (by ``id``), the microseconds that put its ``ts`` on the wall clock: from its
    clock record, or else on the step starts of the traces aligned before it, in rank order
    (never the order the files were found in; returned too)."""
    offsets: dict[int, float] = {}
    reference: dict[int, list[float]] = defaultdict(list)
    on_steps = []
    for t in traces:
        offset = clock_offset_us(t)
        if offset is None:
            on_steps.append(t)
            continue
        offsets[id(t)] = offset
        for step, ts in _step_starts(t).items():
            reference[step].append(ts + offset)
    for t in sorted(on_steps, key=lambda t: (rank_order(t.rank), t.source)):
        starts = _step_starts(t)
        common = [s for s in starts if s in reference]
        if common:
            offset = statistics.median(statistics.median(reference[s]) - starts[s]
                                       for s in common)
        elif reference or not starts:  # no step in common: put its start at the first one
            first = min((ts for ts_list in reference.values() for ts in ts_list), default=0.0)
            offset = first - min((r.ts for r in t.ranges), default=0.0)
        else:  # nothing aligned yet: this trace's own clock sets the axis for the rest
            offset = 0.0
        offsets[id(t)] = offset
        for step, ts in starts.items():
            reference[step].append(ts + offset)
    return offsets, on_steps


class _Writer:
    """Appends events to an open Chrome trace file in encoded chunks."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self._pending: list[bytes] = []
        self.count = 0

    def add(self, event: dict[str, Any]) -> None:
        self._pending.append(_encode(event))
        if len(self._pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._f.write((b"," if self.count else b"") + b",\n".join(self._pending) + b"\n")
            self.count += len(self._pending)
            self._pending = []


def write_timeline(traces: Iterable[TraceData], out: Path,
                   detail: frozenset[int] | None = frozenset(),
                   steps: StepWindow = StepWindow()) -> Timeline:
    """Merge ``traces`` into the Chrome trace ``out`` (gzipped when it ends in ``.gz``).

    ``detail``: ranks whose operator and kernel events are added (None: every rank).
    """
    out = Path(out)
    result = Timeline(out)
    traces = list(traces)
    tracks = _captures(traces)
    offsets, on_steps = _align(traces)
    marked = {id(t) for t in on_steps}
    result.aligned_on_steps = [str(t.path) for t in on_steps]
    result.warnings.extend(_duplicates(tracks))
    origin = min((r.ts + offsets[id(t)] for cs in tracks.values() for c in cs for t in c.ranges
                  for r in t.ranges if steps.everything or r.step in steps), default=0.0)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    opener: Any = gzip.open if out.name.endswith(".gz") else open
    try:
        with opener(tmp, "wb") as f:
            f.write(b'{"displayTimeUnit": "ms", "traceEvents": [\n')
            w = _Writer(f)
            for pid, key in enumerate(sorted(tracks), start=1):
                captures = tracks[key]
                label = key.label()
                if any(id(t) in marked for c in captures for t in c.ranges + c.details):
                    label += " (clock: aligned on step starts)"
                result.tracks.append(label)
                _header(w, pid, label)
                with_detail = detail is None or key.rank in detail
                threads: dict[tuple[Any, Any], int] = {}
                for c in captures:
                    span = None if steps.everything else _window_span(c, steps, offsets)
                    for t in c.ranges:
                        _write_ranges(w, pid, t, offsets[id(t)], origin, steps, span)
                    for t in c.details if with_detail and (span or steps.everything) else ():
                        _write_detail(w, pid, t, offsets[id(t)], origin, span, threads)
            w.flush()
            other = {"origin_wall_us": origin, "tracks": result.tracks,
                     "aligned_on_step_starts": result.aligned_on_steps,
                     "warnings": result.warnings}
            # json escapes what msgspec cannot write: a path's bytes that are not UTF-8
            f.write(b'], "otherData": ' + json.dumps(other).encode() + b"}\n")
            result.events = w.count
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    for path in result.aligned_on_steps:
        result.warnings.append(f"{path}: no clock record; aligned on step starts (track marked)")
    result.bytes = out.stat().st_size
    return result


def _duplicates(tracks: dict[TrackKey, list[_Capture]]) -> list[str]:
    hosts: dict[tuple[str, tuple[int, int], int | None], list[str]] = defaultdict(list)
    for key in tracks:
        hosts[(key.role, key.rank_order, key.rank)].append(key.host or "?")
    return [f"rank {rank_label(rank)} ({role}) claimed by {len(h)} hosts "
            f"({', '.join(sorted(h))}); kept one track each"
            for (role, _, rank), h in sorted(hosts.items(), key=lambda kv: kv[0][:2])
            if len(h) > 1]


def _header(w: _Writer, pid: int, label: str) -> None:
    w.add({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": label}})
    w.add({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
    for tid, name in THREADS.values():
        w.add({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        w.add({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
               "args": {"sort_index": tid}})


def _window_span(c: _Capture, steps: StepWindow,
                 offsets: dict[int, float]) -> tuple[float, float] | None:
    """Wall-clock start and end of the capture's steps inside the window."""
    kept = [(r.ts + offsets[id(t)], r.ts + r.dur + offsets[id(t)]) for t in c.ranges
            for r in t.ranges if r.kind == "step" and r.step in steps]
    return (min(a for a, _ in kept), max(b for _, b in kept)) if kept else None


def _write_ranges(w: _Writer, pid: int, data: TraceData, offset: float, origin: float,
                  steps: StepWindow, span: tuple[float, float] | None) -> None:
    shift = offset - origin
    for r in data.ranges:
        if not steps.everything and r.step not in steps and not (
                r.step is None and span is not None and span[0] <= r.ts + offset <= span[1]):
            continue
        tid = THREADS.get(r.kind, THREADS["range"])[0]
        event: dict[str, Any] = {"ph": "X", "pid": pid, "tid": tid, "name": r.name,
                                 "ts": round(r.ts + shift, 3), "dur": round(r.dur, 3)}
        if r.step is not None:
            event["args"] = {"step": r.step}
        w.add(event)


def _write_detail(w: _Writer, pid: int, data: TraceData, offset: float, origin: float,
                  span: tuple[float, float] | None, threads: dict[tuple[Any, Any], int]) -> None:
    shift = offset - origin
    for cat, name, ts, dur, opid, otid in _raw_events(data):
        if cat in _SKIP_DETAIL or name.startswith("ProfilerStep#"):
            continue
        if span is not None and not span[0] <= ts + offset <= span[1]:
            continue
        tid = threads.get((opid, otid))
        if tid is None:
            tid = threads[(opid, otid)] = _DETAIL_TID + len(threads)
            kind = "device" if cat in _DEVICE_CATS else "host"
            w.add({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                   "args": {"name": f"{kind} {opid}/{otid}"}})
            w.add({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                   "args": {"sort_index": tid}})
        w.add({"ph": "X", "pid": pid, "tid": tid, "cat": cat, "name": name,
               "ts": round(ts + shift, 3), "dur": round(dur, 3)})


def _raw_events(data: TraceData) -> Iterator[tuple[str, str, float, float, Any, Any]]:
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
