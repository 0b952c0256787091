"""Rows that come sorted by their first column, kept in blocks on disk so memory holds one
block (``Spilled``), and several such sequences read back merged, a time slice at a time
(``merged``): what keeps a reader's memory flat in a trace's size.

A sequence whose rows stop coming in order is kept in memory from then on and sorted whole
when read (its memory then grows with it: only a trace out of order pays).
"""

from __future__ import annotations

import bisect
import tempfile
from array import array
from collections.abc import Iterator, Sequence
from typing import IO, Any

import numpy as np

__all__ = ["BLOCK", "Spilled", "merged"]

#: Rows a block holds.
BLOCK = 1 << 16
_INF = float("inf")


class Spilled:
    """Rows of ``typecodes`` columns (``array`` typecodes; the first is the sort key, a
    float). Append to ``cols`` directly, then ``settle()``: it notes whether they came in order
    and sends each full block to a temporary file."""

    __slots__ = (
        "block",
        "checked",
        "cols",
        "file",
        "in_order",
        "last",
        "marks",
        "spilled",
        "typecodes",
    )

    def __init__(self, typecodes: str, block: int | None = None) -> None:
        self.typecodes = typecodes
        self.block = BLOCK if block is None else block
        self.cols: list[array[Any]] = [array(t) for t in typecodes]
        self.file: IO[bytes] | None = None
        self.spilled = 0  # blocks in the file
        self.in_order = True
        self.last = -_INF  # the last key settled
        self.marks: list[float] = []  # each spilled block's first key
        self.checked = 0  # rows of ``cols`` settled

    def __len__(self) -> int:
        return self.spilled * self.block + len(self.cols[0])

    def settle(self) -> None:
        """Note whether the rows appended since the last call came in order; spill full
        blocks while they do."""
        keys = self.cols[0]
        if len(keys) <= self.checked:
            return
        if self.in_order:
            tail = np.frombuffer(keys, dtype=np.float64)[self.checked :]
            if tail[0] < self.last or (len(tail) > 1 and bool((tail[1:] < tail[:-1]).any())):
                self.in_order = False
            self.last = float(tail[-1])
            del tail
        self.checked = len(keys)
        while self.in_order and len(keys) >= self.block:
            self._spill()
            self.checked -= self.block

    def _spill(self) -> None:
        if self.file is None:
            self.file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.file.seek(0, 2)
        self.marks.append(self.cols[0][0])
        n = self.block
        for col in self.cols:
            col[:n].tofile(self.file)
            del col[:n]
        self.spilled += 1

    def blocks(self) -> Iterator[list[array[Any]]]:
        """The columns a block at a time, in order (sorted, once ``sort`` has run)."""
        width = sum(array(t).itemsize for t in self.typecodes)
        for k in range(self.spilled):
            assert self.file is not None
            self.file.seek(k * self.block * width)
            block = [array(t) for t in self.typecodes]
            for col in block:
                col.fromfile(self.file, self.block)
            yield block
        yield self.cols

    def sort(self) -> None:
        """Key order (then the other columns'), for rows that did not come so: all of them
        read into memory."""
        if self.in_order:
            return
        cols = [array(t) for t in self.typecodes]
        for block in self.blocks():
            for col, part in zip(cols, block):
                col.extend(part)
        self.close()
        arrays = [np.frombuffer(c, dtype=np.dtype(c.typecode)) for c in cols]
        order = np.lexsort(arrays[::-1])
        self.cols = [array(t, a[order].tobytes()) for t, a in zip(self.typecodes, arrays)]
        del arrays, cols
        self.marks = []
        self.in_order = True

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file, self.spilled = None, 0


class _Cursor:
    """Reads a sorted ``Spilled`` forward: ``take(hi)`` gives its next rows whose key is
    below ``hi``, as numpy views of its columns."""

    def __init__(self, rows: Spilled) -> None:
        self.blocks = rows.blocks()
        self.block: list[array[Any]] | None = next(self.blocks)
        self.at = 0

    def take(self, hi: float, out: list[list[np.ndarray]]) -> None:
        while self.block is not None:
            keys = self.block[0]
            j = bisect.bisect_left(keys, hi, self.at)
            if j > self.at:
                out.append(
                    [np.frombuffer(c, dtype=np.dtype(c.typecode))[self.at : j] for c in self.block]
                )
            if j < len(keys):
                self.at = j
                return
            self.block, self.at = next(self.blocks, None), 0


def merged(runs: Sequence[Spilled]) -> Iterator[list[np.ndarray]]:
    """The rows of every run in (key, other columns) order, a slice at a time: between two
    blocks' first keys, so a slice holds at most about a block of each run."""
    for run in runs:
        run.sort()
    cuts = sorted({t for run in runs for t in run.marks})
    cursors = [_Cursor(run) for run in runs]
    for hi in [*cuts, _INF]:
        pieces: list[list[np.ndarray]] = []
        for cursor in cursors:
            cursor.take(hi, pieces)
        if not pieces:
            continue
        cols = [np.concatenate(c) for c in zip(*pieces)]
        del pieces
        order = np.lexsort(cols[::-1])
        yield [c[order] for c in cols]
