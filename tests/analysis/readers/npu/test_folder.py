"""torch_npu captures: folders through the contract double (what torch_npu writes, read back in
full), and the corpus's files on their own or in partial folders, read by the same code."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.cache import encode
from mindspeed_prof.analysis.readers import TraceData, discover, read
from mindspeed_prof.analysis.readers.model import DeviceRow, Tally
from mindspeed_prof.analysis.readers.sniff import NPU_KINDS, TRACE_LIST, kind_of
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main

DOUBLES = Path(__file__).resolve().parents[3] / "doubles"


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
    assert data.meta.level == "level0"
    assert [(r.kind, r.name, r.step) for r in data.ranges] == [
        ("step", "ProfilerStep#1", 1),
        ("stage", "actor_update", 1),
    ]
    assert data.kernels == {"MatMulV2": Tally(1, 80.0)} and "MatMulV2" not in data.ops
    (row,) = data.device
    assert (row.compute_ms, row.comm_ms, row.overlap_ms, row.idle_ms) == (4.0, 0.6, 0.1, 0.5)


def test_without_rank_anywhere_the_rank_is_unknown(torch_npu: Any, tmp_path: Path) -> None:
    folder = _capture(torch_npu, tmp_path, "worker")
    assert (folder / "profiler_info.json").is_file()
    result = analyse(tmp_path)
    assert tables(result).ranks == [None] and tables(result).stage_rank[0].rank is None


def test_rank_from_the_environment_as_torch_npu_writes_it(
    torch_npu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "5")
    folder = _capture(torch_npu, tmp_path, "worker")
    assert (folder / "profiler_info_5.json").is_file() and read(folder).rank == 5


# --- torch_npu's files on their own, and partial folders ---

_TEXT_SETS = ["npu_text_level0", "npu_text_level1", "npu_text_level2"]


def _alone(file: Path, dest: Path, name: str | None = None) -> Path:
    """``file`` copied on its own into the new folder ``dest`` (as attached to an issue)."""
    dest.mkdir(parents=True)
    return Path(shutil.copy(file, dest / (name or file.name)))


def _partial(file: Path, dest: Path) -> Path:
    """``file`` alone in a torch_npu folder's output (no profiler_info: no rank)."""
    out = dest / "w_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    shutil.copy(file, out / file.name)
    return dest / "w_ascend_pt"


def _answer(data: TraceData) -> dict[str, Any]:
    """What was read, less where it lies (path, size, folder, its source label)."""
    out, *ranges = msgspec.msgpack.decode(encode(data))  # (the ranges as columns)
    out["ranges"] = ranges
    for key in ("path", "size", "group", "source"):
        out.pop(key)
    return cast(dict[str, Any], out)


_FIGURES = ("step", "compute_ms", "comm_ms", "overlap_ms", "idle_ms", "comm_exposed_ms")


def _figures(rows: list[DeviceRow]) -> list[tuple[Any, ...]]:
    return [tuple(getattr(r, f) for f in _FIGURES) for r in rows]


@pytest.mark.parametrize("name", _TEXT_SETS)
def test_a_lone_trace_view_gives_the_device_figures_of_its_folder(
    corpus_set: Callable[[str], Path], tmp_path: Path, name: str
) -> None:
    """Alone (any name) or alone in a torch_npu folder, trace_view.json is torch_npu's: its
    Overlap Analysis lanes give each step exactly the figures of step_trace_time.csv."""
    for folder in sorted(corpus_set(name).glob("*_ascend_pt")):
        whole = read(folder)
        trace_view = folder / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
        lone = _alone(trace_view, tmp_path / folder.name / "issue")
        renamed = _alone(trace_view, tmp_path / folder.name / "other", "rank_view.json")
        assert list(discover(lone.parent)) == [lone]
        data = read(lone)
        assert data.kind == "npu" and data.problems == [] and data.device
        assert _answer(data) == _answer(read(_partial(trace_view, tmp_path / folder.name)))
        assert _figures(data.device) == _figures(whole.device)  # exactly
        again = read(renamed)
        assert (_figures(again.device), again.kernels) == (_figures(data.device), data.kernels)


def _covered(spans: list[tuple[Decimal, Decimal]]) -> Decimal:
    """Time under ``spans`` by a sweep over their ends (another way than merging them)."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    total, depth, last = Decimal(0), 0, Decimal(0)
    for t, step in edges:
        if depth > 0:
            total += t - last
        depth, last = depth + step, t
    return total


def _by_hand(path: Path) -> tuple[float, float, float, float]:
    """Compute, communication, overlap and idle (ms) of kernel_details.csv's one step."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    spans = [
        (
            Decimal(r["Start Time(us)"].strip()),
            Decimal(r["Start Time(us)"].strip()) + Decimal(r["Duration(us)"]),
            r["Accelerator Core"] in ("HCCL", "COMMUNICATION"),
        )
        for r in rows
    ]
    busy = _covered([(a, b) for a, b, _ in spans])
    compute = _covered([(a, b) for a, b, comm in spans if not comm])
    comm = _covered([(a, b) for a, b, comm in spans if comm])
    window = max(b for _, b, _ in spans) - min(a for a, _, _ in spans)
    return (
        float(compute / 1000),
        float(comm / 1000),
        float((compute + comm - busy) / 1000),
        float((window - busy) / 1000),
    )


@pytest.mark.parametrize("name", [*_TEXT_SETS, "npu_text_qwen3_4rank_pp2"])
def test_a_lone_kernel_details_gives_device_rows_from_its_kernels(
    corpus_set: Callable[[str], Path], tmp_path: Path, name: str
) -> None:
    """kernel_details.csv alone, or alone in a torch_npu folder: the step's compute,
    communication, overlap and idle from its tasks, exactly as recomputed by hand; within
    0.001 ms of torch_npu's own step_trace_time.csv (which rounds the tasks' nanoseconds)."""
    for folder in sorted(corpus_set(name).glob("*_ascend_pt")):
        kernel_details = folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        if not kernel_details.is_file():
            continue  # ranks 1 and 3 of the pipeline set hold step_trace_time only
        whole = read(folder)
        lone = _alone(kernel_details, tmp_path / folder.name / "issue")
        renamed = _alone(kernel_details, tmp_path / folder.name / "other", "kernels.txt")
        assert list(discover(lone.parent)) == [lone]
        data = read(lone)
        partial = read(_partial(kernel_details, tmp_path / folder.name))
        assert _answer(data) == _answer(partial)  # no "No device data" beside the kernels
        assert data.kernels == whole.kernels and data.problems == []
        assert (read(renamed).device, read(renamed).kernels) == (data.device, data.kernels)
        (row,) = data.device
        (step,) = [r for r in whole.device if r.stage is None]
        assert (row.compute_ms, row.comm_ms, row.overlap_ms, row.idle_ms) == _by_hand(
            kernel_details
        )
        for field in ("compute_ms", "comm_ms", "overlap_ms", "idle_ms", "step_ms"):
            assert getattr(row, field) == pytest.approx(getattr(step, field), abs=1e-3), field
        assert row.step == step.step


def test_lone_files_are_analysed_with_device_data(
    corpus_set: Callable[[str], Path], tmp_path: Path, capsys
) -> None:
    output = corpus_set("npu_text_level1") / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    for file in ("kernel_details.csv", "trace_view.json"):
        lone = _alone(output / file, tmp_path / file)
        assert main(["analyse", str(lone.parent), "-j", "1"]) == 0
        out = capsys.readouterr().out
        assert "No device data" not in out and "Device time per step (ms)" in out
        assert main(["analyse", str(lone), "-j", "1"]) == 0  # the file named on its own
        assert "No device data" not in capsys.readouterr().out
    # the merged timeline's operators and kernels come from a lone trace_view.json as from
    # its folder
    alone = tmp_path / "trace_view.json"  # the folder _alone made above
    folder = _partial(output / "trace_view.json", tmp_path / "folder")
    details = []
    for root in (alone, folder.parent):
        out = tmp_path / f"{root.name}.timeline.json"
        assert main(["timeline", str(root), "-o", str(out), "--detail", "all", "-j", "1"]) == 0
        details.append(
            sorted(
                (e["name"], e["dur"])
                for e in json.loads(out.read_text())["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") != "step"
            )
        )
    assert len(details[0]) > 4000 and details[0] == details[1]


@pytest.mark.parametrize("name", ["npu_text_level1", "npu_db_level1"])
def test_every_output_file_alone_is_read_as_in_a_partial_folder(
    corpus_set: Callable[[str], Path], tmp_path: Path, name: str
) -> None:
    """Each file of a torch_npu output that the readers read, alone: found, read without a
    problem to what the same file alone in a torch_npu folder gives, and never nothing."""
    output = corpus_set(name) / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    files = [p for p in sorted(output.iterdir()) if kind_of(p) in NPU_KINDS | {TRACE_LIST}]
    assert len(files) >= (2 if name.startswith("npu_db") else 10)
    for file in files:
        lone = _alone(file, tmp_path / file.name / "alone")
        assert list(discover(lone.parent)) == [lone]
        data = read(lone)
        assert data.problems == [] and not data.holds_nothing, file.name
        assert _answer(data) == _answer(read(_partial(file, tmp_path / file.name))), file.name
