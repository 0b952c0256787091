"""Range recording: an in-memory buffer of ranges, and a Chrome trace file written from it.

Both kinds of file are whole on disk whatever happens while they are written: a range file is
complete JSON after every write, and after a failed one (a full disk) it is cut back to the
ranges written whole; a dump (``write_trace``) appears under its name only once complete.
A range file belongs to the process that opened it: a forked child never writes it.
"""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from time import perf_counter_ns
from typing import Any, Callable

import msgspec

from mindspeed_prof.formats.header import KIND_SPANS, CaptureHeader, Clock, header_dict

__all__ = [
    "Chunk",
    "Count",
    "Event",
    "ITERATION",
    "ITERATION_RANGE",
    "RangeBuffer",
    "STEP_RANGE",
    "SpanRecorder",
    "trace_body",
    "write_trace",
]

#: A counter's value (``prof.count``): a number, or a list of them (a distribution), with the
#: step and stage it was counted in (None: outside any).
Count = tuple["float | list[float]", "int | None", "str | None"]
#: One recorded range: ``(key, thread, start_ns, end_ns)``: ``key`` the index of its (name,
#: category) in its buffer's ``keys``, ``thread`` the native id of the thread that started it,
#: ``end_ns`` -1 for an instant mark; for a count (category ``count``) a ``Count`` instead
#: (typed ``Any``: an int everywhere but in counts, which ``trace_body`` tells apart).
Event = tuple[int, int, int, Any]
#: Ranges recorded during one step: ``(step, events)``.
Chunk = tuple["int | None", list[Event]]
#: A ``step``-category range of this name is written as ``ProfilerStep#<step>``.
STEP_RANGE = "ProfilerStep"
#: A decode iteration's range (``Profiler.iteration``): category and name ``iteration``, kept
#: in the buffer as ``iteration#<i>`` and written with ``"args": {"step": S, "iteration": i}``.
ITERATION = "iteration"
ITERATION_RANGE = "iteration#"

_TAIL = b"\n]}\n"
#: The end a range file gets when its recorder closes it: a file still ending in ``_TAIL`` was
#: never closed (its process was killed, or is still writing). Files of format 2 and later.
_CLOSED = b'\n], "closed": true}\n'
FORMAT = 2
_CACHE_LIMIT = 4096  # distinct names cached per thread before the cache starts over
#: A range's and an instant mark's line: phase, pid, tid, "cat"/"name", start (and length) in
#: microseconds with three decimals, and the rest (the step).
_RANGE = '{"ph": "%s", "pid": %d, "tid": %d%s, "ts": %d.%03d, "dur": %d.%03d%s'
_MARK = '{"ph": "%s", "pid": %d, "tid": %d%s, "s": "t", "ts": %d.%03d%s'
#: A count's line (a Chrome counter event): its args are the value(s), its step and stage.
_COUNT = '{"ph": "C", "pid": %d, "tid": %d%s, "ts": %d.%03d, "args": {"value%s": %s%s}}'
_PHASES = {"mark": "i", "count": "C"}  # a category's phase; any other category: "X"


class _Range:
    """Reusable context manager for one (name, category, thread): recording a range allocates
    one tuple; nesting and recursion pair correctly (the open start in a slot, the starts of
    the ranges it is nested in on a stack: the usual, unnested range touches no list)."""

    __slots__ = ("_key", "_tid", "_append", "_t0", "_outer")

    def __init__(self, key: int, tid: int, append: Callable[[Event], None]) -> None:
        self._key, self._tid, self._append = key, tid, append
        self._t0 = -1  # the innermost open entry's start; -1: none open
        self._outer: list[int] = []  # the starts of the open entries around it

    def __enter__(self, _now: Callable[[], int] = perf_counter_ns) -> None:
        if self._t0 >= 0:  # entered again inside itself
            self._outer.append(self._t0)
        self._t0 = _now()

    def __exit__(
        self, exc_type: object, exc: object, tb: object, _now: Callable[[], int] = perf_counter_ns
    ) -> None:
        t0, end = self._t0, _now()
        self._t0 = self._outer.pop() if self._outer else -1
        self._append((self._key, self._tid, t0, end))


class RangeBuffer:
    """Ranges of every thread, in memory, until ``take()``: the hot path of all recording.

    ``range(name)`` returns an object cached for (name, category, calling thread), so
    ``mstx`` may cache it too (``reusable``). Names are interned: an event holds a key into
    ``keys`` (name, category), formatted only when written, and its thread's native id. The
    keys grow with the names recorded, never with the threads: a trainer that starts a thread
    per step keeps one key per name.
    """

    reusable = True

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self.events: list[Event] = []
        self.wall0_ns = time.time_ns()
        self.perf0_ns = perf_counter_ns()
        self._ids: dict[tuple[str, str], int] = {}
        self._local = threading.local()
        self._lock = threading.Lock()

    def key(self, name: str, cat: str = "user_annotation") -> int:
        """The key of ``name`` in category ``cat``."""
        k = (name, cat)
        found = self._ids.get(k)
        if found is None:
            with self._lock:
                found = self._ids.get(k)
                if found is None:
                    found = len(self.keys)
                    self.keys.append(k)  # before it is published: a key read has its entry
                    self._ids[k] = found
        return found

    def range(self, name: str, cat: str = "user_annotation") -> _Range:
        cache: dict[tuple[str, str], _Range] | None = getattr(self._local, "ranges", None)
        if cache is None or len(cache) > _CACHE_LIMIT:
            cache = self._local.ranges = {}
        found = cache.get((name, cat))
        if found is None:
            found = cache[(name, cat)] = _Range(
                self.key(name, cat), threading.get_native_id(), self.events.append
            )
        return found

    def mark(self, name: str) -> None:
        self.events.append(
            (self.key(name, "mark"), threading.get_native_id(), perf_counter_ns(), -1)
        )

    def add_count(
        self, name: str, value: float | list[float], step: int | None, stage: str | None
    ) -> None:
        """A checked count (``capture.count``), with the step and stage it was counted in."""
        self.events.append(
            (
                self.key(name, "count"),
                threading.get_native_id(),
                perf_counter_ns(),
                (value, step, stage),
            )
        )

    def range_start(self, name: str, cat: str = "user_annotation") -> tuple[int, int, int]:
        """An id-based range begins: its handle (key, the calling thread, the start time)."""
        return self.key(name, cat), threading.get_native_id(), perf_counter_ns()

    def range_end(self, handle: tuple[int, int, int]) -> None:
        """It ends, on any thread: recorded on the thread that started it."""
        self.events.append((handle[0], handle[1], handle[2], perf_counter_ns()))

    def take(self) -> list[Event]:
        """Every event recorded so far, removed from the buffer (other threads may append)."""
        events = self.events
        n = len(events)
        chunk = events[:n]
        del events[:n]
        return chunk


def trace_body(
    chunks: Iterable[Chunk],
    buffer: RangeBuffer,
    pid: int,
    labels: dict[int, tuple[str, ...]] | None = None,
) -> list[str]:
    """The ``traceEvents`` entries of ``chunks`` as JSON text (hand-formatted: 4x json.dumps).

    ``labels`` caches each key's phase and ``"cat"``/``"name"`` text across calls."""
    labels = {} if labels is None else labels
    keys, offset = buffer.keys, buffer.wall0_ns - buffer.perf0_ns
    out = []
    for step, events in chunks:
        tail = "}" if step is None else f', "args": {{"step": {step}}}}}'
        for key, tid, t0, t1 in events:
            label = labels.get(key)
            if label is None:
                name, cat = keys[key]
                label = (_PHASES.get(cat, "X"), f', "cat": {json.dumps(cat)}, "name": ')
                if cat == "step" and name == STEP_RANGE:  # not cached: the name has the step
                    label = (label[0], f'{label[1]}"{STEP_RANGE}#{step}"')
                elif cat == ITERATION and name.startswith(ITERATION_RANGE):
                    label = labels[key] = (
                        label[0],
                        f'{label[1]}"{ITERATION}"',
                        name[len(ITERATION_RANGE) :],
                    )
                else:
                    label = labels[key] = (label[0], label[1] + json.dumps(name))
            ts = t0 + offset
            if type(t1) is not int:  # a count: its own step, not the chunk's
                out.append(_count_line(pid, tid, label[1], ts, t1))
            elif t1 >= 0:
                dur = t1 - t0
                out.append(
                    _RANGE
                    % (
                        label[0],
                        pid,
                        tid,
                        label[1],
                        ts // 1000,
                        ts % 1000,
                        dur // 1000,
                        dur % 1000,
                        _iteration_tail(step, label[2]) if len(label) > 2 else tail,
                    )
                )
            else:
                out.append(_MARK % (label[0], pid, tid, label[1], ts // 1000, ts % 1000, tail))
    return out


def _count_line(pid: int, tid: int, label: str, ts: int, count: Count) -> str:
    """A count as a Chrome counter event: ``"value"`` (or ``"values"``), step and stage."""
    value, step, stage = count
    more = "" if step is None else f', "step": {step}'
    if stage is not None:
        more += f', "stage": {json.dumps(stage)}'
    return _COUNT % (
        pid,
        tid,
        label,
        ts // 1000,
        ts % 1000,
        "s" if isinstance(value, list) else "",
        json.dumps(value),
        more,
    )


def _iteration_tail(step: int | None, iteration: str) -> str:
    at = "" if step is None else f'"step": {step}, '
    return f', "args": {{{at}"iteration": {iteration}}}}}'


def _header(metadata: CaptureHeader, buffer: RangeBuffer) -> bytes:
    # ts are written on the wall clock: the (wall clock, trace clock) pair at the start is equal
    clock = Clock(wall_ns=buffer.wall0_ns, trace_ns=buffer.wall0_ns)
    block = msgspec.structs.replace(metadata, kind=KIND_SPANS, format=FORMAT, clock=clock)
    head = {
        "schemaVersion": 1,
        "displayTimeUnit": "ms",
        "distributedInfo": {"rank": 0 if metadata.rank is None else metadata.rank},
        "mindspeed_prof": header_dict(block),
    }
    return json.dumps(head)[:-1].encode() + b', "traceEvents": ['


def _named(err: OSError, path: Path) -> OSError:
    """``err`` naming ``path`` (a write's error names no file)."""
    if err.filename is not None or err.errno is None:
        return err
    return OSError(err.errno, err.strerror, str(path))


def write_trace(
    path: Path, chunks: Iterable[Chunk], buffer: RangeBuffer, metadata: CaptureHeader
) -> Path:
    """Write ``chunks`` as one complete range file: written aside, then renamed into place; a
    write that fails (a full disk) leaves nothing behind."""
    body = ",\n".join(trace_body(chunks, buffer, os.getpid()))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(_header(metadata, buffer) + ("\n" + body if body else "").encode() + _CLOSED)
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise _named(err, path) from err
        raise
    return path


class SpanRecorder:
    """A range file fed from a ``RangeBuffer``: complete JSON after every ``flush()``.

    ``flush()`` writes everything recorded so far; ``flush_due()``, called at every step end,
    does so at most once per ``interval_s`` (a clock read otherwise): a trainer's steps are
    each written as they end, a tight loop of tiny steps writes 100 times a second. A process
    killed by SIGKILL loses only what was recorded since the last write.

    A write that fails (a full disk) raises ``OSError`` naming the file, after the file is cut
    back to the ranges written whole (complete JSON, not closed); nothing more is written to
    it, and ``close`` raises that error again (the capture is not whole). Only the process that
    opened the file writes it: in a forked child ``flush`` and ``close`` do nothing.
    """

    reusable = True

    def __init__(
        self,
        path: Path,
        metadata: CaptureHeader,
        buffer: RangeBuffer | None = None,
        interval_s: float = 0.01,
    ) -> None:
        self.path = path
        self.buffer = RangeBuffer() if buffer is None else buffer
        self.step: int | None = None
        self._pending: list[Chunk] = []
        self._pid = os.getpid()
        self._count = 0
        self._labels: dict[int, tuple[str, ...]] = {}
        self._interval_ns = int(interval_s * 1e9)
        self._due = 0
        self._done = 0  # bytes of the write under way already written
        self._error: OSError | None = None  # what cut the file
        path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered, written at explicit offsets: nothing waits in memory to be written by a
        # later flush (or by a forked child's exit), and every write's extent is known.
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - kept open for appends
        header = _header(metadata, self.buffer)
        try:
            self._write_at(0, header + _TAIL)
        except OSError as err:  # not even the header fits: the file is removed
            self._file.close()
            path.unlink(missing_ok=True)
            raise _named(err, path) from err
        self._tail_at = len(header)

    def range(self, name: str, cat: str = "user_annotation") -> _Range:
        return self.buffer.range(name, cat)

    def mark(self, name: str) -> None:
        self.buffer.mark(name)

    def range_start(self, name: str, cat: str = "user_annotation") -> tuple[int, int, int]:
        return self.buffer.range_start(name, cat)

    def range_end(self, handle: tuple[int, int, int]) -> None:
        self.buffer.range_end(handle)

    def add(self, step: int | None, events: list[Event]) -> None:
        """Queue ``events`` of ``step`` (taken from the buffer by their owner) for writing."""
        if events:
            self._pending.append((step, events))

    @property
    def count(self) -> int:
        """Ranges written so far plus those waiting for the next flush."""
        waiting = sum(len(e) for _, e in self._pending)
        return self._count + waiting + len(self.buffer.events)

    @property
    def writable(self) -> bool:
        """Open, not cut by a failed write, and this process's (not a forked child's)."""
        return not self._file.closed and os.getpid() == self._pid

    def flush_due(self) -> None:
        if perf_counter_ns() >= self._due:
            self.flush()

    def flush(self) -> None:
        self.add(self.step, self.buffer.take())
        self._due = perf_counter_ns() + self._interval_ns
        if not self._pending or not self.writable:
            return
        chunks, self._pending = self._pending, []
        lines = trace_body(chunks, self.buffer, self._pid, self._labels)
        body = ((",\n" if self._count else "\n") + ",\n".join(lines)).encode()
        self._replace_tail(body, _TAIL)  # the file only grows: nothing is left to truncate
        self._tail_at += len(body)
        self._count += len(lines)

    def close(self) -> None:
        if os.getpid() != self._pid:
            return
        if self._error is not None:
            raise self._error
        if self._file.closed:
            return
        try:
            self.flush()
            self._replace_tail(b"", _CLOSED)  # longer than _TAIL: nothing is left to truncate
        finally:
            self._file.close()

    def _replace_tail(self, body: bytes, end: bytes) -> None:
        """Write ``body + end`` over the tail; when that fails, cut the file and raise."""
        self._done = 0
        try:
            self._write_at(self._tail_at, body + end)
        except OSError as err:
            self._cut(body, self._done)
            self._error = _named(err, self.path)
            raise self._error from err

    def _cut(self, body: bytes, done: int) -> None:
        """After a write of ``body`` failed ``done`` bytes in: the file keeps every range
        written whole, its tail is written after the last of them (over bytes already on disk:
        it needs no space), what the write added past it is truncated away, and the file is
        closed for good."""
        limit = max(done, len(_TAIL)) - len(_TAIL)
        keep = len(body) if limit >= len(body) else max(body.rfind(b",\n", 1, limit + 2), 0)
        at = self._tail_at + keep
        try:
            self._write_at(at, _TAIL)
            self._file.truncate(at + len(_TAIL))
        except OSError:
            pass  # the error being raised says what went wrong
        finally:
            self._file.close()
        self._tail_at = at
        self._count += body.count(b"\n", 0, keep)  # a line starts after each

    def _write_at(self, offset: int, data: bytes) -> None:
        """``data`` written at ``offset``; ``_done`` counts the bytes written so far."""
        view = memoryview(data)
        self._file.seek(offset)
        done = 0
        while done < len(view):
            written = self._file.write(view[done:])
            if not written:  # a raw file may write part, or (never for a regular file) none
                raise OSError(errno.EIO, "write made no progress")
            done += written
            self._done = done
