"""A producer's Chrome trace file read a slice of events at a time (``stream``) into a
capture's ``TraceData``: its ranges, its rank (``owner``), what could not be read, and one note
saying how it was read."""

from __future__ import annotations

from pathlib import Path

from mindspeed_prof.analysis.readers.events import OTHER_TOOL
from mindspeed_prof.analysis.readers.generic.events import Event, Top
from mindspeed_prof.analysis.readers.generic.fold import Fold
from mindspeed_prof.analysis.readers.generic.owner import pid_ranks
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.ranks import to_rank
from mindspeed_prof.analysis.readers.stream import TraceStream
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["EPOCH_US", "KIND", "read_generic"]

#: ``TraceData.kind`` of these captures.
KIND = "chrome"
#: Times past this (us since 1970: the year 2000) are read as wall-clock times.
EPOCH_US = 9.4e14


def read_generic(path: Path, group: str, size: int, root: Path | None = None) -> TraceData:
    """Read ``path`` (a producer's Chrome trace, object or array form, plain or compressed);
    ``root``: the folder analysed (a rank is read from folders below it only)."""
    stream = TraceStream(path, Event, Top)
    fold = Fold()
    for batch in stream.batches():
        fold.add(batch)
    top = stream.top or Top()
    info = top.distributedInfo if isinstance(top.distributedInfo, dict) else {}
    own = to_rank(top.rank)
    if own is None:
        own = to_rank(info.get("rank"))
    names = {pid: f"{fold.names.get(pid, '')} {label}" for pid, label in fold.labels.items()}
    ranks = pid_ranks(own, {**fold.names, **names}, {s[0] for s in fold.spans}, path, root)
    known = set(ranks.values())
    rank = known.pop() if len(known) == 1 else None
    data = TraceData(
        path, KIND, rank, group, size, events=fold.events, meta=CaptureHeader(rank=rank)
    )
    data.ranges = fold.ranges(ranks)
    data.meta.unread_device = {OTHER_TOOL: fold.events}
    first = min((r.ts for r in data.ranges), default=0.0)
    if first > EPOCH_US:
        data.meta.base_time_ns = 0  # already on the wall clock
    data.problems.extend(stream.problems())
    data.problems.extend(fold.problems(path))
    data.notes.extend(_notes(path, fold))
    return data


def _notes(path: Path, fold: Fold) -> list[str]:
    """How the file was read, a line each: its ranges, what was not kept, what is not time."""
    out = [f"{path}: another tool's trace: {len(fold.spans):,} ranges"]
    if fold.dropped:
        out.append(f"{path}: {fold.dropped:,} more duration events not kept")
    if fold.counters:
        out.append(f"{path}: {fold.counters:,} counter samples not read")
    return out
