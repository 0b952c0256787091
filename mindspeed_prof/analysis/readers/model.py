"""What a reader returns: ranges, per-op times and device/memory facts of one capture."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["BadFile", "MAX_BYTES", "Range", "TraceData", "one_line", "rank_of"]

#: Larger captures (after decompression) are refused with one line instead of read into memory.
MAX_BYTES = 1024**3
_RANK_IN_NAME = re.compile(r"(?:^|_)rank(\d+)(?:_|\.)")


class BadFile(Exception):
    """A capture that cannot be read; the message is one line naming the file."""


class Range(NamedTuple):
    """A named span: ``kind`` is ``step``, ``stage`` or ``range`` (custom); times in us."""

    rank: int
    kind: str
    name: str
    step: int | None
    ts: float
    dur: float
    tid: str = ""  # the recording thread, where known: ranges nest only within one thread


@dataclass
class TraceData:
    """What one capture holds, per rank."""

    path: Path
    kind: str  # torch | spans | db | npu
    rank: int
    group: str  # the directory under the save root: integrated, actor_update, ...
    size: int
    events: int = 0
    ranges: list[Range] = field(default_factory=list)
    ops: dict[str, list[float]] = field(default_factory=dict)  # host op -> [count, self_us]
    kernels: dict[str, list[float]] = field(default_factory=dict)  # device kernel -> [count, us]
    runtime: dict[str, list[float]] = field(default_factory=dict)  # launch/runtime -> [count, us]
    #: Per step (and stage where known): compute_ms, comm_ms, overlap_ms, memcpy_ms, idle_ms.
    device: list[dict[str, Any]] = field(default_factory=list)
    #: Collectives: name, count, elapse_ms, wait_ms, transit_ms, bandwidth_gbps.
    comm: list[dict[str, Any]] = field(default_factory=list)
    #: peak_allocated_bytes, peak_reserved_bytes, top_ops, timeline.
    memory: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: One line each: what in this capture was wrong and left out (the rest is analysed).
    problems: list[str] = field(default_factory=list)


def one_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def rank_of(path: Path, meta: dict[str, Any] | None, info: dict[str, Any] | None) -> int:
    for source in (meta, info):
        if isinstance(source, dict):
            r = source.get("rank")
            if isinstance(r, int) and not isinstance(r, bool) and r >= 0:
                return r
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else 0


