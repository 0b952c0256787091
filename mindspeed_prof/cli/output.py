"""What the commands write, on a full disk, a read-only folder or a closed pipe: one line and
``Exit.UNWRITTEN``, never a traceback, never a truncated file under the output's name.

Files (``timeline -o``, ``analyse --html``) are written to a temporary name in their folder and
renamed when complete (``written``); stdout goes through ``Guarded``, which turns a failed write
or flush into ``Unwritten``, which ``cli.main`` reports.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from mindspeed_prof.jsonio import pieces

__all__ = [
    "STDOUT",
    "Guarded",
    "Unwritten",
    "guarded_stdout",
    "silence_stdout",
    "write_json",
    "written",
]

#: How the lines name the standard output.
STDOUT = "stdout"


class Unwritten(Exception):
    """An output that could not be written whole: ``where`` (a path, or ``STDOUT``) and why."""

    def __init__(self, where: str, err: OSError) -> None:
        super().__init__(where, err)
        self.where = where
        self.err = err

    def __str__(self) -> str:
        if self.where == STDOUT:
            if isinstance(self.err, BrokenPipeError) or self.err.errno == errno.EPIPE:
                return "stdout was closed by its reader (head, a pager) before the output ended"
            return f"cannot write to stdout ({_why(self.err)}): the output is cut short"
        return f"cannot write {self.where} ({_why(self.err)}): nothing written under that name"


def _why(err: OSError) -> str:
    return err.strerror or (errno.errorcode.get(err.errno or 0) or type(err).__name__)


@contextmanager
def written(path: Path) -> Iterator[Path]:
    """A temporary name next to ``path`` to write to; renamed to ``path`` when the block ends
    without an exception, removed otherwise. Any ``OSError`` of the block, the folder's making
    or the rename is raised as ``Unwritten(path)``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        raise Unwritten(str(path), err) from err
    finally:
        tmp.unlink(missing_ok=True)


class Guarded:
    """``stream`` whose ``write`` and ``flush`` raise ``Unwritten(STDOUT)`` for an ``OSError``
    (``ENOSPC`` from ``/dev/full``, ``EPIPE`` from a closed pipe); everything else as ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as err:
            raise Unwritten(STDOUT, err) from err

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as err:
            raise Unwritten(STDOUT, err) from err

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


#: Characters of JSON text gathered before each write (``write_json``).
JSON_CHUNK = 1 << 16


def write_json(value: object, stream: TextIO) -> None:
    """``json.dump(value, stream, indent=2, default=str)``, the same text, written a
    ``JSON_CHUNK`` of characters at a time: the encoder's pieces (one a key, a number or an
    indent: a per-step table gives millions) joined first, never the whole document at once;
    a ``JsonRows`` table's rows made as they are written (``jsonio.pieces``)."""
    chunk: list[str] = []
    size = 0
    for piece in pieces(value):
        chunk.append(piece)
        size += len(piece)
        if size >= JSON_CHUNK:
            stream.write("".join(chunk))
            chunk.clear()
            size = 0
    stream.write("".join(chunk))


@contextmanager
def guarded_stdout() -> Iterator[None]:
    """``sys.stdout`` as ``Guarded`` for the block (restored after)."""
    before = sys.stdout
    sys.stdout = Guarded(before)
    try:
        yield
    finally:
        sys.stdout = before


def silence_stdout() -> None:
    """Point stdout's descriptor at devnull, so that the flush at exit does not fail again
    (what is still buffered goes nowhere); nothing where stdout has no descriptor."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
