"""Captures for tests: made by the engine on CPU, plus handmade torch_npu layouts."""

from __future__ import annotations

import csv
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import torch

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.config.schema import STAGES


def make_run(root: Path, ranks: tuple[int, ...] = (0, 1), slow: dict[tuple[int, str], int] | None
             = None, steps: int = 3, **fields: Any) -> Path:
    """One capture per rank of a fake RL loop; ``slow[(rank, stage)]`` adds 30 ms units to it."""
    slow = slow or {}
    for rank in ranks:
        cfg = {"profile": True, "mstx": True, "profile_step_start": 1,
                              "profile_step_end": steps + 1, "profile_save_path": str(root),
                              **fields}
        with Profiler.from_config(cfg, rank=rank) as prof:
            for step in range(1, steps + 1):
                with prof.step(step):
                    for stage in STAGES:
                        with prof.stage(stage):
                            torch.randn(32, 32) @ torch.randn(32, 32)
                            # 30 ms a unit of slowness: sleeping makes the stage at least that
                            # long whatever the load, so a straggler stays one under noise
                            time.sleep(0.03 * slow.get((rank, stage), 0))
                            with mstx.range("<b>custom</b>"):
                                pass
    return root


def npu_text(root: Path, rank: int = 0) -> Path:
    """A parsed torch_npu capture, text export, as torch_npu writes it (ts as strings)."""
    folder = root / "integrated" / f"rank{rank}_host_{100 + rank}_20261130100000000_ascend_pt"
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (folder / f"profiler_info_{rank}.json").write_text(json.dumps({"rank_id": rank}))
    (folder / "profiler_metadata.json").write_text("{}")
    base = 1764496800000000
    events = [
        {"ph": "X", "name": "ProfilerStep#2", "pid": "1", "tid": 7, "ts": f"{base}.000",
         "dur": 9000.5, "cat": "cpu_op"},
        {"ph": "X", "name": "actor_update", "pid": "1", "tid": 7, "ts": f"{base + 100}.250",
         "dur": 5000, "args": {"id": 2 ** 64 + 5}},
        {"ph": "X", "name": "aten::mm", "pid": "1", "tid": 7, "ts": f"{base + 200}", "dur": 300,
         "cat": "cpu_op"},
        {"ph": "M", "name": "process_name", "pid": "1", "args": {"name": "Python"}},
    ]
    (out / "trace_view.json").write_text(json.dumps(events))
    with open(out / "step_trace_time.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Step", "Computing", "Communication(Not Overlapped)", "Free"])
        w.writerow(["2", "8000", "500", "500"])
    return folder


def npu_db(root: Path, rank: int = 1) -> Path:
    folder = root / "integrated" / f"rank{rank}_host_{200 + rank}_20261130100000000_ascend_pt"
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (folder / f"profiler_info_{rank}.json").write_text("{}")
    con = sqlite3.connect(out / f"ascend_pytorch_profiler_{rank}.db")
    con.execute("CREATE TABLE STRING_IDS(id INTEGER, value TEXT)")
    con.execute("CREATE TABLE STEP_TIME(id INTEGER, startNs INTEGER, endNs INTEGER)")
    con.execute("CREATE TABLE MSTX_EVENTS(startNs INTEGER, endNs INTEGER, eventType INTEGER, "
                "rangeId INTEGER, category INTEGER, message INTEGER, globalTid INTEGER)")
    con.execute("INSERT INTO STRING_IDS VALUES (1, 'actor_update')")
    con.execute("INSERT INTO STEP_TIME VALUES (2, 1000000, 9000000)")
    con.execute("INSERT INTO MSTX_EVENTS VALUES (2000000, 6000000, 2, 1, 0, 1, 7)")
    con.commit()
    con.close()
    return folder
