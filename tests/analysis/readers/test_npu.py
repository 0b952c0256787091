"""torch_npu folders through the contract double: what torch_npu writes, read back in full."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers import read
from mindspeed_prof.analysis.readers.model import Tally

DOUBLES = Path(__file__).resolve().parents[2] / "doubles"


@pytest.fixture
def torch_npu(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(DOUBLES))
    monkeypatch.delenv("RANK", raising=False)
    import torch_npu

    yield torch_npu
    for name in [m for m in sys.modules if m.split(".")[0] == "torch_npu"]:
        sys.modules.pop(name)


def _capture(torch_npu: Any, root: Path, worker: str) -> Path:
    """One capture as the double's profile() and trace handler lay it out."""
    handler = torch_npu.profiler.tensorboard_trace_handler(str(root), worker)
    prof = torch_npu.profiler.profile(on_trace_ready=handler)
    prof.start()
    prof.stop()
    (folder,) = root.glob(f"{worker}_*_ascend_pt")
    return folder


def test_stage_as_cpu_op_and_device_kernels_without_cat(torch_npu: Any, tmp_path: Path) -> None:
    data = read(_capture(torch_npu, tmp_path, "rank2_host"))
    assert data.rank == 2  # profiler_info.json has none: the worker name gives it
    assert data.meta["level"] == "level0"
    assert [(r.kind, r.name, r.step) for r in data.ranges] == [
        ("step", "ProfilerStep#1", 1), ("stage", "actor_update", 1)]
    assert data.kernels == {"MatMulV2": Tally(1, 80.0)} and "MatMulV2" not in data.ops
    (row,) = data.device
    assert (row.compute_ms, row.comm_ms, row.overlap_ms, row.idle_ms) == (
        4.0, 0.6, 0.1, 0.5)


def test_without_rank_anywhere_the_rank_is_unknown(torch_npu: Any, tmp_path: Path) -> None:
    folder = _capture(torch_npu, tmp_path, "worker")
    assert (folder / "profiler_info.json").is_file()
    result = analyse(tmp_path)
    assert result.ranks == [None] and result.stage_rank()[0].rank is None


def test_rank_from_the_environment_as_torch_npu_writes_it(torch_npu: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "5")
    folder = _capture(torch_npu, tmp_path, "worker")
    assert (folder / "profiler_info_5.json").is_file() and read(folder).rank == 5
