"""What a reader returns: ranges, per-op times and device/memory facts of one capture."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "MAX_BYTES",
    "OUTSIDE",
    "BadFile",
    "Range",
    "TraceData",
    "one_line",
    "rank_label",
    "rank_of",
    "rank_order",
    "ranks_text",
    "step_label",
    "to_rank",
]

#: Larger captures (after decompression) are refused with one line instead of read into memory.
MAX_BYTES = 1024**3
#: How every view names the row of device work launched outside every step (its step is None).
OUTSIDE = "outside"
#: ``rank3_host_1.pt.trace.json``, ``rank-3.json.gz``, ``trace_rank_3.json``: a rank in a name.
_RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[-_]?(\d+)(?=[^0-9]|$)", re.IGNORECASE)


class BadFile(Exception):
    """A capture that cannot be read; the message is one line naming the file."""


class Range(NamedTuple):
    """A named span: ``kind`` is ``step``, ``stage`` or ``range`` (custom); times in us.

    ``rank`` is None when no source names it (shown as ``?``, never guessed as 0). ``source``
    is empty unless another capture claims the same rank and step: then it names this
    capture's host or folder, so the two are reported apart instead of added up.
    """

    rank: int | None
    kind: str
    name: str
    step: int | None
    ts: float
    dur: float
    source: str = ""
    tid: str = ""  # the recording thread, where known: ranges nest only within one thread


@dataclass
class TraceData:
    """What one capture holds, per rank.

    ``device`` rows: ``step``, ``stage`` (None for a whole step), ``compute_ms``, ``comm_ms``
    (all communication, overlapped or not), ``overlap_ms`` (communication that ran while
    computing), ``memcpy_ms`` (None where the source folds copies into the others), ``idle_ms``;
    so a step's device time is ``compute + comm - overlap + memcpy + idle``. torch_npu rows add
    ``comm_exposed_ms`` (Communication(Not Overlapped)), ``step_ms`` (its Stage column: the
    step on the device), ``bubble_ms``, ``preparing_ms`` and ``comm_exposed_no_recv_ms``.
    ``comm`` rows: ``name``, ``kind`` (collective, p2p), ``step``, ``count``, ``elapse_ms``,
    ``wait_ms``, ``transit_ms``, ``sync_ms``, ``idle_ms``, ``size_mb``, ``bandwidth_gbps``
    (RDMA + SDMA), ``links`` ({link type: size_mb, time_ms, bandwidth_gbps} for each type that
    carried data) (None where unknown); rows of kind ``link`` (the communication matrix) have
    ``link`` (src-dst), ``transport``, ``size_mb``, ``transit_ms`` and ``bandwidth_gbps``.
    ``memory``: ``peak_allocated_bytes``, ``peak_reserved_bytes``, ``top_ops`` (op, count,
    bytes, max_bytes), ``timeline`` ([us, allocated, reserved] rows) and, for torch_npu,
    ``components`` (peak bytes per allocator component) and ``modules`` (peak per CANN module).
    ``problems``: one line per part of the capture that could not be read (the rest was).
    ``notes``: one line per fact about how a wholly read capture was read (no ProfilerStep
    ranges, approximate self times, device events that are not broken down): not problems.
    """

    path: Path
    kind: str  # torch | spans | db | npu
    rank: int | None
    group: str  # the directory under the save root: integrated, actor_update, ...
    size: int
    events: int = 0
    ranges: list[Range] = field(default_factory=list)
    ops: dict[str, list[float]] = field(default_factory=dict)  # host op -> [count, self_us]
    kernels: dict[str, list[float]] = field(default_factory=dict)  # device kernel -> [count, us]
    runtime: dict[str, list[float]] = field(default_factory=dict)  # launch/runtime -> [count, us]
    device: list[dict[str, Any]] = field(default_factory=list)
    comm: list[dict[str, Any]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: The host (or, failing that, the folder) the capture came from.
    source: str = ""
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def one_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def to_rank(value: Any) -> int | None:
    """A rank from JSON: a non-negative int or digit string; anything else is no rank."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def rank_of(path: Path, meta: dict[str, Any] | None, info: dict[str, Any] | None) -> int | None:
    """Our own metadata's rank, else ``distributedInfo.rank``, else a rank in the file name."""
    for source in (meta, info):
        if isinstance(source, dict):
            r = to_rank(source.get("rank"))
            if r is not None:
                return r
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else None


def rank_label(rank: int | None, source: str = "") -> str:
    """``3``, ``?`` for an unknown rank, ``3 (host-b)`` when two captures claim rank 3."""
    text = "?" if rank is None else str(rank)
    return f"{text} ({source})" if source else text


def rank_order(rank: int | None) -> tuple[int, int]:
    """A sort key that puts unknown ranks after every known one."""
    return (1, 0) if rank is None else (0, rank)


def step_label(step: int | None) -> str:
    """``12``, or ``outside`` for work launched outside every step."""
    return OUTSIDE if step is None else str(step)


def ranks_text(ranks: list[int | None]) -> str:
    """``0-3, 8, ?``: runs of consecutive ranks shortened, unknown ranks last."""
    known = sorted({r for r in ranks if r is not None})
    parts: list[str] = []
    i = 0
    while i < len(known):
        j = i
        while j + 1 < len(known) and known[j + 1] == known[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{known[i]}-{known[j]}")
        else:
            parts.extend(str(r) for r in known[i:j + 1])
        i = j + 1
    if any(r is None for r in ranks):
        parts.append("?")
    return ", ".join(parts)
