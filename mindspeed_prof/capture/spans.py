"""``SpanRecorder``: a range file fed from a ``RangeBuffer``, complete JSON after every write.

It is whole on disk whatever happens while it is written: after a failed write (a full disk)
it is cut back to the ranges written whole. It belongs to the process that opened it: a forked
child never writes it.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from time import perf_counter_ns

from mindspeed_prof.capture.buffer import Chunk, Event, Range, RangeBuffer
from mindspeed_prof.capture.trace_file import CLOSED, TAIL, named, trace_body, trace_header
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["SpanRecorder"]


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
        header = trace_header(metadata, self.buffer)  # before the file: a bad header opens none
        path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered, written at explicit offsets: nothing waits in memory to be written by a
        # later flush (or by a forked child's exit), and every write's extent is known.
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115 - kept open for appends
        try:
            self._write_at(0, header + TAIL)
        except OSError as err:  # not even the header fits: the file is removed
            self._file.close()
            path.unlink(missing_ok=True)
            raise named(err, path) from err
        self._tail_at = len(header)

    def range(self, name: str, cat: str = "user_annotation") -> Range:
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
        self._replace_tail(body, TAIL)  # the file only grows: nothing is left to truncate
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
            self._replace_tail(b"", CLOSED)  # longer than TAIL: nothing is left to truncate
        finally:
            self._file.close()

    def _replace_tail(self, body: bytes, end: bytes) -> None:
        """Write ``body + end`` over the tail; when that fails, cut the file and raise."""
        self._done = 0
        try:
            self._write_at(self._tail_at, body + end)
        except OSError as err:
            self._cut(body, self._done)
            self._error = named(err, self.path)
            raise self._error from err

    def _cut(self, body: bytes, done: int) -> None:
        """After a write of ``body`` failed ``done`` bytes in: the file keeps every range
        written whole, its tail is written after the last of them (over bytes already on disk:
        it needs no space), what the write added past it is truncated away, and the file is
        closed for good."""
        limit = max(done, len(TAIL)) - len(TAIL)
        keep = len(body) if limit >= len(body) else max(body.rfind(b",\n", 1, limit + 2), 0)
        at = self._tail_at + keep
        try:
            self._write_at(at, TAIL)
            self._file.truncate(at + len(TAIL))
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
