"""Span recorder: cheap ranges written as a Chrome trace that is valid after every flush."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from threading import get_ident
from typing import Any

__all__ = ["SpanRecorder"]

_TAIL = b"\n]}\n"


class _Span:
    __slots__ = ("_rec", "_name", "_cat", "_t0")

    def __init__(self, rec: SpanRecorder, name: str, cat: str) -> None:
        self._rec = rec
        self._name = name
        self._cat = cat

    def __enter__(self) -> _Span:
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        t1 = time.perf_counter_ns()
        self._rec._events.append(
            (self._name, self._cat, self._t0, t1 - self._t0, get_ident(), self._rec.step)
        )


class SpanRecorder:
    """Records ``ph: X`` ranges in memory and appends them to ``path`` at each ``flush()``.

    The file is rewritten in place so that it is complete JSON after every flush: a process
    killed mid-step loses only the ranges recorded since the last flush.
    """

    def __init__(self, path: Path, metadata: dict[str, Any]) -> None:
        self.path = path
        self.step: int | None = None
        self._events: list[tuple[str, str, int, int, int, int | None]] = []
        self._pid = os.getpid()
        self._wall0_ns = time.time_ns()
        self._perf0 = time.perf_counter_ns()
        self._count = 0
        # Names and steps repeat: their JSON is encoded once.
        self._labels: dict[tuple[str, str, int], str] = {}
        self._steps: dict[int | None, str] = {}
        head = {"schemaVersion": 1, "displayTimeUnit": "ms",
                "distributedInfo": {"rank": metadata.get("rank", 0)},
                "mindspeed_prof": {"kind": "spans", **metadata,
                                   # ts are wall-clock based: the (wall, trace clock) pair
                                   "clock": {"wall_ns": self._wall0_ns,
                                             "trace_ns": self._wall0_ns}}}
        header = json.dumps(head)[:-1].encode() + b', "traceEvents": ['
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "wb")  # noqa: SIM115 - kept open for in-place appends
        self._file.write(header)
        self._tail_at = self._file.tell()
        self._file.write(_TAIL)
        self._file.flush()

    def range(self, name: str, cat: str = "user_annotation") -> _Span:
        return _Span(self, name, cat)

    def mark(self, name: str) -> None:
        t = time.perf_counter_ns()
        self._events.append((name, "mark", t, -1, get_ident(), self.step))

    @property
    def count(self) -> int:
        """Ranges written so far plus those waiting for the next flush."""
        return self._count + len(self._events)

    def flush(self) -> None:
        if self._file.closed or not self._events:
            return
        events, self._events = self._events, []
        native = {t.ident: t.native_id for t in threading.enumerate()}
        labels, steps = self._labels, self._steps
        offset = self._wall0_ns - self._perf0
        chunks = []
        for name, cat, t0, dur, tid, step in events:  # formatted by hand: json.dumps is 4x slower
            label = labels.get((name, cat, tid))
            if label is None:
                label = labels[(name, cat, tid)] = (
                    f'{{"ph": "{"X" if cat != "mark" else "i"}", "pid": {self._pid}, '
                    f'"tid": {native.get(tid, tid)}, "cat": {json.dumps(cat)}, '
                    f'"name": {json.dumps(name)}')
            tail = steps.get(step)
            if tail is None:
                tail = steps[step] = "}" if step is None else f', "args": {{"step": {step}}}}}'
            ts = t0 + offset
            if dur >= 0:
                chunks.append('%s, "ts": %d.%03d, "dur": %d.%03d%s' % (
                    label, ts // 1000, ts % 1000, dur // 1000, dur % 1000, tail))
            else:
                chunks.append('%s, "s": "t", "ts": %d.%03d%s' % (label, ts // 1000, ts % 1000,
                                                                 tail))
        body = ((",\n" if self._count else "\n") + ",\n".join(chunks)).encode()
        # One write over the old tail: the file only grows, so nothing is left to truncate.
        self._file.seek(self._tail_at)
        self._file.write(body + _TAIL)
        self._file.flush()
        self._tail_at += len(body)
        self._count += len(events)

    def close(self) -> None:
        if not self._file.closed:
            try:
                self.flush()
            finally:
                self._file.close()
