"""torch_npu's db export, read and checked against the tables torch_npu wrote."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read

OUT = "ASCEND_PROFILER_OUTPUT"


def _query(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db)) as con:
        return con.execute(sql).fetchall()


@pytest.mark.parametrize("name", ["db/rank0_ascend_pt", "db/rank1_ascend_pt"])
def test_device_rows_are_step_trace_time(npu, name: str) -> None:
    folder = npu(name)
    ((step, computing, exposed, overlapped, comm, free, stage),) = _query(
        folder / OUT / "analysis.db", "SELECT step, computing, communication_not_overlapped, "
        "overlapped, communication, free, stage FROM StepTraceTime")
    data = read(folder)
    (row,) = data.device
    assert (row["step"], data.rank) == (int(step), int(name[-len("1_ascend_pt")]))
    for key, value in (("compute_ms", computing), ("comm_exposed_ms", exposed),
                       ("overlap_ms", overlapped), ("comm_ms", comm), ("idle_ms", free),
                       ("step_ms", stage)):
        assert row[key] == pytest.approx(value / 1000.0, rel=1e-12), key


def test_steps_ops_kernels_comm_and_memory_come_from_the_profiler_db(npu) -> None:
    folder = npu("db/rank0_ascend_pt")
    db = folder / OUT / "ascend_pytorch_profiler_0.db"
    data = read(folder)
    assert (data.kind, data.meta["export"], data.meta["level"]) == ("npu", "db", "level1")
    ((sid, start, end),) = _query(db, "SELECT id, startNs, endNs FROM STEP_TIME")
    (step,) = [r for r in data.ranges if r.kind == "step"]
    assert step.step == sid
    assert step.dur == pytest.approx((end - start) / 1000.0, abs=0.01)
    ((ops,),) = _query(db, "SELECT COUNT(*) FROM PYTORCH_API p JOIN ENUM_API_TYPE e "
                           "ON e.id = p.type WHERE e.name = 'op'")
    assert sum(c for c, _ in data.ops.values()) == ops - 1  # less ProfilerStep#50, a step
    # HCCL ops add up to StepTraceTime's communication (torch_npu's own breakdown)
    ((comm_us,),) = _query(folder / OUT / "analysis.db", "SELECT communication FROM StepTraceTime")
    assert data.kernels["hcom_allReduce_"][1] == pytest.approx(comm_us, abs=0.01)
    (row,) = [r for r in data.comm if r["kind"] == "collective"]
    assert row["elapse_ms"] == pytest.approx(comm_us / 1000.0, rel=1e-6)
    assert row["count"] == 4 and row["bandwidth_gbps"] > 0
    ((peak, reserved),) = _query(
        db, "SELECT MAX(totalAllocated), MAX(totalReserved) FROM MEMORY_RECORD m "
            "JOIN STRING_IDS s ON s.id = m.component WHERE s.value = 'PTA+GE'")
    assert (data.memory["peak_allocated_bytes"], data.memory["peak_reserved_bytes"]) == (
        peak, reserved)
    assert data.memory["top_ops"] and data.runtime and data.source == "ubuntu"


def test_db_kernels_count_as_the_text_runs_op_statistic(npu) -> None:
    """Two runs of one program (text and db export): the same kernels, as many times each."""
    db = read(npu("db/rank0_ascend_pt")).kernels
    with open(npu("text/rank0_ascend_pt") / OUT / "op_statistic.csv", newline="") as f:
        text = {r["OP Type"]: int(r["Count"]) for r in csv.DictReader(f)}
    assert {k: c for k, (c, _) in db.items() if not k.startswith("hcom_")} == text


def test_db_and_text_exports_have_the_same_shape(npu) -> None:
    text, db = read(npu("text/rank0_ascend_pt")), read(npu("db/rank0_ascend_pt"))
    assert set(text.device[0]) == set(db.device[0])
    assert {r["kind"] for r in db.comm} <= {r["kind"] for r in text.comm}
    assert set(db.memory) == set(text.memory)
    assert set(db.ops) == set(text.ops)


def test_an_older_schema_without_a_column_still_reads(npu, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(npu("db/rank0_ascend_pt"), tmp_path / "w_ascend_pt"))
    ((computing, comm, free),) = _query(folder / OUT / "analysis.db", "SELECT computing, "
                                        "communication, free FROM StepTraceTime")
    (folder / OUT / "analysis.db").unlink()
    with closing(sqlite3.connect(folder / OUT / "ascend_pytorch_profiler_0.db")) as con:
        con.execute("ALTER TABLE COMMUNICATION_OP DROP COLUMN waitNs")
        con.execute("DROP TABLE MEMORY_RECORD")
        con.commit()
    result = analyse(tmp_path)
    assert result.bad == []
    (data,) = result.traces
    (row,) = [r for r in data.comm if r["kind"] == "collective"]
    assert row["wait_ms"] is None and row["elapse_ms"] > 0  # from COMMUNICATION_OP
    assert "peak_allocated_bytes" not in data.memory and data.memory["top_ops"]
    # without analysis.db the step's device row comes from OVERLAP_ANALYSIS, within 0.1 us
    (device,) = data.device
    assert [device[k] for k in ("compute_ms", "comm_ms", "idle_ms")] == pytest.approx(
        [computing / 1000.0, comm / 1000.0, free / 1000.0], abs=1e-4)
