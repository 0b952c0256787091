"""Range files holding counters, as the counters contract puts them on disk: step and stage
ranges (``X``), and one ``C`` event (``cat`` count) per ``prof.count`` call, with its step and
stage. Times are exact: each stage lasts what the test says."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mindspeed_prof.formats import SPANS

#: A counter call: (name, value or list of values, stage or None).
Call = tuple[str, Any, "str | None"]
RUN = "run-20261202-ledger"


def count(
    name: str, value: Any, step: int | None = 1, stage: str | None = None, ts: float = 0.0
) -> dict[str, Any]:
    """One counter event, as ``Profiler.count`` writes it."""
    args: dict[str, Any] = {"values" if isinstance(value, list) else "value": value}
    if step is not None:
        args["step"] = step
    if stage is not None:
        args["stage"] = stage
    return {"ph": "C", "pid": 1, "tid": 1, "cat": "count", "name": name, "ts": ts, "args": args}


def write_range_file(
    path: Path,
    rank: int,
    events: list[dict[str, Any]],
    model: dict[str, Any] | None = None,
    **meta: Any,
) -> Path:
    """A closed range file of ``events`` for ``rank``; ``model`` the header's model block."""
    head = {"kind": "spans", "format": 2, "rank": rank, "run": RUN, **meta}
    if model is not None:
        head["model"] = model
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "schemaVersion": 1,
                "distributedInfo": {"rank": rank},
                "mindspeed_prof": head,
                "traceEvents": events,
                "closed": True,
            }
        )
    )
    return path


def rl_run(
    root: Path,
    ranks: Sequence[int] = (0, 1),
    steps: Sequence[int] = (1, 2, 3),
    stage_ms: Callable[[int, int, str], float] = lambda rank, step, stage: 100.0,
    calls: Callable[[int, int], list[Call]] = lambda rank, step: [],
    stages: Sequence[str] = ("actor_generate", "actor_update"),
    model: dict[str, Any] | None = None,
) -> Path:
    """One range file per rank: each step holds ``stages`` one after another, each lasting
    ``stage_ms(rank, step, stage)`` ms, and the counter calls ``calls(rank, step)``."""
    for rank in ranks:
        events: list[dict[str, Any]] = []
        t = 1_000_000.0
        for step in steps:
            start = t
            for stage in stages:
                dur = stage_ms(rank, step, stage) * 1000.0
                events.append(
                    {
                        "ph": "X",
                        "pid": 1,
                        "tid": 1,
                        "cat": "stage",
                        "name": stage,
                        "ts": t,
                        "dur": dur,
                        "args": {"step": step},
                    }
                )
                t += dur
            events.append(
                {
                    "ph": "X",
                    "pid": 1,
                    "tid": 1,
                    "cat": "step",
                    "name": f"ProfilerStep#{step}",
                    "ts": start,
                    "dur": t - start,
                    "args": {"step": step},
                }
            )
            for name, value, where in calls(rank, step):
                events.append(count(name, value, step, where, ts=t - 1))
            t += 1000.0
        write_range_file(
            root / f"rank{rank}_host_1_step{steps[0]}{SPANS}", rank, events, model=model
        )
    return root


def write_db(path: Path, rank: int, events: list[dict[str, Any]]) -> Path:
    """A db capture (``*.pt.trace.db``) holding ``events`` with the args the db export keeps
    for counters (value, values, stage, step), in its schema."""
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT);
        CREATE TABLE events(name INTEGER, cat INTEGER, ph TEXT, ts_ns INTEGER, dur_ns INTEGER,
                            pid INTEGER, tid INTEGER, args INTEGER);""")
    ids: dict[str, int] = {}

    def intern(text: str) -> int:
        return ids.setdefault(text, len(ids) + 1)

    con.execute(
        "INSERT INTO meta VALUES (?, ?)", ("mindspeed_prof", json.dumps({"rank": rank, "run": RUN}))
    )
    for ev in events:
        args = {
            k: v
            for k, v in (ev.get("args") or {}).items()
            if k in ("step", "value", "values", "stage")
        }
        con.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                intern(ev["name"]),
                intern(ev.get("cat", "")),
                ev["ph"],
                round(ev["ts"] * 1000),
                round(ev.get("dur", 0) * 1000),
                1,
                1,
                intern(json.dumps(args)) if args else None,
            ),
        )
    con.executemany("INSERT INTO strings VALUES (?, ?)", [(i, s) for s, i in ids.items()])
    con.commit()
    con.close()
    return path
