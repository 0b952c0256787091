"""A Chrome trace's JSON decoded a slice of events at a time, so memory does not grow with it.

The ``traceEvents`` array (or a bare JSON Array Format list) is read ``CHUNK`` bytes at a time.
Each buffer is cut after its last whole event, found by looking back for ``}`` ``,`` ``{``; a
cut inside a string or a nested object leaves an unbalanced prefix, which never decodes, so the
cut before it is tried, and after a few misses a scan that skips strings finds the last event's
end for certain. What precedes the array (Kineto writes ``schemaVersion``, ``deviceProperties``,
``distributedInfo`` first) is kept, and at the end of the file it is decoded again with the last
events and whatever follows the array (``baseTimeNanoseconds``, ``traceName``): one small
document. A compressed file (gzip or xz, told by its first bytes, whatever its name) stops with
``BadFile`` once it inflates past ``max_inflate()`` times its size.
"""

from __future__ import annotations

import gzip
import lzma
import os
import re
from collections.abc import Callable, Iterator
from io import BufferedIOBase
from pathlib import Path
from typing import Generic, TypeVar

import msgspec

from mindspeed_prof.analysis.readers.model import BadFile
from mindspeed_prof.analysis.readers.window import Window

__all__ = [
    "CHUNK",
    "INFLATE_ENV",
    "MAX_PIECE",
    "TraceStream",
    "compression",
    "max_inflate",
    "open_bytes",
]

#: Bytes read at a time: a slice's events (some 13,000) stay in the cache while folded.
CHUNK = 2 << 20
#: The most bytes one event, or the document's parts before and after the array, may take.
MAX_PIECE = 64 << 20
#: Environment variable: how many times its own size a compressed file may inflate to (0: none).
INFLATE_ENV = "MINDSPEED_PROF_MAX_INFLATE"
_INFLATE = 100
_FLOOR = 64 << 20  # any compressed file may inflate to this much, whatever its ratio
#: How a compressed file opens for reading bytes; the formats by their first bytes.
Opener = Callable[[Path], BufferedIOBase]
_MAGIC: dict[bytes, Opener] = {b"\x1f\x8b": gzip.GzipFile, b"\xfd7zXZ\x00": lzma.LZMAFile}
_TRIES = 3  # cuts tried from the end before scanning
_KEY = b'"traceEvents"'
_OPEN = re.compile(rb"\s*:\s*\[")
_COMMA = re.compile(rb"\s*,")
_WS = b" \t\r\n"
#: A string (to its end, closed or not), or a bracket (or, for ``_ELEMENT``, a comma).
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[][{}]', re.DOTALL)
_ELEMENT = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[][{},]', re.DOTALL)

E = TypeVar("E")
T = TypeVar("T")


def max_inflate() -> float:
    """``MINDSPEED_PROF_MAX_INFLATE`` (default 100); 0 or less: no limit."""
    raw = os.environ.get(INFLATE_ENV, "").strip()
    try:
        ratio = float(raw) if raw else _INFLATE
    except ValueError:
        raise BadFile(f"{INFLATE_ENV}={raw!r}: expected a number (0 for no limit)") from None
    return ratio if ratio > 0 else float("inf")


def compression(path: Path) -> Opener | None:
    """How ``path`` decompresses (``GzipFile``, ``LZMAFile``), told by its first bytes; None
    for a plain file."""
    with open(path, "rb") as f:
        head = f.read(6)
    return next((opener for magic, opener in _MAGIC.items() if head.startswith(magic)), None)


def open_bytes(path: Path) -> BufferedIOBase:
    """``path`` opened for reading bytes, decompressed when it is gzip or xz (by content)."""
    opener = compression(path)
    return opener(path) if opener is not None else open(path, "rb")


def _candidates(buf: bytes | bytearray, end: int) -> Iterator[int]:
    """Ends of ``}`` followed by ``,`` and ``{`` (whitespace between) in ``buf[:end]``, last
    first."""
    pos = end
    while (pos := buf.rfind(b"{", 0, pos)) > 0:
        j = pos - 1
        while j >= 0 and buf[j] in _WS:
            j -= 1
        if j < 0 or buf[j] != 0x2C:  # ','
            continue
        j -= 1
        while j >= 0 and buf[j] in _WS:
            j -= 1
        if j >= 0 and buf[j] == 0x7D:  # '}'
            yield j + 1


def _scan(buf: bytes) -> tuple[int, bool]:
    """Where ``buf`` can be cut: after its last whole top-level object that a comma follows, or
    when the array closes in ``buf``, at its ``]``; -1: nowhere yet. And whether the array
    closes."""
    depth, last, end = 0, -1, 0
    for m in _TOKEN.finditer(buf):
        c = buf[m.start()]
        if c == 0x22:  # a string
            continue
        if c in b"[{":
            depth += 1
            continue
        depth -= 1
        if depth < 0:  # the array's own ``]``: everything before it is its values
            return m.start(), True
        if depth == 0 and c == 0x7D:
            end = m.end()
            if _COMMA.match(buf, end):
                last = end
    return last, False


def _elements(buf: bytes, at: int) -> Iterator[tuple[int, int]]:
    """Where each top-level value of ``buf[:at]`` (values separated by commas) starts and ends;
    strings skipped, so a comma or bracket inside one does not count."""
    depth, start = 0, 0
    for m in _ELEMENT.finditer(buf, 0, at):
        c = buf[m.start()]
        if c == 0x22:  # a string
            continue
        if c in b"[{":
            depth += 1
        elif c in b"]}":
            depth = max(depth - 1, 0)
        elif depth == 0:  # a comma between two values
            yield start, m.start()
            start = m.end()
    yield start, at


def _array(buf: bytes, at: int) -> bytearray:
    """``[`` + ``buf[:at]`` + ``]`` with one copy."""
    doc = bytearray(b"[")
    doc += memoryview(buf)[:at]
    doc += b"]"
    return doc


#: Kineto's last member, the path it wrote to, unescaped (a tab, ``"``, ``\\`` or a byte that is
#: no UTF-8 in the save root): dropped where the document's end does not decode with it.
_TRACE_NAME = re.compile(rb'\s*,\s*"traceName"\s*:\s*".*"\s*\}\s*\Z', re.S)


class TraceStream(Generic[E, T]):
    """The events of ``path`` in batches (``batches()``); then ``top``: the document without
    its events (None for a bare list). ``top_type`` has a ``traceEvents`` list of ``event``."""

    def __init__(self, path: Path, event: type[E], top_type: type[T]) -> None:
        self.path = path
        self.top: T | None = None
        #: Events that are not valid JSON (``NaN``, a broken value) or not events, left out
        #: one at a time; the first one's start, to name it.
        self.bad_events = 0
        self.first_bad = ""
        self._events = msgspec.json.Decoder(list[event])  # type: ignore[valid-type]
        self._event = msgspec.json.Decoder(event)
        self._top = msgspec.json.Decoder(top_type)
        self._eof = False
        self._compressed = False
        self._readinto: Callable[[memoryview], int] = lambda into: 0
        self._total = 0  # bytes read (decompressed)

    def problems(self) -> list[str]:
        """One line naming the file, when events were left out."""
        if not self.bad_events:
            return []
        return [
            f"{self.path}: {self.bad_events:,} events not valid JSON or not events, left "
            f"out (first: {self.first_bad!r})"
        ]

    def _decode(self, buf: bytes, at: int) -> list[E]:
        """The events of ``buf[:at]`` (whole events separated by commas): decoded together,
        or, when that fails, one at a time, leaving out those that do not decode."""
        try:
            return self._events.decode(_array(buf, at))
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        out: list[E] = []
        for lo, hi in _elements(buf, at):
            if not bytes(buf[lo:hi]).strip():
                continue
            try:
                out.append(self._event.decode(memoryview(buf)[lo:hi]))
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.bad_events += 1
                if not self.first_bad:
                    self.first_bad = (
                        bytes(buf[lo : min(hi, lo + 60)]).strip().decode("utf-8", "replace")
                    )
        return out

    def batches(self) -> Iterator[list[E]]:
        self._compressed = compression(self.path) is not None
        with open_bytes(self.path) as f:
            read = self._reader(f)
            buf = read().lstrip()
            if not buf.startswith((b"{", b"[")):
                raise BadFile(f"{self.path}: not JSON (starts with {buf[:8]!r})")
            if buf.startswith(b"["):
                header, buf = None, buf[1:]
            else:
                header, buf = self._header(buf, read)
                if header is None:  # no array of events: a small document, read whole
                    self.top = self._top.decode(buf)
                    yield from self._take_events()
                    return
            left = None if self._compressed else max(os.fstat(f.fileno()).st_size - self._total, 0)
            win = Window(buf, self._readinto, left, CHUNK)
            ended = False
            while True:
                cut = None if ended else self._cut(win)
                if cut is not None:
                    events, at, ended = cut
                    yield events
                    del events
                    if not ended:  # drop the comma before the next event
                        at = _COMMA.match(win.buf, at, win.n).end()  # type: ignore[union-attr]
                    win.drop(at)
                if self._eof:
                    break
                win.fill()
                if ended and win.n - 1 > MAX_PIECE:
                    raise BadFile(
                        f"{self.path}: more than {MAX_PIECE} bytes after traceEvents; refused"
                    )
            buf = win.data()
        yield from self._last(header, buf)

    def _reader(self, f: BufferedIOBase) -> Callable[[], bytes]:
        """``read()``: the next chunk; sets ``_eof``; refuses a decompression bomb. Sets
        ``_readinto``: the same, into a buffer given (how many bytes it got)."""
        limit = float("inf")
        if self._compressed:
            limit = max(max_inflate() * self.path.stat().st_size, _FLOOR)
        self._total = 0

        def got(n: int) -> None:
            self._total += n
            self._eof = not n
            if self._total > limit:
                raise BadFile(
                    f"{self.path}: inflates to more than {limit / 1e6:.0f} MB "
                    f"({max_inflate():g}x its size); refused as a decompression "
                    f"bomb ({INFLATE_ENV} sets the ratio, 0 for no limit)"
                )

        def read() -> bytes:
            got(len(chunk := f.read(CHUNK)))
            return chunk

        def readinto(into: memoryview) -> int:
            got(n := f.readinto(into))
            return n

        self._readinto = readinto
        return read

    def _header(self, buf: bytes, read: Callable[[], bytes]) -> tuple[bytes | None, bytes]:
        """The document before ``"traceEvents"`` (checked to be a well-formed start of it) and
        the buffer after its ``[``; (None, the whole file) when the file ends without one."""
        pos = 0
        while True:
            i = buf.find(_KEY, pos)
            if i < 0 or len(buf) - i < 64:
                if self._eof:
                    if i < 0:
                        return None, buf
                elif len(buf) > MAX_PIECE:
                    raise BadFile(
                        f"{self.path}: no traceEvents array in its first {MAX_PIECE} bytes; refused"
                    )
                else:
                    buf += read()
                    continue
            m = _OPEN.match(buf, i + len(_KEY))
            if m is not None:
                try:
                    self._top.decode(buf[:i] + _KEY + b":[]}")
                    return buf[:i], buf[m.end() :]
                except msgspec.DecodeError:
                    pass  # the name inside a string or a nested object: look further
            pos = i + 1

    def _cut(self, win: Window) -> tuple[list[E], int, bool] | None:
        """Events of the window up to its last whole one, where the rest starts (in the
        window), whether the array ended; None when it holds no whole event yet."""
        for k, at in enumerate(_candidates(win.buf, win.n)):
            if k == _TRIES:
                break
            try:
                return self._events.decode(win.array(at)), at, False
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue  # a cut inside a string or a nested object (or a bad event)
            finally:
                win.restore()
        data = win.data()
        at, ended = _scan(data)
        if at <= 0 and not ended:
            if len(data) > MAX_PIECE:
                raise BadFile(f"{self.path}: no whole trace event in {MAX_PIECE} bytes; refused")
            return None
        return self._decode(data, at), at + 1, ended

    def _last(self, header: bytes | None, buf: bytes) -> Iterator[list[E]]:
        try:
            if header is None:
                events = self._events.decode(b"[" + buf)
            else:
                self.top = self._top.decode(header + _KEY + b":[" + buf)
                events = self._take()
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            events = self._salvage(header, buf, err)
        yield events

    def _salvage(self, header: bytes | None, buf: bytes, err: Exception) -> list[E]:
        """The last events one at a time, when one of them does not decode; the document's
        end (what follows the array) decoded on its own."""
        at, ended = _scan(buf)
        close = buf.find(b"]", max(at, 0)) if ended else -1
        if close < 0:
            raise BadFile(
                f"{self.path}: cut short or malformed near its end ({str(err)[:120]})"
            ) from None
        events = self._decode(buf, at) if at > 0 else []
        if header is not None:
            tail = bytes(buf[close + 1 :])
            for end in (tail, _TRACE_NAME.sub(b"}", tail)):
                try:
                    self.top = self._top.decode(header + _KEY + b":[]" + end)
                    break
                except (msgspec.DecodeError, msgspec.ValidationError) as again:
                    problem = str(again)[:120]
            else:
                raise BadFile(f"{self.path}: cut short or malformed near its end ({problem})")
        return events

    def _take(self) -> list[E]:
        events: list[E] = self.top.traceEvents  # type: ignore[union-attr]
        self.top.traceEvents = []  # type: ignore[union-attr]
        return events

    def _take_events(self) -> Iterator[list[E]]:
        yield self._take()
