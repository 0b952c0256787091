"""``profile_export_type: db`` for torch traces: a Chrome trace stored as a compact SQLite file.

Schema (one file per capture, ``*.pt.trace.db``)::

    meta(key TEXT PRIMARY KEY, value TEXT)   -- top-level trace keys other than traceEvents, as JSON
    strings(id INTEGER PRIMARY KEY, value TEXT)   -- names, categories, interned args
    events(name INTEGER, cat INTEGER, ph TEXT, ts_ns INTEGER, dur_ns INTEGER,
           pid INTEGER, tid INTEGER, args INTEGER)   -- ids into strings; args may be NULL

``ts_ns``/``dur_ns`` are the trace's microseconds times 1000. ``args`` keeps only the fields
that analysis reads (shapes, step, stream, device; a counter event's ``value``/``values`` and
``stage``, docs/counters.md); the rest of a torch event's args are dropped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

from mindspeed_prof.formats.sqlite_read import connect

__all__ = ["KEPT_ARGS", "write_db", "read_db_events"]

KEPT_ARGS = (
    "Input Dims",
    "step",
    "stream",
    "device",
    "Sequence number",
    "value",
    "values",
    "stage",
)

_SCHEMA = """
PRAGMA page_size = 1024;
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE events(name INTEGER, cat INTEGER, ph TEXT, ts_ns INTEGER, dur_ns INTEGER,
                    pid INTEGER, tid INTEGER, args INTEGER);
"""


def write_db(trace: dict[str, Any], db_path: Path) -> Path:
    """Write the Chrome ``trace`` (already parsed) to ``db_path`` atomically."""
    tmp = db_path.with_name(db_path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        with closing(sqlite3.connect(tmp)) as con:
            con.executescript(_SCHEMA)
            ids: dict[str, int] = {}

            def intern(text: str) -> int:
                i = ids.get(text)
                if i is None:
                    i = ids[text] = len(ids) + 1
                return i

            con.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in trace.items() if k != "traceEvents"],
            )
            rows = []
            for ev in trace.get("traceEvents", []):
                if not isinstance(ev, dict):
                    continue
                args = ev.get("args") or {}
                kept = {k: args[k] for k in KEPT_ARGS if k in args}
                rows.append(
                    (
                        intern(str(ev.get("name", ""))),
                        intern(str(ev.get("cat", ""))),
                        ev.get("ph"),
                        _ns(ev.get("ts")),
                        _ns(ev.get("dur")),
                        ev.get("pid"),
                        ev.get("tid"),
                        intern(json.dumps(kept)) if kept else None,
                    )
                )
            con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            con.executemany("INSERT INTO strings VALUES (?, ?)", [(i, s) for s, i in ids.items()])
            con.commit()
        tmp.replace(db_path)  # closed first, so the final name holds a whole file
    finally:
        tmp.unlink(missing_ok=True)
    return db_path


def read_db_events(db_path: Path) -> Iterable[tuple[str, str, str, float, float, Any, Any, str]]:
    """Yield ``(name, cat, ph, ts_us, dur_us, pid, tid, args_json)`` from a db capture."""
    con = connect(db_path)
    try:
        cur = con.execute(
            "SELECT n.value, c.value, e.ph, e.ts_ns, e.dur_ns, e.pid, e.tid, a.value "
            "FROM events e JOIN strings n ON n.id = e.name JOIN strings c ON c.id = e.cat "
            "LEFT JOIN strings a ON a.id = e.args"
        )
        for name, cat, ph, ts, dur, pid, tid, args in cur:
            yield (name, cat, ph, (ts or 0) / 1000.0, (dur or 0) / 1000.0, pid, tid, args or "{}")
    finally:
        con.close()


def _ns(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return round(float(value) * 1000)
    except (TypeError, ValueError):
        return None
