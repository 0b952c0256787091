"""Discovery: every Chrome trace whatever its name (sniffed, never loaded to be rejected)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import torch

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import discover


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace written by torch.profiler itself (as another trainer would), 2 steps."""
    path = tmp_path_factory.mktemp("torch") / "trace.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            with torch.profiler.record_function("actor_update"):
                torch.randn(8, 8) @ torch.randn(8, 8)
            prof.step()
    prof.export_chrome_trace(str(path))
    return path


def test_other_trainers_traces_are_found_by_content(torch_trace: Path, tmp_path: Path) -> None:
    raw = torch_trace.read_bytes()
    (tmp_path / "rank-3.json.gz").write_bytes(gzip.compress(raw))
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "worker0.1700000000.pt.trace.json").write_bytes(raw)
    (tmp_path / "a" / "anything.json").write_bytes(raw)
    not_traces = {"config.json": b'{"lr": 0.1}', "list.json": b"[1, 2]",
                  "broken.json.gz": b"not gzip", "events.json": b'{"events": []}',
                  "manifest.json": raw, "rank0.summary.json": raw, "analysis.json": raw,
                  ".hidden.json": raw}
    for name, content in not_traces.items():
        (tmp_path / name).write_bytes(content)
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)]
    assert found == ["a/anything.json", "a/b/worker0.1700000000.pt.trace.json", "rank-3.json.gz"]
    result = analyse(tmp_path)
    assert result.bad == [] and result.ranks == [3, None]
    by_file = {i.file: i for i in result.inventory()}
    assert by_file["rank-3.json.gz"].events > 0


def test_a_stage_recorded_with_record_function_counts(torch_trace: Path, tmp_path: Path) -> None:
    shutil.copy(torch_trace, tmp_path / "trace.json")
    rows = analyse(tmp_path).stage_rank()
    assert [(r.stage, r.count) for r in rows] == [("actor_update", 2)]


def test_torch_npu_folders_are_one_capture_each(npu, tmp_path: Path) -> None:
    shutil.copytree(npu("text/rank1_ascend_pt"), tmp_path / "w1_ascend_pt")
    shutil.copytree(npu("text/rank1_ascend_pt"), tmp_path / "renamed")  # not *_ascend_pt
    found = [p.relative_to(tmp_path).as_posix() for p in discover(tmp_path)]
    assert found == ["renamed", "w1_ascend_pt"]
    assert list(discover(tmp_path / "w1_ascend_pt")) == [tmp_path / "w1_ascend_pt"]


def test_ids_above_2_53_and_string_timestamps_parse(tmp_path: Path) -> None:
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "ts": "1736408883686740.710",
         "dur": 500.5, "pid": 2**60, "tid": 2**64 + 1, "id": 2**70,
         "args": {"Sequence number": 2**63}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": "1736408883686750.000",
         "dur": "20", "pid": 2**60, "tid": 2**64 + 1}]}
    path = tmp_path / "rank1.json"
    path.write_text(json.dumps(doc))
    (result,) = analyse(tmp_path).traces
    assert [r.step for r in result.ranges] == [1] and result.ops["aten::mm"].count == 1
