"""What is summed over every capture: device time per classification rule, and the ranks
captured of each world size the traces record (a real rank-0 trace told its job had 64)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from corpus import unpack
from helpers import answered

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.capture_facts import beyond_hta, classified, worlds, worlds_text
from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.analysis.readers.model import Tally, TraceData
from mindspeed_prof.analysis.rows import World
from mindspeed_prof.analysis.verdict import verdict
from mindspeed_prof.cli import main
from mindspeed_prof.formats.header import read_header
from mindspeed_prof.views.words import verdict_lines


def _trace(rank: int | None, **meta: object) -> TraceData:
    return TraceData(
        Path(f"rank{rank}.json"), "torch", rank, "g", 1, meta=read_header(meta, "x")[0]
    )


def test_classified_sums_each_rule_in_the_tables_order() -> None:
    a, b = _trace(0), _trace(1)
    a.classified = {
        "compute": Tally(3, 3000.0),
        "nccl": Tally(1, 500.0),
        "--comm-kernels": Tally(2, 250.0),
    }
    b.classified = {
        "compute": Tally(1, 1000.0),
        "deepep": Tally(4, 4000.0),
        "comm_kernels": Tally(1, 1.0),
    }
    rows = classified([a, b])
    assert [(r.rule, r.kind, r.kernels, r.ms) for r in rows] == [
        ("--comm-kernels", "comm", 2, 0.25),
        ("comm_kernels", "comm", 1, 0.001),
        ("nccl", "comm", 1, 0.5),
        ("deepep", "comm", 4, 4.0),
        ("compute", "compute", 4, 4.0),
    ]
    assert [r.rule for r in beyond_hta(rows)] == ["--comm-kernels", "comm_kernels", "deepep"]
    assert classified([]) == []


def test_worlds_group_the_ranks_each_job_size_records() -> None:
    traces = [
        _trace(0, world_size=64),
        _trace(5, world_size=64),
        _trace(5, world_size=64),
        _trace(3, world_size=8),
        _trace(None, world_size=8),
        _trace(1),
        _trace(2, world_size=True),
        _trace(4, world_size=0),
    ]
    got = worlds(traces)
    assert got == [World(world_size=8, ranks=[3, None]), World(world_size=64, ranks=[0, 5])]
    assert worlds_text(got) == (
        "2 of 8 ranks (3, ?); 2 of 64 ranks (0, 5) captured (the world size the traces record)"
    )
    assert worlds_text([World(world_size=64, ranks=[0])]).startswith("rank 0 of 64 captured")


@pytest.fixture
def rank0_of_64(tmp_path: Path) -> Path:
    """A real trace of rank 0 (of 2), its distributedInfo told the job had 64 ranks."""
    root = unpack("kineto_nccl_rank0_of_2", tmp_path / "set")
    (path,) = root.iterdir()
    trace = json.loads(gzip.decompress(path.read_bytes()))
    assert trace["distributedInfo"]["world_size"] == 2
    trace["distributedInfo"]["world_size"] = 64
    path.write_bytes(gzip.compress(json.dumps(trace).encode()))
    return root


def test_verdict_and_doctor_say_one_rank_of_64_was_captured(rank0_of_64: Path, capsys) -> None:
    result = analyse(rank0_of_64, cache=False)
    v = verdict(*answered(result))
    assert v.worlds == [World(world_size=64, ranks=[0])]
    assert dict(verdict_lines(v))["ranks"] == (
        "rank 0 of 64 captured (the world size the traces record)"
    )
    health = doctor(rank0_of_64)
    assert health.worlds == [{"world_size": 64, "ranks": [0]}] and health.healthy
    assert main(["doctor", str(rank0_of_64)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "world size: rank 0 of 64 captured (the world size the traces record)" in out
    assert main(["analyse", str(rank0_of_64), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"]["worlds"] == [
        {"world_size": 64, "ranks": [0]}
    ]


def test_two_jobs_in_one_folder_are_said_apart(tmp_path: Path) -> None:
    """HTA's trace_diff set: rank 3 of an 8-rank job and rank 1 of a 2-rank one."""
    result = analyse(unpack("kineto_trace_diff", tmp_path / "set"), cache=False)
    assert dict(verdict_lines(verdict(*answered(result))))["ranks"] == (
        "rank 1 of 2; rank 3 of 8 captured (the world size the traces record)"
    )


def test_a_trace_without_a_world_size_says_nothing_of_it(tmp_path: Path) -> None:
    result = analyse(unpack("kineto_rocm_mi250", tmp_path / "set"), cache=False)
    v = verdict(*answered(result))
    assert v.worlds == [] and "ranks" not in dict(verdict_lines(v))


def test_torch_npu_captures_give_the_world_size_mindspeed_records(tmp_path: Path) -> None:
    """MindSpeed's profiler_metadata.json holds distributed_args (world_size 4, PP2 DP2)."""
    result = analyse(unpack("npu_text_qwen3_4rank_pp2", tmp_path / "set"), cache=False)
    assert worlds(result.traces) == [World(world_size=4, ranks=[0, 1, 2, 3])]
    assert dict(verdict_lines(verdict(*answered(result))))["ranks"].startswith(
        "4 of 4 ranks (0-3) captured"
    )
