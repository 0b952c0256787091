"""Range recording: an in-memory buffer of ranges, and a Chrome trace file written from it."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from time import perf_counter_ns
from typing import Any, Callable

__all__ = ["Chunk", "Event", "RangeBuffer", "STEP_RANGE", "SpanRecorder", "trace_body",
           "write_trace"]

#: One recorded range: ``(key, start_ns, end_ns)``; ``end_ns`` is -1 for an instant mark.
Event = tuple[int, int, int]
#: Ranges recorded during one step: ``(step, events)``.
Chunk = tuple["int | None", list[Event]]
#: A ``step``-category range of this name is written as ``ProfilerStep#<step>``.
STEP_RANGE = "ProfilerStep"

_TAIL = b"\n]}\n"
#: The end a range file gets when its recorder closes it: a file still ending in ``_TAIL`` was
#: never closed (its process was killed, or is still writing). Files of format 2 and later.
_CLOSED = b'\n], "closed": true}\n'
FORMAT = 2
_CACHE_LIMIT = 4096  # distinct names cached per thread before the cache starts over


class _Range:
    """Reusable context manager for one (name, category, thread): recording a range allocates
    one tuple; nesting and recursion pair correctly (a stack of start times)."""

    __slots__ = ("_key", "_push", "_pop", "_append")

    def __init__(self, key: int, append: Callable[[Event], None]) -> None:
        starts: list[int] = []
        self._key, self._push, self._pop, self._append = key, starts.append, starts.pop, append

    def __enter__(self, _now: Callable[[], int] = perf_counter_ns) -> None:
        self._push(_now())

    def __exit__(self, exc_type: object, exc: object, tb: object,
                 _now: Callable[[], int] = perf_counter_ns) -> None:
        self._append((self._key, self._pop(), _now()))


class RangeBuffer:
    """Ranges of every thread, in memory, until ``take()``: the hot path of all recording.

    ``range(name)`` returns an object cached for (name, category, calling thread), so
    ``mstx`` may cache it too (``reusable``). Names are interned: an event holds a key into
    ``keys`` (name, category, native thread id), formatted only when written.
    """

    reusable = True

    def __init__(self) -> None:
        self.keys: list[tuple[str, str, int]] = []
        self.events: list[Event] = []
        self.wall0_ns = time.time_ns()
        self.perf0_ns = perf_counter_ns()
        self._ids: dict[tuple[str, str, int], int] = {}
        self._local = threading.local()
        self._lock = threading.Lock()

    def key(self, name: str, cat: str = "user_annotation") -> int:
        """The key of ``name`` in category ``cat`` on the calling thread."""
        k = (name, cat, threading.get_native_id())
        with self._lock:
            found = self._ids.get(k)
            if found is None:
                found = self._ids[k] = len(self.keys)
                self.keys.append(k)
        return found

    def range(self, name: str, cat: str = "user_annotation") -> _Range:
        cache: dict[tuple[str, str], _Range] | None = getattr(self._local, "ranges", None)
        if cache is None or len(cache) > _CACHE_LIMIT:
            cache = self._local.ranges = {}
        found = cache.get((name, cat))
        if found is None:
            found = cache[(name, cat)] = _Range(self.key(name, cat), self.events.append)
        return found

    def mark(self, name: str) -> None:
        self.events.append((self.key(name, "mark"), perf_counter_ns(), -1))

    def take(self) -> list[Event]:
        """Every event recorded so far, removed from the buffer (other threads may append)."""
        events = self.events
        n = len(events)
        chunk = events[:n]
        del events[:n]
        return chunk


def trace_body(chunks: Iterable[Chunk], buffer: RangeBuffer, pid: int,
               labels: dict[int, str] | None = None) -> list[str]:
    """The ``traceEvents`` entries of ``chunks`` as JSON text (hand-formatted: 4x json.dumps)."""
    labels = {} if labels is None else labels
    keys, offset = buffer.keys, buffer.wall0_ns - buffer.perf0_ns
    out = []
    for step, events in chunks:
        tail = "}" if step is None else f', "args": {{"step": {step}}}}}'
        for key, t0, t1 in events:
            label = labels.get(key)
            if label is None:
                name, cat, tid = keys[key]
                head = (f'{{"ph": "{"i" if cat == "mark" else "X"}", "pid": {pid}, '
                        f'"tid": {tid}, "cat": {json.dumps(cat)}, "name": ')
                if cat == "step" and name == STEP_RANGE:  # not cached: the name has the step
                    label = f'{head}"{STEP_RANGE}#{step}"'
                else:
                    label = labels[key] = head + json.dumps(name)
            ts = t0 + offset
            if t1 >= 0:
                dur = t1 - t0
                out.append('%s, "ts": %d.%03d, "dur": %d.%03d%s' % (
                    label, ts // 1000, ts % 1000, dur // 1000, dur % 1000, tail))
            else:
                out.append('%s, "s": "t", "ts": %d.%03d%s' % (label, ts // 1000, ts % 1000, tail))
    return out


def _header(metadata: dict[str, Any], buffer: RangeBuffer) -> bytes:
    # ts are written on the wall clock: the (wall clock, trace clock) pair at the start is equal
    clock = {"wall_ns": buffer.wall0_ns, "trace_ns": buffer.wall0_ns}
    head = {"schemaVersion": 1, "displayTimeUnit": "ms",
            "distributedInfo": {"rank": metadata.get("rank", 0)},
            "mindspeed_prof": {"kind": "spans", "format": FORMAT, **metadata, "clock": clock}}
    return json.dumps(head)[:-1].encode() + b', "traceEvents": ['


def write_trace(path: Path, chunks: Iterable[Chunk], buffer: RangeBuffer,
                metadata: dict[str, Any]) -> Path:
    """Write ``chunks`` as one complete range file (written aside, then renamed into place)."""
    body = ",\n".join(trace_body(chunks, buffer, os.getpid()))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(_header(metadata, buffer) + ("\n" + body if body else "").encode() + _CLOSED)
    os.replace(tmp, path)
    return path


class SpanRecorder:
    """A range file fed from a ``RangeBuffer``: complete JSON after every ``flush()``.

    ``flush()`` writes everything recorded so far; ``flush_due()``, called at every step end,
    does so at most once per ``interval_s`` (a clock read otherwise): a trainer's steps are
    each written as they end, a tight loop of tiny steps writes 100 times a second. A process
    killed by SIGKILL loses only what was recorded since the last write.
    """

    reusable = True

    def __init__(self, path: Path, metadata: dict[str, Any], buffer: RangeBuffer | None = None,
                 interval_s: float = 0.01) -> None:
        self.path = path
        self.buffer = RangeBuffer() if buffer is None else buffer
        self.step: int | None = None
        self._pending: list[Chunk] = []
        self._pid = os.getpid()
        self._count = 0
        self._labels: dict[int, str] = {}
        self._interval_ns = int(interval_s * 1e9)
        self._due = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 - kept open for in-place appends
        self._file.write(_header(metadata, self.buffer))
        self._tail_at = self._file.tell()
        self._file.write(_TAIL)
        self._file.flush()

    def range(self, name: str, cat: str = "user_annotation") -> _Range:
        return self.buffer.range(name, cat)

    def mark(self, name: str) -> None:
        self.buffer.mark(name)

    def add(self, step: int | None, events: list[Event]) -> None:
        """Queue ``events`` of ``step`` (taken from the buffer by their owner) for writing."""
        if events:
            self._pending.append((step, events))

    @property
    def count(self) -> int:
        """Ranges written so far plus those waiting for the next flush."""
        waiting = sum(len(e) for _, e in self._pending)
        return self._count + waiting + len(self.buffer.events)

    def flush_due(self) -> None:
        if perf_counter_ns() >= self._due:
            self.flush()

    def flush(self) -> None:
        self.add(self.step, self.buffer.take())
        self._due = perf_counter_ns() + self._interval_ns
        if self._file.closed or not self._pending:
            return
        chunks, self._pending = self._pending, []
        lines = trace_body(chunks, self.buffer, self._pid, self._labels)
        body = ((",\n" if self._count else "\n") + ",\n".join(lines)).encode()
        # One write over the old tail: the file only grows, so nothing is left to truncate.
        self._file.seek(self._tail_at)
        self._file.write(body + _TAIL)
        self._file.flush()
        self._tail_at += len(body)
        self._count += len(lines)

    def close(self) -> None:
        if not self._file.closed:
            try:
                self.flush()
                self._file.seek(self._tail_at)
                self._file.write(_CLOSED)  # longer than _TAIL: nothing is left to truncate
            finally:
                self._file.close()
