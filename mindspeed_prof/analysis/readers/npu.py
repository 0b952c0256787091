"""torch_npu ``*_ascend_pt`` folders: parsed ``ASCEND_PROFILER_OUTPUT`` text or db output."""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path

from mindspeed_prof.analysis.readers.chrome import Event, collect, decode_events
from mindspeed_prof.analysis.readers.model import BadFile, TraceData, rank_of
from mindspeed_prof.formats import NPU_OUTPUT

__all__ = ["read_npu"]

_NPU_RANK = re.compile(r"profiler_info_(\d+)\.json$")


def read_npu(folder: Path, group: str) -> TraceData:
    """A torch_npu ``*_ascend_pt`` folder, from its parsed ``ASCEND_PROFILER_OUTPUT``."""
    info_files = sorted(folder.glob("profiler_info_*.json"))
    m = _NPU_RANK.search(info_files[0].name) if info_files else None
    rank = int(m.group(1)) if m else rank_of(folder, None, None)
    out = folder / NPU_OUTPUT
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    if not out.is_dir() and not _npu_offline_analyse(folder):
        raise BadFile(
            f"{folder}: raw torch_npu capture, not parsed yet. On a machine with torch_npu run: "
            f"python -c \"import torch_npu; torch_npu.profiler.profiler.analyse('{folder}')\" "
            "(or set profile_analysis: true)")
    data = TraceData(folder, "npu", rank, group, size, meta={"rank": rank})
    trace_view = out / "trace_view.json"
    dbs = sorted(out.glob("ascend_pytorch_profiler*.db"))
    if trace_view.is_file():
        events = decode_events(trace_view.read_bytes())
        data.events = len(events)
        collect(data, events, None)
    elif dbs:
        _read_npu_db(dbs[0], data)
    step_csv = out / "step_trace_time.csv"
    if step_csv.is_file() and not any(r.kind == "step" for r in data.ranges):
        data.meta["step_trace_time"] = _step_trace_rows(step_csv)
    return data


def _npu_offline_analyse(folder: Path) -> bool:
    """Parse a raw capture with torch_npu's offline analyse, when torch_npu imports here."""
    try:
        import torch_npu
    except Exception:  # ImportError, or OSError when CANN's libraries are missing
        return False
    torch_npu.profiler.profiler.analyse(profiler_path=str(folder))
    return (folder / NPU_OUTPUT).is_dir()


def _step_trace_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return [dict(row) for row in csv.DictReader(f)]


def _read_npu_db(db: Path, data: TraceData) -> None:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        events: list[Event] = []
        if "STEP_TIME" in tables:
            for sid, start, end in con.execute("SELECT id, startNs, endNs FROM STEP_TIME"):
                events.append(Event(ph="X", cat="user_annotation", name=f"ProfilerStep#{sid}",
                                     ts=start / 1000.0, dur=(end - start) / 1000.0))
        if "MSTX_EVENTS" in tables and "STRING_IDS" in tables:
            rows = con.execute("SELECT m.startNs, m.endNs, s.value FROM MSTX_EVENTS m "
                               "JOIN STRING_IDS s ON s.id = m.message")
            for start, end, message in rows:
                if end is not None and end >= start:
                    events.append(Event(ph="X", cat="user_annotation", name=str(message),
                                         ts=start / 1000.0, dur=(end - start) / 1000.0))
    finally:
        con.close()
    data.events = len(events)
    collect(data, events, None)
