"""db captures (``*.pt.trace.db``): the torch backend's Chrome trace in SQLite, read in batches."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from mindspeed_prof.analysis.readers.events import Event, EventArgs
from mindspeed_prof.analysis.readers.fold import Collector
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.ranks import rank_of
from mindspeed_prof.formats.header import read_header
from mindspeed_prof.formats.sqlite_read import connect

__all__ = ["BATCH", "read_db"]

#: Events folded in at a time: memory holds a batch, not the capture.
BATCH = 1 << 16


def read_db(path: Path, group: str, size: int) -> TraceData:
    from mindspeed_prof.formats.sqlite_trace import read_db_events

    con = connect(path)
    try:
        meta_rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    meta, odd = read_header(json.loads(meta_rows.get("mindspeed_prof", "null") or "null"), path)
    info = json.loads(meta_rows.get("distributedInfo", "{}") or "{}")
    if "baseTimeNanoseconds" in meta_rows:  # Kineto's wall-clock ns at ts 0
        base = json.loads(meta_rows["baseTimeNanoseconds"])
        meta.base_time_ns = base if isinstance(base, int) and not isinstance(base, bool) else None
    events = (
        Event(ph=ph or "", cat=cat, name=name, ts=ts, dur=dur, tid=tid, pid=pid, args=_args(args))
        for name, cat, ph, ts, dur, pid, tid, args in read_db_events(path)
    )
    fold = Collector()
    count = 0
    while batch := list(itertools.islice(events, BATCH)):
        count += len(batch)
        fold.add(batch)
    data = TraceData(path, "db", rank_of(path, meta, info), group, size, events=count, meta=meta)
    fold.finish(data, meta.step)
    if odd:
        data.problems.append(odd)
    return data


def _args(text: str) -> EventArgs:
    """The args the analysis reads of one row: the step, and a counter's value, values and
    stage (``readers.counters`` checks them)."""
    if text == "{}":
        return EventArgs()
    args = json.loads(text)
    if not isinstance(args, dict):
        return EventArgs()
    return EventArgs(
        step=args.get("step"),
        value=args.get("value"),
        values=args.get("values"),
        stage=args.get("stage"),
    )
