"""The Ascend-specific facts of a torch_npu capture (``NpuFacts``): what the findings of
``analysis.findings.npu`` read, gathered by the text and db readers as they pass the files.

Accumulators here are filled a row or an event at a time (``OpGroups``, ``TaskGroups``,
``LaunchOrder``), so the readers keep one pass over each file; ``read_env`` and
``read_db_facts`` read what only these findings need.
"""

from __future__ import annotations

import bisect
import json
import sqlite3
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.readers.model import HcclOp, HcclTasks, NpuFacts, NpuOp, TraceData
from mindspeed_prof.analysis.readers.npu.tables import step_number
from mindspeed_prof.analysis.readers.ranks import world_size
from mindspeed_prof.formats.header import merged, read_header

__all__ = [
    "COPY_TASKS",
    "RATIOS",
    "LaunchOrder",
    "OpGroups",
    "TaskGroups",
    "api_name",
    "facts",
    "hccl_ops_from_db",
    "is_launch",
    "is_sync",
    "read_db_facts",
    "read_env",
]

#: The PMU ratios kept per operator (kernel_details.csv columns, TASK_PMU_INFO names).
RATIOS = (
    "aic_mac_ratio",
    "aic_scalar_ratio",
    "aic_mte1_ratio",
    "aic_mte2_ratio",
    "aic_fixpipe_ratio",
    "aiv_vec_ratio",
    "aiv_scalar_ratio",
    "aiv_mte2_ratio",
    "aiv_mte3_ratio",
)
#: HCCL tasks that copy data (the ones whose sizes decide alignment).
COPY_TASKS = ("Memcpy", "Reduce_Inline")


def facts(data: TraceData) -> NpuFacts:
    """``data.npu``, made on first use."""
    if data.npu is None:
        data.npu = NpuFacts()
    return data.npu


def api_name(name: str) -> str:
    """``AscendCL@aclrtSynchronizeStream`` (trace_view's CANN lane) -> ``aclrtSynchronizeStream``:
    the name api_statistic.csv and the db's CANN_API give."""
    return name.rsplit("@", 1)[-1].strip()


def is_sync(name: str) -> bool:
    """An ACL call that blocks the host on a stream (not the runtime call nested in it)."""
    return api_name(name).startswith("aclrtSynchronizeStream")


def is_launch(name: str) -> bool:
    return api_name(name) == "launch"


def read_env(folder: Path, data: TraceData) -> None:
    """``profiler_metadata.json``'s ENV_VARIABLES (torch_npu writes it beside the output), and
    the job's world size where MindSpeed records its ``distributed_args``, and the metadata our
    backend added to it (``mindspeed_prof``: the run id, role, window...)."""
    path = folder / "profiler_metadata.json"
    if not path.is_file():
        return
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        data.problems.append(f"{path}: not readable JSON ({type(err).__name__}); file skipped")
        return
    world = world_size(doc.get("distributed_args")) if isinstance(doc, dict) else None
    ours, odd = read_header(doc.get("mindspeed_prof") if isinstance(doc, dict) else None, path)
    if odd:
        data.problems.append(odd)
    # what our backend recorded (the run, role, window...) under what the folder says
    data.meta = merged(ours, data.meta)
    if world is not None:
        data.meta.world_size = world
    env = doc.get("ENV_VARIABLES") if isinstance(doc, dict) else None
    if isinstance(env, dict):
        npu = facts(data)
        npu.env = {str(k): "" if v is None else str(v) for k, v in env.items()}
        npu.sources["env"] = path.name


def _shape(text: str | None) -> str:
    return (text or "").strip().strip('"')


def _ratio(cell: object) -> float:
    if not isinstance(cell, (int, float, str, bytes)):
        return 0.0
    try:
        value = float(cell)
    except (TypeError, ValueError):
        return 0.0
    return value if value == value and abs(value) != float("inf") else 0.0


class OpGroups:
    """Device operators grouped by name, type, core, shapes and data types (``NpuOp``); the
    PMU ratios named ``ratios`` are summed, a run at a time."""

    def __init__(self, ratios: tuple[str, ...] = ()) -> None:
        self.groups: dict[tuple[str, ...], NpuOp] = {}
        self.ratios = ratios

    def add(
        self,
        key: tuple[str, str, str, str, str, str, str],
        us: float,
        state: str | None,
        cells: list[str] | tuple[()] = (),
    ) -> None:
        op = self.groups.get(key)
        if op is None:
            name, kind, core, ins, outs, idt, odt = key
            op = self.groups[key] = NpuOp(
                name=name,
                type=kind,
                core=core,
                input_shapes=_shape(ins),
                output_shapes=_shape(outs),
                input_dtypes=idt,
                output_dtypes=odt,
                ratios=dict.fromkeys(self.ratios, 0.0),
            )
        op.count += 1
        op.total_us += us
        if us > op.max_us:
            op.max_us = us
        if state:
            state = state.strip().lower()
            if state == "static":
                op.stated += 1
                op.static += 1
            elif state == "dynamic":
                op.stated += 1
        sums = op.ratios
        for name, cell in zip(self.ratios, cells):
            try:
                value = float(cell)
            except (TypeError, ValueError):
                continue
            if value == value and value not in (_INF, -_INF):
                sums[name] += value

    def done(self) -> list[NpuOp]:
        return list(self.groups.values())


_INF = float("inf")


class TaskGroups:
    """HCCL copy tasks placed in the operator whose span holds their start (``HcclTasks``)."""

    def __init__(self) -> None:
        self.ops: dict[Hashable, list[tuple[float, float, str]]] = {}  # lane -> (start, end, name)
        self.tasks: list[tuple[Hashable, float, int, float]] = []  # (lane, start, bytes, us)
        self.seen = False  # any task at all: the capture has task detail (not level0)

    def op(self, lane: Hashable, name: str, start: float, dur: float) -> None:
        self.ops.setdefault(lane, []).append((start, start + dur, name))

    def task(self, lane: Hashable, start: float, size: int, dur: float) -> None:
        self.tasks.append((lane, start, size, dur))

    def done(self) -> list[HcclTasks]:
        spans = {lane: sorted(ops) for lane, ops in self.ops.items()}
        starts = {lane: [s for s, _, _ in ops] for lane, ops in spans.items()}
        out: dict[str, HcclTasks] = {
            name: HcclTasks(op=name, sizes={}) for ops in spans.values() for _, _, name in ops
        }
        for lane, start, size, dur in self.tasks:
            ops = spans.get(lane, [])
            i = bisect.bisect_right(starts.get(lane, []), start) - 1
            if i < 0 or start > ops[i][1]:
                continue  # a task outside every operator's span
            slot = out[ops[i][2]].sizes.setdefault(size, [0, 0.0])
            slot[0] += 1
            slot[1] += dur
        return list(out.values())


class LaunchOrder:
    """Node launches and stream synchronizations in start order: how many synchronizations
    came right after a launch (msprof-analyze's "synchronize stream" check)."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, bool]] = []  # (start, is a synchronization)

    def add(self, name: str, start: float) -> None:
        if is_sync(name):
            self.calls.append((start, True))
        elif is_launch(name):
            self.calls.append((start, False))

    def done(self) -> list[int] | None:
        if not self.calls:
            return None
        self.calls.sort()
        launches = sum(1 for _, sync in self.calls if not sync)
        syncs = len(self.calls) - launches
        after = sum(
            1 for (_, prev), (_, sync) in zip(self.calls, self.calls[1:]) if sync and not prev
        )
        return [launches, syncs, after]


Rows = Callable[[str], Iterator[Any]]


def read_db_facts(
    con: sqlite3.Connection, tables: set[str], strings: dict[int, str], rows: Rows, data: TraceData
) -> None:
    """The profiler db's share: META_DATA's environment, COMPUTE_TASK_INFO operators with
    TASK_PMU_INFO ratios, COMMUNICATION_TASK_INFO copy tasks, the order of CANN_API launches
    and synchronizations (their longest calls come with the reader's CANN_API query).
    ``strings`` is STRING_IDS; ``rows(sql)`` runs a query, a failing one being a problem line
    and no rows. A table the reader already found unreadable (or without the columns needed
    here) is not queried again: one problem line per table. Grouping is left to SQLite."""
    npu = facts(data)
    ids = _wanted(strings)
    if "META_DATA" in tables and _has(con, "META_DATA", {"name", "value"}):
        for key, value in rows("SELECT name, value FROM META_DATA"):
            if key == "ENV_VARIABLES":
                try:
                    env = json.loads(value)
                except (TypeError, ValueError):
                    continue
                if isinstance(env, dict):
                    npu.env = {str(k): "" if v is None else str(v) for k, v in env.items()}
                    npu.sources["env"] = "META_DATA"
    task = "TASK" in tables and _has(con, "TASK", {"globalTaskId", "startNs", "endNs"})
    if task and "COMPUTE_TASK_INFO" in tables:
        _db_ops(con, tables, ids, strings, rows, npu)
    if task and {"COMMUNICATION_TASK_INFO", "COMMUNICATION_OP"} <= tables:
        _db_tasks(con, tables, ids, strings, rows, npu)
    if npu.api_max_us:  # CANN_API was read
        npu.sources["api"] = "CANN_API"
        if ids["order"]:
            order = LaunchOrder()
            marks = ",".join(str(i) for i in ids["order"])
            for api, start in rows(f"SELECT name, startNs FROM CANN_API WHERE name IN ({marks})"):
                order.add(strings.get(api, ""), float(start or 0))
            npu.launch_sync = order.done()
            npu.sources["order"] = "CANN_API"


def _has(con: sqlite3.Connection, table: str, columns: set[str]) -> bool:
    return {r[1] for r in con.execute(f'PRAGMA table_info("{table}")')} >= columns


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


_OP_COLUMNS = (
    "name",
    "opType",
    "taskType",
    "inputShapes",
    "outputShapes",
    "inputDataTypes",
    "outputDataTypes",
)


def _op_keys(columns: set[str]) -> str:
    """The grouping columns, NULL for those an older schema lacks."""
    return ", ".join(f"c.{c}" if c in columns else "NULL" for c in _OP_COLUMNS)


def _db_ops(
    con: sqlite3.Connection,
    tables: set[str],
    ids: dict[str, list[int]],
    strings: dict[int, str],
    rows: Rows,
    npu: NpuFacts,
) -> None:
    columns = {r[1] for r in con.execute("PRAGMA table_info(COMPUTE_TASK_INFO)")}
    if not {"globalTaskId", "name"} <= columns:
        return
    keys = _op_keys(columns)
    static, dynamic = ids["static"], ids["dynamic"]
    if "opState" in columns:
        state = (
            f"SUM(c.opState IN ({','.join(map(str, static)) or 'NULL'})), "
            f"SUM(c.opState IN ({','.join(map(str, static + dynamic)) or 'NULL'}))"
        )
    else:
        state = "0, 0"
    groups: dict[tuple[object, ...], NpuOp] = {}
    for *key, count, total, most, n_static, n_stated in rows(
        f"SELECT {keys}, COUNT(*), SUM(t.endNs - t.startNs), MAX(t.endNs - t.startNs), "
        f"{state} FROM TASK t JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
        f"GROUP BY {keys}"
    ):
        text = [strings.get(k, "") if k is not None else "" for k in key]
        groups[tuple(key)] = NpuOp(
            name=text[0],
            type=text[1],
            core=text[2],
            input_shapes=_shape(text[3]),
            output_shapes=_shape(text[4]),
            input_dtypes=text[5],
            output_dtypes=text[6],
            count=int(count or 0),
            total_us=(total or 0) / 1000.0,
            max_us=(most or 0) / 1000.0,
            static=int(n_static or 0),
            stated=int(n_stated or 0),
            ratios={},
        )
    metrics = {i: r for r in RATIOS for i in ids[r]}
    if (
        "TASK_PMU_INFO" in tables
        and metrics
        and _has(con, "TASK_PMU_INFO", {"globalTaskId", "name", "value"})
    ):
        # Summed here, a task at a time: SQLite's join and GROUP BY over them is slower.
        task_key = {
            r[0]: tuple(r[1:])
            for r in rows(f"SELECT c.globalTaskId, {keys} FROM COMPUTE_TASK_INFO c")
        }
        marks = ",".join(str(int(i)) for i in metrics)
        for task, metric, value in rows(
            f"SELECT globalTaskId, name, value FROM TASK_PMU_INFO WHERE name IN ({marks})"
        ):
            op = groups.get(task_key.get(task, ()))
            if op is not None:
                op.ratios[metrics[metric]] = op.ratios.get(metrics[metric], 0.0) + _ratio(value)
    npu.ops = list(groups.values())
    npu.sources["ops"] = "COMPUTE_TASK_INFO"


_TASK_COLUMNS = {"globalTaskId", "taskType", "transportType", "linkType", "size", "opId"}


def _db_tasks(
    con: sqlite3.Connection,
    tables: set[str],
    ids: dict[str, list[int]],
    strings: dict[int, str],
    rows: Rows,
    npu: NpuFacts,
) -> None:
    columns = {r[1] for r in con.execute("PRAGMA table_info(COMMUNICATION_TASK_INFO)")}
    ops = {r[1] for r in con.execute("PRAGMA table_info(COMMUNICATION_OP)")}
    if not (columns >= _TASK_COLUMNS and ops >= {"opId", "opName"}):
        return  # a schema without the tasks' links and sizes: nothing to judge them on
    if not any(True for _ in rows("SELECT 1 FROM COMMUNICATION_TASK_INFO LIMIT 1")):
        return  # level0: operators without their tasks
    enum = {"transport": "ENUM_HCCL_TRANSPORT_TYPE", "link": "ENUM_HCCL_LINK_TYPE"}
    names = {
        k: dict(rows(f"SELECT id, name FROM {t}")) if t in tables else {} for k, t in enum.items()
    }
    sdma = [i for i, v in names["transport"].items() if v == "SDMA"]
    on_chip = [i for i, v in names["link"].items() if v == "ON_CHIP"]
    copies = ids["copies"]
    out: dict[str, HcclTasks] = {}
    for (op_name,) in rows("SELECT DISTINCT opName FROM COMMUNICATION_OP"):
        op = strings.get(op_name, str(op_name))
        out.setdefault(op, HcclTasks(op=op, sizes={}))
    if not (sdma and copies):
        npu.tasks = list(out.values())
        npu.sources["tasks"] = "COMMUNICATION_TASK_INFO"
        return
    for op_name, size, count, ns in rows(
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
        op = strings.get(op_name, str(op_name))
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
