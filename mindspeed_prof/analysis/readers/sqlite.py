"""db captures (``*.pt.trace.db``): the Chrome trace kept in SQLite by the torch backend."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mindspeed_prof.analysis.readers.chrome import Event, EventArgs, collect
from mindspeed_prof.analysis.readers.model import TraceData, rank_of

__all__ = ["read_db"]


def read_db(path: Path, group: str, size: int) -> TraceData:
    from mindspeed_prof.capture.backends.sqlite_trace import read_db_events

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta_rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    meta = json.loads(meta_rows.get("mindspeed_prof", "{}") or "{}")
    info = json.loads(meta_rows.get("distributedInfo", "{}") or "{}")
    if "baseTimeNanoseconds" in meta_rows:  # Kineto's wall-clock ns at ts 0
        meta["baseTimeNanoseconds"] = json.loads(meta_rows["baseTimeNanoseconds"])
    events = []
    for name, cat, ph, ts, dur, pid, tid, args in read_db_events(path):
        step = json.loads(args).get("step") if args != "{}" else None
        events.append(Event(ph=ph or "", cat=cat, name=name, ts=ts, dur=dur, tid=tid, pid=pid,
                             args=EventArgs(step=step)))
    data = TraceData(path, "db", rank_of(path, meta, info), group, size, events=len(events),
                     meta=meta)
    collect(data, events, meta.get("step"))
    return data


