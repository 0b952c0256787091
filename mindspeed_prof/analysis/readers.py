"""Readers: every capture kind below a path, decoded into ranges and op self-times.

Kinds: torch Chrome traces (``*.pt.trace.json[.gz]``), span recordings
(``*.mstx.trace.json``), db captures (``*.pt.trace.db``), and torch_npu ``*_ascend_pt``
folders (``ASCEND_PROFILER_OUTPUT/trace_view.json``, ``step_trace_time.csv``, or the
``ascend_pytorch_profiler_<rank>.db``). JSON is decoded with msgspec into typed structs that
keep only the fields analysis reads.
"""

from __future__ import annotations

import bisect
import csv
import gzip
import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Union

import msgspec

from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.formats import NPU_FOLDER, NPU_OUTPUT, is_capture_file

__all__ = ["BadFile", "Range", "TraceData", "discover", "read", "MAX_BYTES"]

#: Larger captures (after decompression) are refused with one line instead of read into memory.
MAX_BYTES = 1024**3
_STAGES = frozenset(STAGES)
_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_RANK_IN_NAME = re.compile(r"(?:^|_)rank(\d+)(?:_|\.)")
_NPU_RANK = re.compile(r"profiler_info_(\d+)\.json$")

Number = Union[int, float, str, None]


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
    ops: dict[str, list[float]] = field(default_factory=dict)  # name -> [count, self_us]
    meta: dict[str, Any] = field(default_factory=dict)


class _Args(msgspec.Struct):
    step: Union[int, float, str, None] = None


class _Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: Number = None
    dur: Number = None
    tid: Union[int, str, None] = None
    pid: Union[int, str, None] = None
    args: Union[_Args, None] = None


class _Trace(msgspec.Struct):
    traceEvents: list[_Event] = []
    mindspeed_prof: Union[dict[str, Any], None] = None
    distributedInfo: Union[dict[str, Any], None] = None


_decoder = msgspec.json.Decoder(Union[_Trace, list[_Event]])  # object or JSON Array Format


def discover(root: Path) -> Iterator[Path]:
    """Every capture below ``root`` (a capture file, or a ``*_ascend_pt`` folder), sorted."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise BadFile(f"{root}: no such file or directory")
    found: list[Path] = []
    for p in root.rglob("*"):
        name = p.name
        if p.is_dir() and name.endswith(NPU_FOLDER):
            found.append(p)
        elif p.is_file() and not any(part.endswith(NPU_FOLDER) for part in p.parts) and (
                is_capture_file(name)):
            found.append(p)
    yield from sorted(found)


def read(path: Path, root: Path | None = None) -> TraceData:
    """Decode one capture; raise ``BadFile`` with one line naming it when it cannot be read."""
    path = Path(path)
    group = _group(path, root)
    try:
        if path.is_dir():
            return _read_npu(path, group)
        size = path.stat().st_size
        if size == 0:
            raise BadFile(f"{path}: empty file")
        if size > MAX_BYTES:
            raise BadFile(f"{path}: {size} bytes, over the {MAX_BYTES}-byte limit")
        if path.name.endswith(".db"):
            return _read_db(path, group, size)
        return _read_json(path, group, size)
    except BadFile:
        raise
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise BadFile(f"{path}: not a Chrome trace ({_one_line(err)})") from None
    except RecursionError:
        raise BadFile(f"{path}: nested too deeply to be a trace") from None
    except (OSError, EOFError, UnicodeDecodeError, sqlite3.Error, ValueError) as err:
        raise BadFile(f"{path}: unreadable ({type(err).__name__}: {_one_line(err)})") from None


def _one_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def _group(path: Path, root: Path | None) -> str:
    parent = path.parent
    if root is not None and Path(root).is_dir() and parent.resolve() == Path(root).resolve():
        return parent.name or "."
    return parent.name


def _rank(path: Path, meta: dict[str, Any] | None, info: dict[str, Any] | None) -> int:
    for source in (meta, info):
        if isinstance(source, dict):
            r = source.get("rank")
            if isinstance(r, int) and not isinstance(r, bool) and r >= 0:
                return r
    m = _RANK_IN_NAME.search(path.name)
    return int(m.group(1)) if m else 0


def _read_json(path: Path, group: str, size: int) -> TraceData:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        head = f.read(64).lstrip()
        if not head.startswith((b"{", b"[")):
            raise BadFile(f"{path}: not JSON (starts with {head[:8]!r})")
        raw = head + f.read(MAX_BYTES)
        if len(raw) > MAX_BYTES:
            raise BadFile(f"{path}: more than {MAX_BYTES} bytes of JSON; refused")
    trace = _decoder.decode(raw)
    del raw
    if isinstance(trace, list):
        trace = _Trace(traceEvents=trace)
    meta = trace.mindspeed_prof or {}
    kind = "spans" if meta.get("kind") == "spans" else "torch"
    data = TraceData(path, kind, _rank(path, meta, trace.distributedInfo), group, size,
                     events=len(trace.traceEvents), meta=meta)
    _collect(data, trace.traceEvents, meta.get("step"))
    return data


def _num(value: Number) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out and abs(out) != float("inf") else None


def _collect(data: TraceData, events: list[_Event], default_step: Any) -> None:
    """Sort events into step/stage/custom ranges and per-op self time."""
    steps: list[tuple[float, float, int]] = []
    annotations: list[tuple[str, str, float, float, int | None]] = []
    ops_by_tid: dict[Any, list[tuple[float, float, str]]] = {}
    for ev in events:
        if ev.ph != "X":
            continue
        ts, dur = _num(ev.ts), _num(ev.dur)
        if ts is None or dur is None or dur < 0:
            continue
        m = _STEP.match(ev.name)
        if m:
            steps.append((ts, ts + dur, int(m.group(1))))
        elif ev.cat in ("user_annotation", "stage", "step", "gpu_user_annotation") or (
                ev.name in _STAGES and ev.cat not in ("cpu_op", "kernel")):
            if ev.cat == "gpu_user_annotation":
                continue
            step = _num(ev.args.step) if ev.args is not None else None
            annotations.append((ev.name, ev.cat, ts, dur,
                                int(step) if step is not None else None))
        elif ev.cat in ("cpu_op", "kernel", "gpu_memcpy", "cuda_runtime"):
            ops_by_tid.setdefault((ev.pid, ev.tid, ev.cat), []).append((ts, dur, ev.name))
    steps.sort()
    starts = [s[0] for s in steps]
    fallback = default_step if isinstance(default_step, int) else None
    for ts, end, n in steps:
        data.ranges.append(Range(data.rank, "step", f"ProfilerStep#{n}", n, ts, end - ts))
    for name, cat, ts, dur, step in annotations:
        if step is None:
            i = bisect.bisect_right(starts, ts) - 1
            step = steps[i][2] if i >= 0 and ts <= steps[i][1] else fallback
        data.ranges.append(Range(data.rank, "stage" if cat == "stage" or name in _STAGES
                                 else "range", name, step, ts, dur))
    for ops in ops_by_tid.values():
        _self_times(ops, data.ops)


def _self_times(ops: list[tuple[float, float, str]], out: dict[str, list[float]]) -> None:
    """Self time = duration minus the time of directly nested ops on the same thread."""
    ops.sort(key=lambda o: (o[0], -o[1]))
    stack: list[list[Any]] = []  # [end, self_us, name]
    def pop() -> None:
        end, self_us, name = stack.pop()
        slot = out.setdefault(name, [0, 0.0])
        slot[0] += 1
        slot[1] += max(self_us, 0.0)
    for ts, dur, name in ops:
        while stack and stack[-1][0] <= ts:
            pop()
        if stack:
            stack[-1][1] -= min(dur, stack[-1][0] - ts)
        stack.append([ts + dur, dur, name])
    while stack:
        pop()


def _read_db(path: Path, group: str, size: int) -> TraceData:
    from mindspeed_prof.capture.backends.sqlite_trace import read_db_events

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta_rows = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    meta = json.loads(meta_rows.get("mindspeed_prof", "{}") or "{}")
    info = json.loads(meta_rows.get("distributedInfo", "{}") or "{}")
    events = []
    for name, cat, ph, ts, dur, pid, tid, args in read_db_events(path):
        step = json.loads(args).get("step") if args != "{}" else None
        events.append(_Event(ph=ph or "", cat=cat, name=name, ts=ts, dur=dur, tid=tid, pid=pid,
                             args=_Args(step=step)))
    data = TraceData(path, "db", _rank(path, meta, info), group, size, events=len(events),
                     meta=meta)
    _collect(data, events, meta.get("step"))
    return data


def _read_npu(folder: Path, group: str) -> TraceData:
    """A torch_npu ``*_ascend_pt`` folder, from its parsed ``ASCEND_PROFILER_OUTPUT``."""
    info_files = sorted(folder.glob("profiler_info_*.json"))
    m = _NPU_RANK.search(info_files[0].name) if info_files else None
    rank = int(m.group(1)) if m else _rank(folder, None, None)
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
        trace = _decoder.decode(trace_view.read_bytes())
        events = trace if isinstance(trace, list) else trace.traceEvents
        data.events = len(events)
        _collect(data, events, None)
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
        events: list[_Event] = []
        if "STEP_TIME" in tables:
            for sid, start, end in con.execute("SELECT id, startNs, endNs FROM STEP_TIME"):
                events.append(_Event(ph="X", cat="user_annotation", name=f"ProfilerStep#{sid}",
                                     ts=start / 1000.0, dur=(end - start) / 1000.0))
        if "MSTX_EVENTS" in tables and "STRING_IDS" in tables:
            rows = con.execute("SELECT m.startNs, m.endNs, s.value FROM MSTX_EVENTS m "
                               "JOIN STRING_IDS s ON s.id = m.message")
            for start, end, message in rows:
                if end is not None and end >= start:
                    events.append(_Event(ph="X", cat="user_annotation", name=str(message),
                                         ts=start / 1000.0, dur=(end - start) / 1000.0))
    finally:
        con.close()
    data.events = len(events)
    _collect(data, events, None)
