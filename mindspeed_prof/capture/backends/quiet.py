"""Torch's own stderr chatter around a capture, dropped line by exact line; the rest is kept.

Kineto (torch.profiler's engine) writes ``USDT: ... profiler_start`` and ``profiler_stop`` to
stderr at every start and stop. They are Kineto's ``USDT`` log level, the highest it has, so no
``KINETO_LOG_LEVEL`` hides them without also hiding Kineto's errors (and Kineto reads that variable
once per process anyway). With ``profile_memory`` c10's CPU allocator warns "Memory block of unknown
size was allocated before the profiling started" the first time (then every 1000th time) a block
from before the capture is freed during it; the torch backend frees one such block right after the
start, inside the quiet window, so that first time passes unseen. Neither line says anything about
the user's run.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import IO

__all__ = ["NOISE", "quiet_stderr"]

#: The exact lines dropped; any other line written to stderr meanwhile is written back.
NOISE = re.compile(
    rb"USDT:[^\n]*SyncActivityProfilerHandler\.cpp:\d+\] profiler_(start|stop)"
    rb"|\[W[^\n]*CPUAllocator\.cpp:\d+\] Memory block of unknown size was allocated before the "
    rb"profiling started, profiler results will not include the deallocation event"
)

_LOCK = threading.RLock()  # fd 2 is one per process


def _spool() -> AbstractContextManager[IO[bytes] | None]:
    """A temporary file for what stderr gets meanwhile; None when none can be made."""
    try:
        return tempfile.TemporaryFile()
    except OSError:
        return nullcontext(None)


def _point_stderr_at(tmp: IO[bytes]) -> int | None:
    """fd 2 pointed at ``tmp``; the saved fd 2, or None when stderr cannot be redirected."""
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        return None
    os.dup2(tmp.fileno(), 2)
    return saved


def _restore(saved: int, tmp: IO[bytes]) -> None:
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os.dup2(saved, 2)
    os.close(saved)
    tmp.seek(0)
    kept = b"".join(
        line
        for line in tmp.read().splitlines(keepends=True)
        if not NOISE.fullmatch(line.rstrip(b"\r\n"))
    )
    while kept:
        kept = kept[os.write(2, kept) :]


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """Around a profiler's start or stop: stderr lines matching ``NOISE`` are dropped, others are
    written to stderr when the block ends (in order, after the block)."""
    with _LOCK, _spool() as tmp:
        saved = _point_stderr_at(tmp) if tmp is not None else None
        try:
            yield
        finally:
            if tmp is not None and saved is not None:
                _restore(saved, tmp)
