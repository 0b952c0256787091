"""The dbs' share of ``NpuFacts``: the profiler db's environment, operators, copy tasks and
launch order (``read_db_facts``), and analysis.db's communication operators
(``hccl_ops_from_db``). Grouping is left to SQLite.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mindspeed_prof.analysis.readers.model import HcclOp, HcclTasks, NpuFacts, NpuOp, TraceData
from mindspeed_prof.analysis.readers.npu.facts import (
    COPY_TASKS,
    RATIOS,
    env_text,
    facts,
    shapes,
)
from mindspeed_prof.analysis.readers.npu.facts_groups import LaunchOrder
from mindspeed_prof.analysis.readers.npu.tables import step_number

__all__ = ["Rows", "hccl_ops_from_db", "read_db_facts"]

#: ``rows(sql)`` runs a query; a failing one is a problem line and no rows.
Rows = Callable[[str], Iterator[Any]]

_OP_COLUMNS = (
    "name",
    "opType",
    "taskType",
    "inputShapes",
    "outputShapes",
    "inputDataTypes",
    "outputDataTypes",
)
_TASK_COLUMNS = {"globalTaskId", "taskType", "transportType", "linkType", "size", "opId"}


@dataclass(frozen=True)
class _Db:
    """The profiler db as the queries here read it: its ``tables``, ``strings`` (STRING_IDS),
    ``rows`` and the ``ids`` of the strings they filter on (``_wanted``)."""

    con: sqlite3.Connection
    tables: set[str]
    strings: dict[int, str]
    rows: Rows
    ids: dict[str, list[int]]


def read_db_facts(
    con: sqlite3.Connection, tables: set[str], strings: dict[int, str], rows: Rows, data: TraceData
) -> None:
    """The profiler db's share: META_DATA's environment, COMPUTE_TASK_INFO operators with
    TASK_PMU_INFO ratios, COMMUNICATION_TASK_INFO copy tasks, the order of CANN_API launches
    and synchronizations (their longest calls come with the reader's CANN_API query).
    ``strings`` is STRING_IDS. A table the reader already found unreadable (or without the
    columns needed here) is not queried again: one problem line per table."""
    npu = facts(data)
    db = _Db(con, tables, strings, rows, _wanted(strings))
    if "META_DATA" in tables and _has(con, "META_DATA", {"name", "value"}):
        for key, value in rows("SELECT name, value FROM META_DATA"):
            if key == "ENV_VARIABLES":
                try:
                    env = json.loads(value)
                except (TypeError, ValueError):
                    continue
                if isinstance(env, dict):
                    npu.env = env_text(env)
                    npu.sources["env"] = "META_DATA"
    task = "TASK" in tables and _has(con, "TASK", {"globalTaskId", "startNs", "endNs"})
    if task and "COMPUTE_TASK_INFO" in tables:
        _db_ops(db, npu)
    if task and {"COMMUNICATION_TASK_INFO", "COMMUNICATION_OP"} <= tables:
        _db_tasks(db, npu)
    if npu.api_max_us:  # CANN_API was read
        npu.sources["api"] = "CANN_API"
        if db.ids["order"]:
            order = LaunchOrder()
            marks = ",".join(str(i) for i in db.ids["order"])
            for api, start in rows(f"SELECT name, startNs FROM CANN_API WHERE name IN ({marks})"):
                order.add(strings.get(api, ""), float(start or 0))
            npu.launch_sync = order.done()
            npu.sources["order"] = "CANN_API"


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')}


def _has(con: sqlite3.Connection, table: str, columns: set[str]) -> bool:
    return _columns(con, table) >= columns


def _ratio(cell: object) -> float:
    if not isinstance(cell, (int, float, str, bytes)):
        return 0.0
    try:
        value = float(cell)
    except (TypeError, ValueError):
        return 0.0
    return value if value == value and abs(value) != float("inf") else 0.0


def _wanted(strings: dict[int, str]) -> dict[str, list[int]]:
    """The STRING_IDS ids these queries filter on, found in one pass over the strings."""
    out: dict[str, list[int]] = {"order": [], "static": [], "dynamic": [], "copies": []}
    ratios = set(RATIOS)
    out.update({r: [] for r in RATIOS})
    for i, v in strings.items():
        if not isinstance(v, str) or not isinstance(i, int):
            continue
        if v in ratios:
            out[v].append(i)
        elif v in COPY_TASKS:
            out["copies"].append(i)
        elif v == "launch" or v.startswith("aclrtSynchronizeStream"):
            out["order"].append(i)
        else:
            state = v.strip().lower()
            if state in ("static", "dynamic"):
                out[state].append(i)
    return out


def _op_keys(columns: set[str]) -> str:
    """The grouping columns, NULL for those an older schema lacks."""
    return ", ".join(f"c.{c}" if c in columns else "NULL" for c in _OP_COLUMNS)


def _db_ops(db: _Db, npu: NpuFacts) -> None:
    columns = _columns(db.con, "COMPUTE_TASK_INFO")
    if not {"globalTaskId", "name"} <= columns:
        return
    keys = _op_keys(columns)
    static, dynamic = db.ids["static"], db.ids["dynamic"]
    if "opState" in columns:
        state = (
            f"SUM(c.opState IN ({','.join(map(str, static)) or 'NULL'})), "
            f"SUM(c.opState IN ({','.join(map(str, static + dynamic)) or 'NULL'}))"
        )
    else:
        state = "0, 0"
    groups: dict[tuple[object, ...], NpuOp] = {}
    for *key, count, total, most, n_static, n_stated in db.rows(
        f"SELECT {keys}, COUNT(*), SUM(t.endNs - t.startNs), MAX(t.endNs - t.startNs), "
        f"{state} FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
        f"GROUP BY {keys}"
    ):
        text = [db.strings.get(k, "") if k is not None else "" for k in key]
        groups[tuple(key)] = NpuOp(
            name=text[0],
            type=text[1],
            core=text[2],
            input_shapes=shapes(text[3]),
            output_shapes=shapes(text[4]),
            input_dtypes=text[5],
            output_dtypes=text[6],
            count=int(count or 0),
            total_us=(total or 0) / 1000.0,
            max_us=(most or 0) / 1000.0,
            static=int(n_static or 0),
            stated=int(n_stated or 0),
            ratios={},
        )
    metrics = {i: r for r in RATIOS for i in db.ids[r]}
    if (
        "TASK_PMU_INFO" in db.tables
        and metrics
        and _has(db.con, "TASK_PMU_INFO", {"globalTaskId", "name", "value"})
    ):
        # Summed here, a task at a time: SQLite's join and GROUP BY over them is slower.
        task_key = {
            r[0]: tuple(r[1:])
            for r in db.rows(f"SELECT c.globalTaskId, {keys} FROM COMPUTE_TASK_INFO c")
        }
        marks = ",".join(str(int(i)) for i in metrics)
        for task, metric, value in db.rows(
            f"SELECT globalTaskId, name, value FROM TASK_PMU_INFO WHERE name IN ({marks})"
        ):
            op = groups.get(task_key.get(task, ()))
            if op is not None:
                op.ratios[metrics[metric]] = op.ratios.get(metrics[metric], 0.0) + _ratio(value)
    npu.ops = list(groups.values())
    npu.sources["ops"] = "COMPUTE_TASK_INFO"


def _db_tasks(db: _Db, npu: NpuFacts) -> None:
    columns = _columns(db.con, "COMMUNICATION_TASK_INFO")
    ops = _columns(db.con, "COMMUNICATION_OP")
    if not (columns >= _TASK_COLUMNS and ops >= {"opId", "opName"}):
        return  # a schema without the tasks' links and sizes: nothing to judge them on
    if not any(True for _ in db.rows("SELECT 1 FROM COMMUNICATION_TASK_INFO LIMIT 1")):
        return  # level0: operators without their tasks
    enum = {"transport": "ENUM_HCCL_TRANSPORT_TYPE", "link": "ENUM_HCCL_LINK_TYPE"}
    names = {
        k: dict(db.rows(f"SELECT id, name FROM {t}")) if t in db.tables else {}
        for k, t in enum.items()
    }
    sdma = [i for i, v in names["transport"].items() if v == "SDMA"]
    on_chip = [i for i, v in names["link"].items() if v == "ON_CHIP"]
    copies = db.ids["copies"]
    out: dict[str, HcclTasks] = {}
    for (op_name,) in db.rows("SELECT DISTINCT opName FROM COMMUNICATION_OP"):
        op = db.strings.get(op_name, str(op_name))
        out.setdefault(op, HcclTasks(op=op, sizes={}))
    if not (sdma and copies):
        npu.tasks = list(out.values())
        npu.sources["tasks"] = "COMMUNICATION_TASK_INFO"
        return
    for op_name, size, count, ns in db.rows(
        "SELECT o.opName, c.size, COUNT(*), SUM(t.endNs - t.startNs) "
        "FROM COMMUNICATION_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId "
        "JOIN COMMUNICATION_OP o ON o.opId = c.opId "
        f"WHERE c.taskType IN ({','.join(map(str, copies))}) "
        f"AND c.transportType IN ({','.join(map(str, sdma))}) "
        f"AND c.linkType NOT IN ({','.join(map(str, on_chip)) or '-1'}) "
        "GROUP BY o.opName, c.size"
    ):
        if not isinstance(size, int):
            continue
        op = db.strings.get(op_name, str(op_name))
        slot = out.setdefault(op, HcclTasks(op=op, sizes={})).sizes.setdefault(size, [0, 0.0])
        slot[0] += int(count or 0)
        slot[1] += (ns or 0) / 1000.0
    npu.tasks = list(out.values())
    npu.sources["tasks"] = "COMMUNICATION_TASK_INFO"


def hccl_ops_from_db(con: sqlite3.Connection, rows: Rows, tables: set[str]) -> list[HcclOp]:
    """analysis.db's CommAnalyzerTime (elapse) and CommAnalyzerBandwidth (SDMA/RDMA size and
    time, repeated on each packet-size row: kept once) per operator."""
    ops: dict[tuple[str, str, str], HcclOp] = {}
    if not _has(con, "CommAnalyzerTime", {"hccl_op_name", "step", "type", "elapse_time"}):
        return []  # the reader said so already
    for op, step, kind, elapse in rows(
        "SELECT hccl_op_name, step, type, elapse_time FROM CommAnalyzerTime"
    ):
        key = (str(op), str(step), str(kind))
        ops[key] = HcclOp(
            name=str(op).split("@")[0],
            kind=str(kind),
            step=step_number(step),
            elapse_ms=float(elapse) if isinstance(elapse, (int, float)) else None,
        )
    if "CommAnalyzerBandwidth" not in tables or not _has(
        con,
        "CommAnalyzerBandwidth",
        {"hccl_op_name", "step", "type", "transport_type", "transit_size", "transit_time"},
    ):
        return list(ops.values())
    for op, step, kind, transport, size, time in rows(
        "SELECT DISTINCT hccl_op_name, step, type, transport_type, transit_size, "
        "transit_time FROM CommAnalyzerBandwidth WHERE transport_type IN ('SDMA', 'RDMA')"
    ):
        row = ops.get((str(op), str(step), str(kind)))
        if row is None:
            continue
        mb = float(size) if isinstance(size, (int, float)) else None
        ms = float(time) if isinstance(time, (int, float)) else None
        if transport == "SDMA":
            row.sdma_mb, row.sdma_ms = mb, ms
        else:
            row.rdma_mb, row.rdma_ms = mb, ms
    return list(ops.values())
