"""A trace's bytes read and not yet decoded (``stream.TraceStream``'s window on the file)."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Window"]


class Window:
    """The bytes read and not yet decoded, in one buffer kept for the whole file: ``[`` then
    the events at ``buf[1:n]``. A slice is decoded from a view of it with its end's comma
    turned into ``]`` for the while (``array``, ``restore``), and each chunk is read into it:
    no copy of a chunk, nor a new buffer for each (fresh megabytes cost their page faults).
    ``left``: the bytes the file has left to read, where its size tells (None: a compressed
    one): the buffer grows by no more than that (a small file's would be mostly room);
    ``chunk``: the most read at a time."""

    __slots__ = ("_at", "_chunk", "_keep", "_left", "_readinto", "buf", "n")

    def __init__(
        self,
        data: bytes,
        readinto: Callable[[memoryview], int],
        left: int | None,
        chunk: int,
    ) -> None:
        self.buf = bytearray(b"[") + data
        self.n = len(self.buf)
        self._readinto = readinto
        self._left = left
        self._chunk = chunk
        self._at, self._keep = -1, 0

    def data(self) -> bytes:
        return bytes(self.buf[1 : self.n])

    def array(self, at: int) -> memoryview:
        """``[`` + the events before ``at`` + ``]``, a view (``restore`` before any change)."""
        self._at, self._keep = at, self.buf[at]
        self.buf[at] = 0x5D  # ']'
        return memoryview(self.buf)[: at + 1]

    def restore(self) -> None:
        if self._at >= 0:
            self.buf[self._at] = self._keep
            self._at = -1

    def drop(self, at: int) -> None:
        """Forget the bytes before ``at`` (the ``[`` stays)."""
        rest = self.n - at
        self.buf[1 : 1 + rest] = self.buf[at : self.n]
        self.n = 1 + rest

    def fill(self) -> None:
        """The next chunk read in after the bytes kept (the buffer grows only for an event
        longer than what it holds, or the file's first chunks). A file that grew since its
        size was taken is read on a chunk at a time."""
        chunk = self._chunk
        want = chunk if self._left is None else min(chunk, self._left + 1)
        room = len(self.buf) - self.n
        if room < want:
            self.buf += bytes(want - room)
        got = self._readinto(memoryview(self.buf)[self.n : self.n + want])
        self.n += got
        if self._left is not None:
            self._left = self._left - got if got <= self._left else None
