"""A JSON document's outline read without building it: keys one at a time, values skipped.

``Scanner`` pulls from a binary file a chunk at a time. ``each_key()`` walks an object's keys
and ``each_element()`` an array's elements; after each the caller consumes the value, by
``skip()`` or by walking into it. Skipping builds nothing: a string is passed by looking for
its closing quote (``bytes.find``), keeping nothing of it; an array or object by msgspec, in C,
once the buffer holds it (the buffer then holds the value, so no more than ``limit``). Every
byte taken from the file counts against ``limit``: past it ``TooLong`` is raised, so deciding
what a file is never reads more than ``limit`` bytes (decompressed) of it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from io import BufferedIOBase

import msgspec

__all__ = ["NotJson", "Scanner", "TooLong"]

#: Bytes taken from the file at a time (the first read is smaller: most files decide in it).
CHUNK = 1 << 20
FIRST = 1 << 14
#: The most of a key that is kept (the rest is scanned and dropped).
KEY_BYTES = 1 << 10
_NONWS = re.compile(rb"[^ \t\r\n]")
#: What msgspec says when a value is followed by more (N: 1 + where the next byte is).
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
#: A string (its closing quote captured: none when the chunk ends first), or a bracket.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(")?|[][{}]', re.DOTALL)
_SCALAR_END = re.compile(rb"[ \t\r\n,\]}]")
_QUOTE, _BACKSLASH = 0x22, 0x5C


class TooLong(Exception):
    """The limit was reached before the question was answered."""


class NotJson(Exception):
    """What was read is not JSON (at the point it was read)."""


class Scanner:
    """A pull scanner over ``f``; ``taken``: the bytes read from ``f`` so far."""

    def __init__(self, f: BufferedIOBase, limit: int) -> None:
        self._f = f
        self._limit = limit
        self._buf = bytearray()  # what is read and not yet consumed starts at _pos
        self._pos = 0
        self.taken = 0

    def head(self) -> bytes:
        """The unconsumed bytes buffered now (at least the first chunk, when nothing was
        consumed yet)."""
        if not self._buf:
            self._fill()
        return bytes(self._buf[self._pos :])

    def _fill(self) -> bool:
        """Append the next chunk, dropping what was consumed; False at the end of the file."""
        if self.taken >= self._limit:
            raise TooLong(f"undecided after {self.taken:,} bytes")
        want = min(FIRST if not self.taken else CHUNK, self._limit - self.taken)
        data = self._f.read(want)
        if not data:
            return False
        self.taken += len(data)
        del self._buf[: self._pos]  # cheap: a bytearray drops its front without copying
        self._pos = 0
        self._buf += data
        return True

    def peek(self) -> int | None:
        """The next byte that is not whitespace (not consumed); None at the end."""
        while True:
            m = _NONWS.search(self._buf, self._pos)
            if m is not None:
                self._pos = m.start()
                return self._buf[self._pos]
            self._pos = len(self._buf)
            if not self._fill():
                return None

    def _take(self, byte: int) -> None:
        if self.peek() != byte:
            raise NotJson(f"expected {chr(byte)!r}")
        self._pos += 1

    def _string(self, keep: int = 0) -> bytes:
        """Past the rest of a string whose opening quote was consumed; its first ``keep``
        bytes, raw (escapes left in)."""
        kept = bytearray()
        while True:
            buf, pos = self._buf, self._pos
            j = buf.find(b'"', pos)
            k = j if j >= 0 else len(buf)
            while k > pos and buf[k - 1] == _BACKSLASH:  # a run of backslashes before it
                k -= 1
            closed = j >= 0 and (j - k) % 2 == 0
            # an open end keeps its backslashes unconsumed: they may escape the next byte
            stop = j if closed else j + 1 if j >= 0 else k
            if len(kept) < keep:
                kept += buf[pos:stop][: keep - len(kept)]
            self._pos = stop
            if closed:
                self._pos += 1
                return bytes(kept)
            if j < 0 and not self._fill():
                raise NotJson("a string is not closed")

    def key(self) -> str:
        """The next string (a key), its first ``KEY_BYTES`` bytes decoded."""
        self._take(_QUOTE)
        raw = self._string(KEY_BYTES)
        try:
            text = json.loads(b'"' + raw + b'"')
        except ValueError:
            text = raw.decode("utf-8", "replace")
        return str(text)

    def skip(self) -> None:
        """Past the next value, whatever it holds, without building it."""
        c = self.peek()
        if c is None:
            raise NotJson("a value is missing")
        if c == _QUOTE:
            self._pos += 1
            self._string()
        elif c in b"[{":
            self._container()
        else:
            self._scalar()

    def _container(self) -> None:
        """Past an array or object. msgspec skips it in C, building nothing, once the buffer
        holds it whole: its error says where the value ends (``trailing characters (byte
        N)``) or that more is needed (``truncated``: the buffer grows to twice as much, so the
        tries cost at most twice the value). Anything else it says (a malformed value, another
        wording) leaves the value to ``_scan_container``."""
        while True:  # the position stays at the value's start until it is passed
            try:
                msgspec.json.decode(self._buf[self._pos :], type=msgspec.Raw)
            except msgspec.DecodeError as err:
                text = str(err)
                m = _TRAILING.search(text)
                if m is not None:
                    end = self._pos + int(m.group(1)) - 1
                    if bytes(self._buf[end : end + 1]) in (b",", b"]", b"}"):
                        self._pos = end
                        return
                elif "truncated" in text and self._grow():
                    continue
                return self._scan_container()
            self._pos = len(self._buf)  # the value and whitespace: all there is so far
            return

    def _grow(self) -> bool:
        """Read until twice what is buffered past the position is; False at the end."""
        want, grew = 2 * (len(self._buf) - self._pos), False
        while len(self._buf) - self._pos < want and self._fill():
            grew = True
        return grew

    def _scan_container(self) -> None:
        """Past an array or object: brackets counted, each string matched whole by the
        regex; a string the chunk's end cuts is finished by ``_string``, which reads on."""
        depth = 0
        while True:
            buf, cut = self._buf, -1
            for m in _TOKEN.finditer(buf, self._pos):
                c = buf[m.start()]
                if c == _QUOTE:
                    if m.group(1) is None:  # no closing quote before the chunk's end
                        cut = m.start()
                        break
                elif c in b"[{":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        self._pos = m.end()
                        return
            if cut >= 0:
                self._pos = cut + 1
                self._string()
            else:
                self._pos = len(buf)
                if not self._fill():
                    raise NotJson("an array or object is not closed")

    def _scalar(self) -> None:
        while True:
            m = _SCALAR_END.search(self._buf, self._pos)
            if m is not None:
                self._pos = m.start()
                return
            self._pos = len(self._buf)
            if not self._fill():
                return  # a scalar at the very end of the document

    def each_key(self) -> Iterator[str]:
        """The keys of the object that comes next; consume each one's value before the next."""
        self._take(ord("{"))
        if self.peek() == ord("}"):
            self._pos += 1
            return
        while True:
            key = self.key()
            self._take(ord(":"))
            yield key
            c = self.peek()
            self._pos += 1
            if c == ord("}"):
                return
            if c != ord(","):
                raise NotJson("expected ',' or '}' after a value")

    def each_element(self) -> Iterator[None]:
        """Each element of the array that comes next; consume it before the next."""
        self._take(ord("["))
        if self.peek() == ord("]"):
            self._pos += 1
            return
        while True:
            yield None
            c = self.peek()
            self._pos += 1
            if c == ord("]"):
                return
            if c != ord(","):
                raise NotJson("expected ',' or ']' after an element")
