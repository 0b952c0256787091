"""A range file's text: the header, every recorded event as one JSON line, and the whole file
written at once (``write_trace``: aside, then renamed into place; a failed write leaves nothing).
The tail a range file ends with tells an open file (``TAIL``) from a closed one (``CLOSED``)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from mindspeed_prof.capture.buffer import (
    ITERATION,
    ITERATION_RANGE,
    STEP_RANGE,
    Chunk,
    Count,
    RangeBuffer,
)
from mindspeed_prof.formats.header import KIND_SPANS, CaptureHeader, Clock, header_dict

__all__ = [
    "CLOSED",
    "FORMAT",
    "TAIL",
    "ends_whole",
    "named",
    "trace_body",
    "trace_header",
    "write_trace",
]

TAIL = b"\n]}\n"
#: The end a range file gets when its recorder closes it: a file still ending in ``TAIL`` was
#: never closed (its process was killed, or is still writing). Files of format 2 and later.
CLOSED = b'\n], "closed": true}\n'
FORMAT = 2
#: A range's and an instant mark's line: phase, pid, tid, "cat"/"name", start (and length),
#: and the rest (the step). Times are microseconds written as integer nanoseconds with JSON's
#: exponent: ``1234e-3`` is the number 1.234, the one ``1.234`` is (a JSON reader gives the
#: same float for both), with no division to write it.
_RANGE = '{"ph": "%s", "pid": %d, "tid": %d%s, "ts": %de-3, "dur": %de-3%s'
_MARK = '{"ph": "%s", "pid": %d, "tid": %d%s, "s": "t", "ts": %de-3%s'
#: A count's line (a Chrome counter event): its args are the value(s), its step and stage.
_COUNT = '{"ph": "C", "pid": %d, "tid": %d%s, "ts": %de-3, "args": {"value%s": %s%s}}'
_PHASES = {"mark": "i", "count": "C"}  # a category's phase; any other category: "X"
#: (key, thread) line starts kept before the cache starts over (a trainer may start a thread
#: per step).
_HEADS_LIMIT = 4096


def trace_body(
    chunks: Iterable[Chunk],
    buffer: RangeBuffer,
    pid: int,
    labels: dict[int, tuple[str, ...]] | None = None,
    heads: dict[tuple[int, int], str] | None = None,
) -> list[str]:
    """The ``traceEvents`` entries of ``chunks`` as JSON text (hand-formatted: 4x json.dumps).

    ``labels`` caches each key's phase and ``"cat"``/``"name"`` text across calls, ``heads``
    (for one ``pid``) each (key, thread)'s line start. A range whose (key, thread) was written
    once is written from its line's start, kept: a plain range's up to ``"ts": ``, a step
    range's up to its step; its times (the ``%de-3`` of ``_RANGE``) by an f-string. The last
    plain range's (key, thread) is compared before any lookup: a run of one name costs no key
    tuple."""
    labels = {} if labels is None else labels
    heads = {} if heads is None else heads
    if len(heads) > _HEADS_LIMIT:  # a thread per step: the cache starts over
        heads.clear()
    keys, offset = buffer.keys, buffer.wall0_ns - buffer.perf0_ns
    out: list[str] = []
    append = out.append
    run_key = run_tid = -1  # the last plain range's (key, thread), and its line start
    run = ""
    for step, events in chunks:
        tail = "}" if step is None else f', "args": {{"step": {step}}}}}'
        for key, tid, t0, t1 in events:
            if key == run_key and tid == run_tid and t1 >= 0:  # the usual range
                append(f'{run}{t0 + offset}e-3, "dur": {t1 - t0}e-3{tail}')
                continue
            head = heads.get((key, tid))
            if head is not None and type(t1) is int and t1 >= 0:
                if head[-1] == "#":  # a step range: its name has the step
                    append(f'{head}{step}", "ts": {t0 + offset}e-3, "dur": {t1 - t0}e-3{tail}')
                    continue
                run_key, run_tid, run = key, tid, head
                append(f'{head}{t0 + offset}e-3, "dur": {t1 - t0}e-3{tail}')
                continue
            append(_line(keys, labels, heads, pid, step, tail, offset, key, tid, t0, t1))
    return out


def _line(
    keys: list[tuple[str, str]],
    labels: dict[int, tuple[str, ...]],
    heads: dict[tuple[int, int], str],
    pid: int,
    step: int | None,
    tail: str,
    offset: int,
    key: int,
    tid: int,
    t0: int,
    t1: Any,
) -> str:
    """An event's line the long way (``_RANGE``, ``_MARK``, a count); a range's line start
    kept in ``heads``."""
    label = labels.get(key)
    if label is None:
        name, cat = keys[key]
        label = (_PHASES.get(cat, "X"), f', "cat": {json.dumps(cat)}, "name": ')
        if cat == "step" and name == STEP_RANGE:  # the name has the chunk's step
            label = (label[0], f'{label[1]}"{STEP_RANGE}#', "", "")
        elif cat == ITERATION and name.startswith(ITERATION_RANGE):
            label = (label[0], f'{label[1]}"{ITERATION}"', name[len(ITERATION_RANGE) :])
        else:
            label = (label[0], label[1] + json.dumps(name))
        labels[key] = label
    phase, text = label[0], label[1]
    stepped = len(label) == 4
    if stepped:
        text = f'{text}{step}"'
    ts = t0 + offset
    if type(t1) is not int:  # a count: its own step, not the chunk's
        return _count_line(pid, tid, text, ts, t1)
    if t1 < 0:
        return _MARK % (phase, pid, tid, text, ts, tail)
    if len(label) == 3:
        tail = _iteration_tail(step, label[2])
    elif phase == "X":  # the line's start kept: a plain range's up to "ts", a step's to the step
        start = f'{{"ph": "X", "pid": {pid}, "tid": {tid}{label[1]}'
        heads[(key, tid)] = start if stepped else f'{start}, "ts": '
    return _RANGE % (phase, pid, tid, text, ts, t1 - t0, tail)


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
        ts,
        "s" if isinstance(value, list) else "",
        json.dumps(value),
        more,
    )


def _iteration_tail(step: int | None, iteration: str) -> str:
    at = "" if step is None else f'"step": {step}, '
    return f', "args": {{{at}"iteration": {iteration}}}}}'


def trace_header(metadata: CaptureHeader, buffer: RangeBuffer) -> bytes:
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


def named(err: OSError, path: Path) -> OSError:
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
            f.write(
                trace_header(metadata, buffer) + ("\n" + body if body else "").encode() + CLOSED
            )
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise named(err, path) from err
        raise
    return path


def ends_whole(path: Path) -> bool:
    """Whether ``path`` is a non-empty file that ends a JSON object (a Chrome trace written to
    its end: an exporter cut short stops mid-event)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - 64))
            return size > 0 and f.read().rstrip().endswith(b"}")
    except OSError:
        return False
