"""``SpanRecorder``: a range file fed from a ``RangeBuffer``, complete JSON after every write.

It is whole on disk whatever happens while it is written: after a failed write (a full disk)
it is cut back to the ranges written whole. Steps are written by a thread of its own, so a file
system that stalls never holds a step: what waits is kept in memory up to ``MAX_WAITING``
ranges, and past that dropped (counted, one warning). A file removed while it is written (its
save root deleted) is noticed at the next write: nothing more is written to it, and the next
flush raises. It belongs to the process that opened it: a forked child never writes it.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from pathlib import Path
from time import perf_counter_ns

from mindspeed_prof.capture.buffer import Chunk, Event, Range, RangeBuffer
from mindspeed_prof.capture.trace_file import CLOSED, TAIL, named, trace_body, trace_header
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["HANDOFF_WAIT_S", "MAX_WAITING", "SpanRecorder"]

log = logging.getLogger("mindspeed_prof")

#: Ranges handed to the writer thread and not written yet, at the most (a few MB of memory):
#: past this the file system has stalled for long, and new steps' ranges are dropped.
MAX_WAITING = 100_000
#: How long after the writer's write began (once it has formatted what it holds) hand-offs
#: wait for it: past that (a stalled file system) the steps go on without waiting. Waiting
#: while writes are quick leaves the writer asleep, not runnable, once the step goes on: a
#: ``fork()`` from C (no fork hook runs) then never catches it holding the interpreter's lock.
#: Its formatting (CPU, no file system) is waited for to its end (``_FORMAT_WAIT_NS`` at most):
#: a writer slower than a tight loop of tiny steps keeps up instead of falling behind until
#: ranges are dropped as if the file system had stalled.
HANDOFF_WAIT_S = 0.005
_HANDOFF_WAIT_NS = int(HANDOFF_WAIT_S * 1e9)
#: How long a hand-off waits for the writer's formatting at the most: ``MAX_WAITING`` ranges
#: take about 50 ms; more means the writer is held by something else (a finalizer run by its
#: collection waiting for a lock the step holds), which the step must not wait for.
_FORMAT_WAIT_NS = 500_000_000
_TAIL_TEXT = TAIL.decode()


class SpanRecorder:
    """A range file fed from a ``RangeBuffer``: complete JSON after every write.

    ``flush_due()``, called at every step end, hands what was recorded to the writer thread at
    most once per ``interval_s`` (a clock read otherwise), waiting while the writer formats
    (at most ``MAX_WAITING`` ranges, tens of ms) and up to ``HANDOFF_WAIT_S`` after its write
    began: a trainer's steps (longer than ``interval_s``) are each written as they end, a
    loop of shorter steps ten times a second (each hand-off costs the process about 0.2 ms of
    CPU, the writer's included: 1.2% of an 18 ms step when every step paid it; a process
    killed by SIGKILL loses at most the last 0.1 s of steps, and the step it was in).
    ``flush()`` and ``close()`` wait until everything recorded is written.

    A write that fails (a full disk) cuts the file back to the ranges written whole (complete
    JSON, not closed); nothing more is written to it; the next ``flush_due`` or ``flush``
    raises ``OSError`` naming the file, and ``close`` raises it again (the capture is not
    whole). A file removed while open raises ``FileNotFoundError`` the same way. Only the
    process that opened the file writes it: in a forked child ``flush`` and ``close`` do
    nothing.
    """

    reusable = True

    def __init__(
        self,
        path: Path,
        metadata: CaptureHeader,
        buffer: RangeBuffer | None = None,
        interval_s: float = 0.1,
    ) -> None:
        self.path = path
        self.buffer = RangeBuffer() if buffer is None else buffer
        self.step: int | None = None
        self._pending: list[Chunk] = []
        self._pid = os.getpid()
        self._count = 0
        self._labels: dict[int, tuple[str, ...]] = {}
        self._heads: dict[tuple[int, int], str] = {}  # each (key, thread)'s line start
        self._interval_ns = int(interval_s * 1e9)
        self._due = 0
        self._done = 0  # bytes of the write under way already written
        self._error: OSError | None = None  # what cut the file
        self._told = False  # the error was raised to the caller once
        #: Handed to the writer thread: chunks waiting, and ranges waiting or being written.
        self._cond = threading.Condition()
        self._queue: list[Chunk] = []
        self._waiting = 0
        self._closing = False
        self._writer: threading.Thread | None = None
        self._busy = False  # the writer holds a batch
        self._io_since = 0  # when the writer's write (or the check before it) began; 0: none
        self.dropped = 0  # ranges dropped while the file system stalled
        self._closing_told = False
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
        """Ranges written so far plus those waiting to be written (not those dropped)."""
        waiting = sum(len(e) for _, e in self._pending)
        return self._count + self._waiting + waiting + len(self.buffer.events)

    @property
    def writable(self) -> bool:
        """Open, not cut by a failed write, and this process's (not a forked child's)."""
        return not self._file.closed and self._error is None and os.getpid() == self._pid

    def flush_due(self) -> None:
        if perf_counter_ns() >= self._due:
            self._hand_off()

    def flush(self) -> None:
        """Everything recorded so far written; raises what cut the file (once)."""
        if os.getpid() != self._pid:
            return
        self._hand_off()
        self.wait()
        self._raise_once()

    def wait(self) -> None:
        """Until what was handed to the writer thread is written (or cut)."""
        with self._cond:
            while self._waiting and self._writer is not None and self._writer.is_alive():
                self._cond.wait(0.1)

    def _hand_off(self) -> None:
        """What was recorded, to the writer thread (started on first use); never waits for
        the disk. Past ``MAX_WAITING`` ranges waiting for the disk (it has not taken the last
        hand-off yet), it is dropped and counted; a step larger than that alone (a rollout's
        ranges per token) is handed over whole when nothing waits."""
        if os.getpid() != self._pid:
            return
        self.add(self.step, self.buffer.take())
        self._due = perf_counter_ns() + self._interval_ns
        self._raise_once()
        if not self._pending or not self.writable:
            self._pending = []
            return
        chunks, self._pending = self._pending, []
        n = sum(len(e) for _, e in chunks)
        with self._cond:
            if self._waiting and self._waiting + n > MAX_WAITING:  # the disk is behind
                self.dropped += n
                if self.dropped == n:
                    log.warning(
                        "mindspeed-prof: %s: the file system has not taken the last %d ranges; "
                        "new steps' ranges are dropped (counted) until it does, training goes on",
                        self.path,
                        self._waiting,
                    )
                return
            self._queue.extend(chunks)
            self._waiting += n
            self._cond.notify()
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_loop, name="mindspeed-prof-ranges", daemon=True
                )
                self._writer.start()
            self._wait_for_writer()

    def _wait_for_writer(self) -> None:
        """Until the writer has written what it holds: while it formats (CPU only: it ends; at
        most ``_FORMAT_WAIT_NS``, against a writer held by something else), and for a write up
        to ``HANDOFF_WAIT_S`` after it began (its thread may be waiting for the interpreter's
        lock after a quick write, not for the file system). Holds the condition."""
        writer = self._writer
        give_up = perf_counter_ns() + _FORMAT_WAIT_NS
        while not self._settled() and writer is not None and writer.is_alive():
            since = self._io_since
            left = (since + _HANDOFF_WAIT_NS if since else give_up) - perf_counter_ns()
            if left <= 0:  # a write this long (the file system stalls): the step goes on
                return
            self._cond.wait(min(left, _HANDOFF_WAIT_NS) / 1e9)

    def _settled(self) -> bool:
        return not self._queue and not self._busy

    def _raise_once(self) -> None:
        if self._error is not None and not self._told:
            self._told = True
            raise self._error

    def _write_loop(self) -> None:
        """The writer thread: each batch handed to it, written; ends at ``close``."""
        cond = self._cond
        while True:
            with cond:
                while not self._queue and not self._closing:
                    cond.wait()
                if not self._queue:
                    return
                chunks, self._queue, self._busy = self._queue, [], True
            try:
                if self.writable:
                    self._write(chunks)
            except OSError:
                pass  # kept in ``_error``: the caller's next flush raises it
            except Exception as err:  # a bug, not the disk: the file is not written again
                self._error = OSError(errno.EIO, f"{type(err).__name__}: {err}", str(self.path))
            finally:
                with cond:
                    self._waiting -= sum(len(e) for _, e in chunks)
                    self._busy, self._io_since = False, 0
                    cond.notify_all()

    def _write(self, chunks: list[Chunk]) -> None:
        lines = trace_body(chunks, self.buffer, self._pid, self._labels, self._heads)
        if not lines:
            return
        # the separator and the tail put on the first and last line: one join, one encode,
        # no copy of the whole batch to add them
        lines[0] = ("\n" if not self._count else ",\n") + lines[0]
        lines[-1] += _TAIL_TEXT
        data = ",\n".join(lines).encode()
        size = len(data) - len(TAIL)
        self._io_since = perf_counter_ns()  # from here the file system may stall
        if self._removed():
            self._file.close()
            self._error = FileNotFoundError(
                errno.ENOENT,
                "removed while being written; nothing more is written to it",
                str(self.path),
            )
            raise self._error
        self._replace_tail(data, size)  # the file only grows: nothing is left to truncate
        self._tail_at += size
        self._count += len(lines)

    def _removed(self) -> bool:
        """The open file has no name left (its save root deleted): an ``fstat``, no lookup."""
        try:
            return os.fstat(self._file.fileno()).st_nlink == 0
        except (AttributeError, OSError, ValueError):  # a file object with no descriptor
            return False

    def close(self) -> None:
        """Everything recorded written, the file closed (``CLOSED``); raises what cut it."""
        if os.getpid() != self._pid:
            return
        if self._file.closed and self._error is None:
            return
        try:
            self.flush()
        except OSError:
            pass  # raised below, as every close of a cut file does
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._writer is not None:
            self._writer.join()
        if self.dropped and not self._closing_told:
            self._closing_told = True
            log.warning(
                "mindspeed-prof: %s: %d ranges were dropped while its file system stalled",
                self.path,
                self.dropped,
            )
        if self._error is not None:
            self._file.close()
            raise self._error
        try:
            self._replace_tail(CLOSED, 0)  # longer than TAIL: nothing is left to truncate
        finally:
            self._file.close()

    def _replace_tail(self, data: bytes, size: int) -> None:
        """Write ``data`` (``size`` bytes of ranges, then the file's end) over the tail; when
        that fails, cut the file and raise."""
        self._done = 0
        try:
            self._write_at(self._tail_at, data)
        except OSError as err:
            self._cut(data, size, self._done)
            self._error = named(err, self.path)
            raise self._error from err

    def _cut(self, body: bytes, size: int, done: int) -> None:
        """After a write of ``body`` (its ranges the first ``size`` bytes, then the file's
        end) failed ``done`` bytes in: the file keeps every range
        written whole, its tail is written after the last of them (over bytes already on disk:
        it needs no space), what the write added past it is truncated away, and the file is
        closed for good."""
        limit = max(done, len(TAIL)) - len(TAIL)
        keep = size if limit >= size else max(body.rfind(b",\n", 1, limit + 2), 0)
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
