"""torch_npu's db export, read and checked against the tables torch_npu wrote."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.model import (
    Alloc,
    CommRow,
    DeviceRow,
    LinkShare,
    Memory,
    Tally,
    TraceData,
)
from mindspeed_prof.analysis.readers.npu.db import read_analysis_db, read_profiler_db

OUT = "ASCEND_PROFILER_OUTPUT"
MS = 1_000_000  # ns


def _query(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db)) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize("name", ["db/rank0_ascend_pt", "db/rank1_ascend_pt"])
def test_device_rows_are_step_trace_time(npu, name: str) -> None:
    folder = npu(name)
    ((step, computing, exposed, overlapped, comm, free, stage),) = _query(
        folder / OUT / "analysis.db",
        "SELECT step, computing, communication_not_overlapped, "
        "overlapped, communication, free, stage FROM StepTraceTime",
    )
    data = read(folder)
    (row,) = data.device
    assert (row.step, data.rank) == (int(step), int(name[-len("1_ascend_pt")]))
    for key, value in (
        ("compute_ms", computing),
        ("comm_exposed_ms", exposed),
        ("overlap_ms", overlapped),
        ("comm_ms", comm),
        ("idle_ms", free),
        ("step_ms", stage),
    ):
        assert getattr(row, key) == pytest.approx(value / 1000.0, rel=1e-12), key


def test_steps_ops_kernels_comm_and_memory_come_from_the_profiler_db(npu) -> None:
    folder = npu("db/rank0_ascend_pt")
    db = folder / OUT / "ascend_pytorch_profiler_0.db"
    data = read(folder)
    assert (data.kind, data.meta.export, data.meta.level) == ("npu", "db", "level1")
    ((sid, start, end),) = _query(db, "SELECT id, startNs, endNs FROM STEP_TIME")
    (step,) = [r for r in data.ranges if r.kind == "step"]
    assert step.step == sid
    assert step.dur == pytest.approx((end - start) / 1000.0, abs=0.01)
    ((ops,),) = _query(
        db,
        "SELECT COUNT(*) FROM PYTORCH_API p JOIN ENUM_API_TYPE e "
        "ON e.id = p.type WHERE e.name = 'op'",
    )
    assert sum(t.count for t in data.ops.values()) == ops - 1  # less ProfilerStep#50, a step
    # HCCL ops add up to StepTraceTime's communication (torch_npu's own breakdown)
    ((comm_us,),) = _query(folder / OUT / "analysis.db", "SELECT communication FROM StepTraceTime")
    assert data.kernels["hcom_allReduce_"].total == pytest.approx(comm_us, abs=0.01)
    (row,) = [r for r in data.comm if r.kind == "collective"]
    assert row.elapse_ms == pytest.approx(comm_us / 1000.0, rel=1e-6)
    assert row.count == 4 and row.bandwidth_gbps is not None and row.bandwidth_gbps > 0
    ((peak, reserved),) = _query(
        db,
        "SELECT MAX(totalAllocated), MAX(totalReserved) FROM MEMORY_RECORD m "
        "JOIN STRING_IDS s ON s.id = m.component WHERE s.value = 'PTA+GE'",
    )
    assert data.memory is not None and data.memory.source == "torch_npu"
    assert (data.memory.peak_allocated_bytes, data.memory.peak_reserved_bytes) == (peak, reserved)
    assert data.memory.top_ops and data.runtime and data.source == "ubuntu"


def test_db_kernels_count_as_the_text_runs_op_statistic(npu) -> None:
    """Two runs of one program (text and db export): the same kernels, as many times each."""
    db = read(npu("db/rank0_ascend_pt")).kernels
    with open(npu("text/rank0_ascend_pt") / OUT / "op_statistic.csv", newline="") as f:
        text = {r["OP Type"]: int(r["Count"]) for r in csv.DictReader(f)}
    assert {k: t.count for k, t in db.items() if not k.startswith("hcom_")} == text


def test_db_and_text_exports_have_the_same_shape(npu) -> None:
    text, db = read(npu("text/rank0_ascend_pt")), read(npu("db/rank0_ascend_pt"))
    assert _given(text.device[0]) == _given(db.device[0])
    assert {r.kind for r in db.comm} <= {r.kind for r in text.comm}
    assert text.memory is not None and db.memory is not None
    assert _given(db.memory) == _given(text.memory)
    assert set(db.ops) == set(text.ops)


def _given(row: DeviceRow | Memory) -> set[str]:
    """The fields a reader filled (not None, not empty)."""
    return {k for k in row.__struct_fields__ if getattr(row, k) not in (None, [], {})}


def test_an_older_schema_without_a_column_still_reads(npu, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(npu("db/rank0_ascend_pt"), tmp_path / "w_ascend_pt"))
    ((computing, comm, free),) = _query(
        folder / OUT / "analysis.db", "SELECT computing, communication, free FROM StepTraceTime"
    )
    (folder / OUT / "analysis.db").unlink()
    with closing(sqlite3.connect(folder / OUT / "ascend_pytorch_profiler_0.db")) as con:
        con.execute("ALTER TABLE COMMUNICATION_OP DROP COLUMN waitNs")
        con.execute("DROP TABLE MEMORY_RECORD")
        con.commit()
    result = analyse(tmp_path)
    assert result.bad == []
    (data,) = result.traces
    (row,) = [r for r in data.comm if r.kind == "collective"]
    assert row.wait_ms is None and row.elapse_ms is not None and row.elapse_ms > 0
    assert data.memory is not None  # from OP_MEMORY; no peaks without MEMORY_RECORD
    assert data.memory.peak_allocated_bytes is None and data.memory.top_ops
    # without analysis.db the step's device row comes from OVERLAP_ANALYSIS, within 0.1 us
    (device,) = data.device
    assert [getattr(device, k) for k in ("compute_ms", "comm_ms", "idle_ms")] == pytest.approx(
        [computing / 1000.0, comm / 1000.0, free / 1000.0], abs=1e-4
    )


# Hand-built dbs: torch_npu's tables with only the columns the reader selects, rows chosen so
# that each rule shows; every expected value is worked out by hand in the comments.


def _db(path: Path, tables: dict[str, tuple[str, list[tuple[Any, ...]]]]) -> Path:
    """A db of ``{table: ("column TYPE, ...", rows)}``."""
    with closing(sqlite3.connect(path)) as con:
        for table, (columns, rows) in tables.items():
            con.execute(f"CREATE TABLE {table} ({columns})")
            marks = ", ".join("?" * (columns.count(",") + 1))
            con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        con.commit()
    return path


def _trace(path: Path, rank: int | None = None) -> TraceData:
    return TraceData(path, "npu", rank, "g", 0)


def test_host_ops_and_ranges_from_pytorch_api_and_mstx_events(tmp_path: Path) -> None:
    db = _db(
        tmp_path / "p.db",
        {
            "STRING_IDS": (
                "id INTEGER, value TEXT",
                [
                    (1, "aten::add"),
                    (2, "aten::mul"),
                    (3, "ProfilerStep#7"),
                    (4, "forward"),
                    (5, "Enqueue"),
                    (8, "mstx_range"),
                ],
            ),
            "ENUM_API_TYPE": (
                "id INTEGER, name TEXT",
                [(50001, "op"), (50002, "queue"), (50004, "mstx")],
            ),
            # times as TEXT, as torch_npu writes them (they exceed 2**53)
            "PYTORCH_API": (
                "startNs TEXT, endNs TEXT, globalTid INTEGER, name INTEGER, type INTEGER",
                [
                    ("1000000", "9000000", 11, 3, 50001),  # step 7: 1000 us + 8000
                    ("2000000", "2500000", 11, 1, 50001),  # aten::add 500 us
                    ("2100000", "2200000", 11, 5, 50002),  # queue: not an op
                    ("3000000", "3000000", 11, 2, 50001),  # aten::mul 0 us: kept
                    ("4000000", "4200000", 11, 99, 50001),  # no string: "99", 200 us
                    ("5000000", "5100000", 11, 1, 77777),  # unknown type: op, 100 us
                    ("6000000", "7000000", 12, 4, 50004),  # mstx range, thread 12
                    ("8200000.0", "8300000", 11, 2, 50001),  # aten::mul 100 us
                    ("8000000", "7500000", 11, 1, 50001),  # ends before its start
                    (None, "8100000", 11, 1, 50001),
                    ("8100000", None, 11, 1, 50001),
                ],
            ),
            "MSTX_EVENTS": (
                "startNs INTEGER, endNs INTEGER, message INTEGER",
                [
                    (6500000, 6600000, 8),
                    (7200000, 7200000, 88),  # 100 us; 0 us, no string: "88"
                    (None, 100, 8),
                    (100, None, 8),
                    (7500000, 7400000, 8),
                ],
            ),  # skipped
            "STEP_TIME": ("id INTEGER, startNs INTEGER, endNs INTEGER", [(7, 1 * MS, 9 * MS)]),
            "RANK_DEVICE_MAP": ("rankId INTEGER, deviceId INTEGER", [(2, 0)]),
            "HOST_INFO": ("hostUid TEXT, hostName TEXT", [("1", "node-a")]),
        },
    )
    data = _trace(db)
    read_profiler_db(db, data)
    assert (data.rank, data.source, data.problems) == (2, "node-a", [])
    # add 500 + 100 us, mul 0 + 100 us, "99" 200 us; none nests in another
    assert data.ops == {
        "aten::add": Tally(2, 600.0),
        "aten::mul": Tally(2, 100.0),
        "99": Tally(1, 200.0),
    }
    # one step (STEP_TIME's copy of ProfilerStep#7 not added); ranges in step 7
    assert [(r.kind, r.name, r.step, r.ts, r.dur) for r in data.ranges] == [
        ("step", "ProfilerStep#7", 7, 1000.0, 8000.0),
        ("range", "forward", 7, 6000.0, 1000.0),
        ("range", "mstx_range", 7, 6500.0, 100.0),
        ("range", "88", 7, 7200.0, 0.0),
    ]
    assert data.ranges[1].tid == "12"
    assert data.events == 9  # 7 PYTORCH_API rows kept, 2 MSTX_EVENTS


def test_steps_from_step_time_when_no_step_op(tmp_path: Path) -> None:
    db = _db(
        tmp_path / "p.db",
        {
            "STEP_TIME": (
                "id INTEGER, startNs INTEGER, endNs INTEGER",
                [
                    (1, 0, 1 * MS),
                    (2, 1 * MS, 1 * MS),  # 1000 us; 0 us
                    (3, None, 5),
                    (4, 5, None),
                    (5, 10, 5),
                ],
            ),  # skipped
            "RANK_DEVICE_MAP": ("rankId INTEGER, deviceId INTEGER", [(2, 0)]),
        },
    )
    data = _trace(db, rank=5)  # a rank already known is kept
    read_profiler_db(db, data)
    assert (data.rank, data.problems, data.events) == (5, [], 2)
    assert [(r.kind, r.name, r.step, r.ts, r.dur) for r in data.ranges] == [
        ("step", "ProfilerStep#1", 1, 0.0, 1000.0),
        ("step", "ProfilerStep#2", 2, 1000.0, 0.0),
    ]


def test_device_rows_of_steps_and_stages_from_overlap_analysis(tmp_path: Path) -> None:
    db = _db(
        tmp_path / "p.db",
        {
            "STRING_IDS": ("id INTEGER, value TEXT", [(1, "ProfilerStep#1"), (2, "actor_update")]),
            "PYTORCH_API": (
                "startNs INTEGER, endNs INTEGER, globalTid INTEGER, name INTEGER, type INTEGER",
                [(0, 10 * MS, 1, 1, 0)],
            ),  # step 1: 0-10 ms
            "MSTX_EVENTS": (
                "startNs INTEGER, endNs INTEGER, message INTEGER",
                [(2 * MS, 6 * MS, 2)],
            ),  # stage actor_update: 2-6 ms
            # type: 0 Computing, 1 Communication, 2 Communication(Not Overlapped), 3 Free
            "OVERLAP_ANALYSIS": (
                "startNs INTEGER, endNs INTEGER, type INTEGER",
                [
                    (1 * MS, 3 * MS, 0),
                    (4 * MS, 7 * MS, 1),
                    (5 * MS, 7 * MS, 2),
                    (7 * MS, 9 * MS, 3),
                    (1 * MS, 2 * MS, 9),
                    (3 * MS, None, 0),
                    (6 * MS, 5 * MS, 0),
                ],
            ),  # skipped
        },
    )
    data = _trace(db)
    read_profiler_db(db, data)
    assert data.device == [
        # in 0-10 ms: computing 1-3, communication 4-7 (5-7 not overlapped), free 7-9; its
        # Stage (torch_npu's) the sum of computing, communication not overlapped and free
        DeviceRow(
            step=1,
            stage=None,
            compute_ms=2.0,
            comm_ms=3.0,
            overlap_ms=1.0,
            idle_ms=2.0,
            memcpy_ms=None,
            comm_exposed_ms=2.0,
            step_ms=6.0,
        ),
        # in 2-6 ms: computing 2-3, communication 4-6 (5-6 not overlapped), no free
        DeviceRow(
            step=1,
            stage="actor_update",
            compute_ms=1.0,
            comm_ms=2.0,
            overlap_ms=1.0,
            idle_ms=0.0,
            memcpy_ms=None,
            comm_exposed_ms=1.0,
            step_ms=2.0,
        ),
    ]
    assert data.problems == []


def test_kernels_runtime_collectives_and_memory_of_a_profiler_db(tmp_path: Path) -> None:
    db = _db(
        tmp_path / "p.db",
        {
            "STRING_IDS": (
                "id INTEGER, value TEXT",
                [
                    (20, "MatMulV2"),
                    (21, "aclnnMatmul_MatMulV2"),
                    (22, "N/A"),
                    (23, "trans_Cast_0"),
                    (24, "hcom_allReduce_"),
                    (25, "hcom_allReduce__210_0_1"),
                    (26, "hcom_allReduce__210_1_1"),
                    (27, "hcom_broadcast__1_0_1"),
                    (28, "hcom_broadcast_"),
                    (29, "aclnnAdd"),
                    (30, "aclnnMatmul"),
                    (31, "aclrtSynchronizeStream"),
                    (40, "PTA+GE"),
                    (41, "PTA"),
                    (42, "aten::empty"),
                    (43, "aten::mul"),
                ],
            ),
            "TASK": (
                "startNs INTEGER, endNs INTEGER, globalTaskId INTEGER",
                [
                    (0, 100000, 1),
                    (200000, 350000, 2),
                    (400000, 400500, 3),
                    (500000, None, 4),
                    (600000, 700000, 5),
                ],
            ),  # task 5 has no COMPUTE_TASK_INFO: not a compute kernel
            "COMPUTE_TASK_INFO": (
                "globalTaskId INTEGER, name INTEGER, opType INTEGER",
                [
                    (1, 21, 20),
                    (2, 21, 20),  # MatMulV2: 100 + 150 us
                    (3, 23, 22),  # type N/A (level0): the task's name, 0.5 us
                    (4, 29, 99),
                ],
            ),  # type without a string: the task's name; no end, no time
            "COMMUNICATION_OP": (
                "opName INTEGER, startNs INTEGER, endNs INTEGER, opType INTEGER, waitNs INTEGER",
                [
                    (25, 1 * MS, 3 * MS, 24, 100000),  # 2 ms, waits 0.1 ms
                    (26, 3 * MS, 3500000, 24, 0),  # 0.5 ms
                    (26, 3600000, None, 24, 0),  # no end: counted, no time
                    (98, 5 * MS, 5 * MS, 24, 0),  # no string: its id, 0 ms
                    (27, 4 * MS, 4250000, 28, None),
                ],
            ),  # 0.25 ms, wait unknown
            "CANN_API": (
                "startNs INTEGER, endNs INTEGER, name INTEGER",
                [(0, 1000, 30), (2000, 4000, 30), (5000, None, 31), (6000, 6500, 98)],
            ),
            "MEMORY_RECORD": (
                "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, "
                "totalReserved INTEGER",
                [
                    (40, 2 * MS, 100, 200),
                    (40, 1 * MS, 300, 400),
                    (41, 1500000, 50, 60),
                    (97, 1500000, 7, 8),
                    (40, None, 999, 999),
                ],
            ),  # no time: skipped
            "OP_MEMORY": (
                "name INTEGER, size INTEGER",
                [(42, 1024), (42, 2048), (43, 0), (96, 10), (42, None), (42, "big"), (43, 1)],
            ),
            "ENUM_MODULE": ("id INTEGER, name TEXT", [(3, "HCCL"), (4, "FMK")]),
            "NPU_MODULE_MEM": (
                "moduleId INTEGER, totalReserved INTEGER",
                [(3, 5000), (3, 7000), (4, 100), (95, 10), (4, None)],
            ),
        },
    )
    data = _trace(db)
    read_profiler_db(db, data)
    assert data.problems == []
    assert data.kernels == {
        "MatMulV2": Tally(2, 250.0),
        "trans_Cast_0": Tally(1, 0.5),
        "aclnnAdd": Tally(1, 0.0),
        "hcom_allReduce_": Tally(4, 2500.0),
        "hcom_broadcast_": Tally(1, 250.0),
    }
    assert data.runtime == {
        "aclnnMatmul": Tally(2, 3.0),
        "aclrtSynchronizeStream": Tally(1, 0.0),
        "98": Tally(1, 0.5),
    }
    # wait is None: waitNs is not torch_npu's wait time (Notify_Wait on the op's master plane,
    # which the profiler db does not mark; test_msprof_reference checks it on real captures);
    # step, transit, sync, idle, size, bandwidth and links unknown (analysis.db has them)
    assert data.comm == [
        CommRow(
            name="hcom_allReduce_", kind="collective", step=None, count=3, elapse_ms=2.5
        ),  # 2 + 0.5 + 0 ms
        CommRow(name="98", kind="collective", step=None, count=1, elapse_ms=0.0),
        CommRow(name="hcom_broadcast_", kind="collective", step=None, count=1, elapse_ms=0.25),
    ]  # in the order each family first appears
    assert data.memory == Memory(
        source="torch_npu",
        component="PTA+GE",
        peak_allocated_bytes=300,
        peak_reserved_bytes=400,
        components={
            "PTA+GE": {"peak_allocated_bytes": 300, "peak_reserved_bytes": 400},
            "PTA": {"peak_allocated_bytes": 50, "peak_reserved_bytes": 60},
            "97": {"peak_allocated_bytes": 7, "peak_reserved_bytes": 8},
        },
        timeline=[[1000.0, 300, 400], [2000.0, 100, 200]],  # us, in time order
        top_ops=[
            Alloc(op="aten::empty", count=2, bytes=3072, max_bytes=2048),
            Alloc(op="96", count=1, bytes=10, max_bytes=10),
            Alloc(op="aten::mul", count=1, bytes=1, max_bytes=1),
        ],
        modules={"HCCL": 7000, "FMK": 100, "95": 10},
    )


def test_each_table_is_read_without_the_others(tmp_path: Path) -> None:
    """No STRING_IDS (names are ids, kernels unnamed), no ENUM_MODULE (modules are ids)."""
    cases: list[tuple[dict[str, tuple[str, list[tuple[Any, ...]]]], str, object]] = [
        (
            {
                "TASK": ("startNs INTEGER, endNs INTEGER, globalTaskId INTEGER", [(0, 1000, 1)]),
                "COMPUTE_TASK_INFO": (
                    "globalTaskId INTEGER, name INTEGER, opType INTEGER",
                    [(1, 5, 6)],
                ),
            },
            "kernels",
            {"?": Tally(1, 1.0)},
        ),
        (
            {
                "MEMORY_RECORD": (
                    "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, "
                    "totalReserved INTEGER",
                    [(40, 1000, 5, 6)],
                )
            },
            "memory",
            Memory(
                source="torch_npu",
                component="40",
                peak_allocated_bytes=5,
                peak_reserved_bytes=6,
                components={"40": {"peak_allocated_bytes": 5, "peak_reserved_bytes": 6}},
                timeline=[[1.0, 5, 6]],
            ),
        ),
        (
            {"OP_MEMORY": ("name INTEGER, size INTEGER", [(42, 1)])},
            "memory",
            Memory(source="torch_npu", top_ops=[Alloc(op="42", count=1, bytes=1, max_bytes=1)]),
        ),
        (
            {"NPU_MODULE_MEM": ("moduleId INTEGER, totalReserved INTEGER", [(3, 100)])},
            "memory",
            Memory(source="torch_npu", modules={"3": 100}),
        ),
    ]
    for i, (tables, field, expected) in enumerate(cases):
        db = _db(tmp_path / f"{i}.db", tables)
        data = _trace(db)
        read_profiler_db(db, data)
        assert (getattr(data, field), data.problems) == (expected, []), tables


def test_step_trace_and_comm_analyzer_of_an_analysis_db(tmp_path: Path) -> None:
    db = _db(
        tmp_path / "analysis.db",
        {
            "StepTraceTime": (
                "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
                "overlapped NUMERIC, communication NUMERIC, free NUMERIC, "
                "stage NUMERIC, bubble NUMERIC, "
                "communication_not_overlapped_and_exclude_receive NUMERIC, "
                "preparing NUMERIC",
                [
                    ("step3", 8000, 3000, 2000, 5500, 1000, 12000, 0, 2500, 500),
                    ("4", None, 3000, 0, 3000, 100, 3100, 0, 3000, 0),
                    ("5", 4000, 1000, 0, 1000, 500, 5500, None, 1000, 0),
                ],
            ),
            "CommAnalyzerTime": (
                "hccl_op_name TEXT, step TEXT, type TEXT, elapse_time NUMERIC, "
                "transit_time NUMERIC, wait_time NUMERIC, "
                "synchronization_time NUMERIC, idle_time NUMERIC",
                [
                    ("hcom_allReduce__210_0_1", "step3", "collective", 2.0, 0.5, 0.25, 0.125, 1.0),
                    ("hcom_allReduce__210_1_1", "step3", "collective", 4.0, 1.5, None, 0.0, 2.0),
                    ("hcom_send__1_0_1", "step3", "p2p", 1.0, 0.5, 0.0, 0.0, 0.5),
                    ("hcom_allReduce__210_2_1", "step4", "collective", 3.0, 1.0, 0.5, 0.0, 1.5),
                    ("hcom_broadcast__1_0_1", "step4", "collective", 1.0, 1.0, 0.0, 0.0, 0.0),
                ],
            ),
            "CommAnalyzerBandwidth": (
                "hccl_op_name TEXT, step TEXT, type TEXT, "
                "transport_type TEXT, transit_size NUMERIC, "
                "transit_time NUMERIC",
                [
                    (
                        "hcom_allReduce__210_0_1",
                        "step3",
                        "collective",
                        "HCCS",
                        8.0,
                        0.5,
                    ),  # HCCS: within SDMA's figures
                    ("hcom_allReduce__210_0_1", "step3", "collective", "SDMA", 8.0, 0.5),
                    (
                        "hcom_allReduce__210_0_1",
                        "step3",
                        "collective",
                        "SDMA",
                        8.0,
                        0.5,
                    ),  # repeated per packet size: once
                    ("hcom_allReduce__210_1_1", "step3", "collective", "RDMA", 4.0, 1.5),
                    ("hcom_allReduce__210_1_1", "step3", "collective", "SDMA", None, None),
                    ("hcom_send__1_0_1", "step3", "p2p", "RDMA", 2.0, 0.0),
                    ("hcom_allReduce__210_2_1", "step4", "collective", "SDMA", 1.0, 0.5),
                    ("hcom_x__1", "step3", "collective", "SDMA", 9.0, 1.0),
                ],
            ),
        },
    )
    data = _trace(db)
    read_analysis_db(db, data)
    assert data.problems == [f"{db}: StepTraceTime step '4' has empty times; row skipped"]
    # us -> ms; communication is taken as written (5.5), not exposed + overlapped (5.0)
    assert data.device == [
        DeviceRow(
            step=3,
            stage=None,
            compute_ms=8.0,
            comm_ms=5.5,
            overlap_ms=2.0,
            memcpy_ms=None,
            idle_ms=1.0,
            comm_exposed_ms=3.0,
            step_ms=12.0,
            bubble_ms=0.0,
            preparing_ms=0.5,
            comm_exposed_no_recv_ms=2.5,
        ),
        DeviceRow(
            step=5,
            stage=None,
            compute_ms=4.0,
            comm_ms=1.0,
            overlap_ms=0.0,
            memcpy_ms=None,
            idle_ms=0.5,
            comm_exposed_ms=1.0,
            step_ms=5.5,
            bubble_ms=None,
            preparing_ms=0.0,
            comm_exposed_no_recv_ms=1.0,
        ),
    ]
    assert data.comm == [
        # 2 + 4 ms, wait 0.25 + none, transit 0.5 + 1.5, sync 0.125, idle 1 + 2;
        # SDMA 8 MB in 0.5 ms and RDMA 4 MB in 1.5 ms: 12 MB / 2 ms
        # per link type as written (HCCS 8 MB in 0.5 ms; an empty SDMA row is no link)
        CommRow(
            name="hcom_allReduce_",
            kind="collective",
            step=3,
            count=2,
            elapse_ms=6.0,
            wait_ms=0.25,
            transit_ms=2.0,
            sync_ms=0.125,
            idle_ms=3.0,
            size_mb=12.0,
            bandwidth_gbps=6.0,
            links={
                "HCCS": LinkShare(size_mb=8.0, time_ms=0.5, bandwidth_gbps=16.0),
                "RDMA": LinkShare(size_mb=4.0, time_ms=1.5, bandwidth_gbps=4.0 / 1.5),
                "SDMA": LinkShare(size_mb=8.0, time_ms=0.5, bandwidth_gbps=16.0),
            },
        ),
        CommRow(
            name="hcom_send_",
            kind="p2p",
            step=3,
            count=1,
            elapse_ms=1.0,
            wait_ms=0.0,
            transit_ms=0.5,
            sync_ms=0.0,
            idle_ms=0.5,
            size_mb=2.0,
            bandwidth_gbps=None,  # no transit time: no bandwidth
            links={"RDMA": LinkShare(size_mb=2.0, time_ms=0.0, bandwidth_gbps=None)},
        ),
        CommRow(
            name="hcom_allReduce_",
            kind="collective",
            step=4,
            count=1,
            elapse_ms=3.0,
            wait_ms=0.5,
            transit_ms=1.0,
            sync_ms=0.0,
            idle_ms=1.5,
            size_mb=1.0,
            bandwidth_gbps=2.0,  # 1 MB / 0.5 ms
            links={"SDMA": LinkShare(size_mb=1.0, time_ms=0.5, bandwidth_gbps=2.0)},
        ),
        CommRow(
            name="hcom_broadcast_",
            kind="collective",
            step=4,
            count=1,
            elapse_ms=1.0,
            wait_ms=0.0,
            transit_ms=1.0,
            sync_ms=0.0,
            idle_ms=0.0,
            size_mb=0.0,
            bandwidth_gbps=None,
            links={},
        ),
    ]  # no bandwidth rows


def test_each_unreadable_table_is_one_problem_naming_the_file(tmp_path: Path) -> None:
    tables = (
        "STRING_IDS",
        "RANK_DEVICE_MAP",
        "HOST_INFO",
        "ENUM_API_TYPE",
        "PYTORCH_API",
        "MSTX_EVENTS",
        "STEP_TIME",
        "OVERLAP_ANALYSIS",
        "TASK",
        "COMPUTE_TASK_INFO",
        "CANN_API",
        "COMMUNICATION_OP",
        "MEMORY_RECORD",
        "OP_MEMORY",
        "ENUM_MODULE",
        "NPU_MODULE_MEM",
    )
    db = _db(tmp_path / "p.db", {t: ("renamed INTEGER", [(1,)]) for t in tables})
    data = _trace(db)
    read_profiler_db(db, data)
    # the first column each query names, in the order they run (COMMUNICATION_OP twice:
    # kernels, then collectives)
    assert data.problems == [
        f"{db}: no such column: {c}; that table skipped"
        for c in (
            "id",
            "rankId",
            "hostName",
            "id",
            "startNs",
            "startNs",
            "id",
            "startNs",
            "c.opType",
            "opType",
            "name",
            "opName",
            "component",
            "name",
            "id",
            "moduleId",
        )
    ]
    analysis = _db(
        tmp_path / "analysis.db",
        {
            "StepTraceTime": (
                "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC",
                [("1", 1, 1)],
            ),
            "CommAnalyzerTime": ("renamed TEXT", [("x",)]),
            "CommAnalyzerBandwidth": ("renamed TEXT", [("x",)]),
        },
    )
    data = _trace(analysis)
    read_analysis_db(analysis, data)
    assert data.problems == [
        f"{analysis}: StepTraceTime has no column 'free'; table skipped",
        f"{analysis}: no such column: hccl_op_name; that table skipped",
        f"{analysis}: no such column: hccl_op_name; that table skipped",
    ]
    assert (data.device, data.comm) == ([], [])
