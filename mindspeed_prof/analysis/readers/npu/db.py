"""torch_npu's db export (``ascend_pytorch_profiler_<rank>.db``, ``analysis.db``) as TraceData."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.readers.events import Event
from mindspeed_prof.analysis.readers.model import CommRow, HcclOp, TraceData, tally
from mindspeed_prof.analysis.readers.npu.facts import api_name, facts
from mindspeed_prof.analysis.readers.npu.facts_db import hccl_ops_from_db, read_db_facts
from mindspeed_prof.analysis.readers.npu.memory import memory_summary
from mindspeed_prof.analysis.readers.npu.tables import step_number
from mindspeed_prof.analysis.readers.npu.text import (
    comm_family,
    device_row,
    kernel_name,
    link_rows,
)
from mindspeed_prof.analysis.readers.npu.trace import LaneSpan, stage_device_rows
from mindspeed_prof.analysis.readers.ranks import to_rank
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.formats.sqlite_read import connect

__all__ = ["API_OP", "as_ns", "read_analysis_db", "read_profiler_db", "rows_of", "tables_of"]

#: ENUM_API_TYPE's names of PYTORCH_API rows that are operators and mstx ranges.
API_OP, API_MSTX = "op", "mstx"


def tables_of(con: sqlite3.Connection) -> set[str]:
    """The names of a db's tables."""
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def as_ns(value: Any) -> int | None:
    """A nanosecond time: torch_npu stores some as TEXT (they exceed 2**53); parsed exactly."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return None


def rows_of(con: sqlite3.Connection, sql: str, path: Path, problems: list[str]) -> Iterator[Any]:
    """The rows of ``sql``; a line in ``problems`` (and no more rows) when it fails."""
    try:
        yield from con.execute(sql)
    except sqlite3.Error as err:
        problems.append(f"{path}: {err}; that table skipped")


def read_profiler_db(path: Path, data: TraceData) -> None:
    """Steps, host ops and ranges, kernels, runtime calls, collectives and memory of one rank."""
    with closing(connect(path)) as con:
        tables = tables_of(con)
        strings: dict[int, str] = (
            dict(rows_of(con, "SELECT id, value FROM STRING_IDS", path, data.problems))
            if "STRING_IDS" in tables
            else {}
        )
        name = strings.get
        if "RANK_DEVICE_MAP" in tables and data.rank is None:
            for (rank_id,) in rows_of(
                con, "SELECT rankId FROM RANK_DEVICE_MAP", path, data.problems
            ):
                if to_rank(rank_id) is not None:
                    data.rank = to_rank(rank_id)
        if "HOST_INFO" in tables:
            for (host,) in rows_of(con, "SELECT hostName FROM HOST_INFO", path, data.problems):
                data.source = str(host)
        _host_events(con, tables, name, path, data)
        if "OVERLAP_ANALYSIS" in tables:
            overlap = _overlap(con, path, data)
            if not data.device:  # no analysis.db: the steps' rows from the same intervals
                data.device.extend(stage_device_rows(data, overlap, ("step",)))
            data.device.extend(stage_device_rows(data, overlap, ("stage",)))
        _kernels(con, tables, name, path, data)
        if "CANN_API" in tables:
            longest = facts(data).api_max_us
            for api, count, ns, most in rows_of(
                con,
                "SELECT name, COUNT(*), SUM(endNs - startNs), MAX(endNs - startNs) "
                "FROM CANN_API GROUP BY name",
                path,
                data.problems,
            ):
                tally(data.runtime, name(api, str(api)), count, (ns or 0) / 1000.0)
                longest[api_name(str(name(api, str(api))))] = (most or 0) / 1000.0
        if "COMMUNICATION_OP" in tables and not data.comm:
            _comm_ops(con, name, path, data)
        _memory(con, tables, name, path, data)
        read_db_facts(
            con, tables, strings, lambda sql: rows_of(con, sql, path, data.problems), data
        )


def _host_events(
    con: sqlite3.Connection, tables: set[str], name: Any, path: Path, data: TraceData
) -> None:
    """PYTORCH_API ops (and ``ProfilerStep#N``), STEP_TIME when no step op, MSTX ranges."""
    events: list[Event] = []
    if "PYTORCH_API" in tables:
        types = (
            dict(rows_of(con, "SELECT id, name FROM ENUM_API_TYPE", path, data.problems))
            if ("ENUM_API_TYPE" in tables)
            else {}
        )
        for start, end, tid, api, kind in rows_of(
            con,
            "SELECT startNs, endNs, globalTid, name, type FROM PYTORCH_API",
            path,
            data.problems,
        ):
            s, e, api_type = as_ns(start), as_ns(end), types.get(kind, API_OP)
            if s is None or e is None or e < s or api_type not in (API_OP, API_MSTX):
                continue
            cat = "cpu_op" if api_type == API_OP else "user_annotation"
            events.append(
                Event(
                    ph="X",
                    cat=cat,
                    name=name(api, str(api)),
                    ts=s / 1000.0,
                    dur=(e - s) / 1000.0,
                    pid=0,
                    tid=tid,
                )
            )
    if "MSTX_EVENTS" in tables:
        for start, end, message in rows_of(
            con, "SELECT startNs, endNs, message FROM MSTX_EVENTS", path, data.problems
        ):
            s, e = as_ns(start), as_ns(end)
            if s is not None and e is not None and e >= s:
                events.append(
                    Event(
                        ph="X",
                        cat="user_annotation",
                        name=name(message, str(message)),
                        ts=s / 1000.0,
                        dur=(e - s) / 1000.0,
                    )
                )
    if "STEP_TIME" in tables and not any(ev.name.startswith("ProfilerStep#") for ev in events):
        for sid, start, end in rows_of(
            con, "SELECT id, startNs, endNs FROM STEP_TIME", path, data.problems
        ):
            s, e = as_ns(start), as_ns(end)
            if s is not None and e is not None and e >= s:  # a step is known by its name
                events.append(
                    Event(ph="X", name=f"ProfilerStep#{sid}", ts=s / 1000.0, dur=(e - s) / 1000.0)
                )
    data.events = len(events)
    from mindspeed_prof.analysis.readers.fold import collect  # numpy: only where rows are

    collect(data, events, None)
    if "PYTORCH_API" in tables:
        facts(data).sources["host"] = "PYTORCH_API"


#: OVERLAP_ANALYSIS.type, as torch_npu numbers the lanes of its text export's Overlap Analysis.
_OVERLAP_TYPES = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")


def _overlap(con: sqlite3.Connection, path: Path, data: TraceData) -> dict[str, list[LaneSpan]]:
    out: dict[str, list[LaneSpan]] = {}
    for start, end, kind in rows_of(
        con, "SELECT startNs, endNs, type FROM OVERLAP_ANALYSIS", path, data.problems
    ):
        s, e = as_ns(start), as_ns(end)
        if s is not None and e is not None and e >= s and kind in range(len(_OVERLAP_TYPES)):
            out.setdefault(_OVERLAP_TYPES[kind], []).append((s / 1e3, e / 1e3, (e - s) / 1e3))
    return out


def _kernels(
    con: sqlite3.Connection, tables: set[str], name: Any, path: Path, data: TraceData
) -> None:
    """TASK joined with COMPUTE_TASK_INFO (by op type), and HCCL ops from COMMUNICATION_OP."""
    queries = []
    if {"TASK", "COMPUTE_TASK_INFO"} <= tables:
        queries.append(
            "SELECT c.opType, c.name, COUNT(*), SUM(t.endNs - t.startNs) FROM TASK t "
            "JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
            "GROUP BY c.opType, c.name"
        )
    if "COMMUNICATION_OP" in tables:
        queries.append(
            "SELECT opType, opName, COUNT(*), SUM(endNs - startNs) "
            "FROM COMMUNICATION_OP GROUP BY opType, opName"
        )
    for sql in queries:
        for op_type, op_name, count, ns in rows_of(con, sql, path, data.problems):
            tally(
                data.kernels, kernel_name(name(op_type), name(op_name)), count, (ns or 0) / 1000.0
            )


def _comm_ops(con: sqlite3.Connection, name: Any, path: Path, data: TraceData) -> None:
    """COMMUNICATION_OP: elapse per op family; the rest (wait, transit, bandwidth) is analysis.db's.

    torch_npu's wait time is the Notify_Wait time on the op's master plane, which the profiler
    db does not mark; COMMUNICATION_OP.waitNs (some schemas) is another figure, so wait is
    None here rather than a different number under the same key.
    """
    rows: dict[str, CommRow] = {}
    ops: list[HcclOp] = []
    for op, ns in rows_of(
        con, "SELECT opName, endNs - startNs FROM COMMUNICATION_OP", path, data.problems
    ):
        ops.append(HcclOp(name=name(op, str(op)), kind="collective", elapse_ms=(ns or 0) / 1e6))
        family = comm_family(name(op, str(op)))
        row = rows.get(family)
        if row is None:
            row = rows[family] = CommRow(name=family, kind="collective", step=None, elapse_ms=0.0)
        row.count += 1
        row.elapse_ms = (row.elapse_ms or 0.0) + (ns or 0) / 1e6  # NULL where a time is missing
    data.comm.extend(rows.values())
    npu = facts(data)
    if ops:  # no analysis.db: the operators' times, their sizes unknown
        npu.hccl, npu.sources["hccl"] = ops, "COMMUNICATION_OP"


def _memory(
    con: sqlite3.Connection, tables: set[str], name: Any, path: Path, data: TraceData
) -> None:
    """MEMORY_RECORD, OP_MEMORY and NPU_MODULE_MEM (bytes, ns) as the CSVs give them."""
    records = []
    if "MEMORY_RECORD" in tables:
        for comp, ts, alloc, reserved in rows_of(
            con,
            "SELECT component, timestamp, totalAllocated, totalReserved FROM MEMORY_RECORD",
            path,
            data.problems,
        ):
            t = as_ns(ts)
            if t is not None:
                records.append((name(comp, str(comp)), t / 1000.0, alloc, reserved))
    allocs = []
    if "OP_MEMORY" in tables:
        for op, size in rows_of(con, "SELECT name, size FROM OP_MEMORY", path, data.problems):
            if isinstance(size, (int, float)) and size > 0:
                allocs.append((name(op, str(op)), float(size)))
    modules = []
    if "NPU_MODULE_MEM" in tables:
        enum = (
            dict(rows_of(con, "SELECT id, name FROM ENUM_MODULE", path, data.problems))
            if ("ENUM_MODULE" in tables)
            else {}
        )
        for module, size in rows_of(
            con, "SELECT moduleId, totalReserved FROM NPU_MODULE_MEM", path, data.problems
        ):
            if isinstance(size, (int, float)):
                modules.append((enum.get(module, str(module)), float(size)))
    memory = memory_summary(records, allocs, modules)
    if memory is not None:
        data.memory = memory


_STEP_TRACE_EXTRA = {
    "step_ms": "stage",
    "bubble_ms": "bubble",
    "preparing_ms": "preparing",
    "comm_exposed_no_recv_ms": "communication_not_overlapped_and_exclude_receive",
}


def read_analysis_db(path: Path, data: TraceData) -> None:
    """``analysis.db``: StepTraceTime -> ``device``; CommAnalyzerTime/Bandwidth -> ``comm``."""
    with closing(connect(path)) as con:
        tables = tables_of(con)
        if "StepTraceTime" in tables:
            _step_trace(con, path, data)
        if "CommAnalyzerTime" in tables:
            _comm_analyzer(con, tables, path, data)
            npu = facts(data)
            npu.hccl = hccl_ops_from_db(
                con, lambda sql: rows_of(con, sql, path, data.problems), tables
            )
            npu.sources["hccl"] = "CommAnalyzerTime"


def _step_trace(con: sqlite3.Connection, path: Path, data: TraceData) -> None:
    cur = con.execute("SELECT * FROM StepTraceTime")
    cols = [d[0] for d in cur.description]
    missing = [c for c in ("computing", "communication_not_overlapped", "free") if c not in cols]
    if missing:
        data.problems.append(f"{path}: StepTraceTime has no column {missing[0]!r}; table skipped")
        return
    for values in cur:
        row = dict(zip(cols, values))
        nums = [
            float(v)
            for c in ("computing", "communication_not_overlapped", "free")
            if isinstance(v := row.get(c), (int, float))
        ]
        if len(nums) < 3:
            data.problems.append(
                f"{path}: StepTraceTime step {row.get('step')!r} has empty times; row skipped"
            )
            continue
        computing, exposed, free = nums
        extra = {k: row.get(c) for k, c in _STEP_TRACE_EXTRA.items() if c in cols}
        data.device.append(
            device_row(
                step_number(row.get("step")),
                computing,
                exposed,
                row.get("overlapped"),
                row.get("communication"),
                free,
                extra,
            )
        )


def _comm_analyzer(con: sqlite3.Connection, tables: set[str], path: Path, data: TraceData) -> None:
    rows: dict[tuple[int | None, str, str], CommRow] = {}
    for op, step, kind, elapse, transit, wait, sync, idle in rows_of(
        con,
        "SELECT hccl_op_name, step, type, elapse_time, transit_time, wait_time, "
        "synchronization_time, idle_time FROM CommAnalyzerTime",
        path,
        data.problems,
    ):
        key = (step_number(step), str(kind), comm_family(str(op)))
        row = rows.get(key)
        if row is None:
            row = rows[key] = CommRow(
                name=key[2],
                kind=key[1],
                step=key[0],
                elapse_ms=0.0,
                wait_ms=0.0,
                transit_ms=0.0,
                sync_ms=0.0,
                idle_ms=0.0,
                size_mb=0.0,
                links={},
            )
        row.count += 1
        row.elapse_ms = (row.elapse_ms or 0.0) + float(elapse or 0.0)
        row.wait_ms = (row.wait_ms or 0.0) + float(wait or 0.0)
        row.transit_ms = (row.transit_ms or 0.0) + float(transit or 0.0)
        row.sync_ms = (row.sync_ms or 0.0) + float(sync or 0.0)
        row.idle_ms = (row.idle_ms or 0.0) + float(idle or 0.0)
    if "CommAnalyzerBandwidth" in tables:
        time: dict[tuple[int | None, str, str], float] = {}
        links: dict[tuple[int | None, str, str], dict[str, list[float]]] = {}
        # One row per op, transport and packet size; size and time repeat on each: keep one.
        for op, step, kind, transport, size, transit in rows_of(
            con,
            "SELECT DISTINCT hccl_op_name, step, type, transport_type, transit_size, "
            "transit_time FROM CommAnalyzerBandwidth",
            path,
            data.problems,
        ):
            key = (step_number(step), str(kind), comm_family(str(op)))
            if key not in rows:
                continue
            size, transit = float(size or 0.0), float(transit or 0.0)
            if size or transit:
                slot = links.setdefault(key, {}).setdefault(str(transport), [0.0, 0.0])
                slot[0] += size
                slot[1] += transit
            if transport in ("SDMA", "RDMA"):  # SDMA is HCCS + PCIE + SIO: the two cover all
                rows[key].size_mb = (rows[key].size_mb or 0.0) + size
                time[key] = time.get(key, 0.0) + transit
        for key, ms in time.items():
            rows[key].bandwidth_gbps = ratio(rows[key].size_mb or 0.0, ms, None)
        for key, sums in links.items():
            rows[key].links = link_rows(sums)
    data.comm.extend(rows.values())
