"""Device memory per stage, at an OOM and over a window, on CPU against the contract double of
``torch.cuda.memory`` (tests/doubles/cuda_memory.py): the peaks a stage's counters carry are
the fake device's, recomputed here; an OOM leaves its snapshot and the ranges so far and goes on
to the trainer unchanged; a window writes one history over its steps."""

from __future__ import annotations

import inspect
import json
import logging
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import mindspeed_prof.capture.job_parts as job_parts
from mindspeed_prof import Profiler
from mindspeed_prof.capture.memory.allocator import HostMemory, is_oom
from mindspeed_prof.capture.memory.stage import PEAK_ALLOCATED, PEAK_RESERVED, PEAK_RSS

DOUBLES = str(Path(__file__).resolve().parents[2] / "doubles")
MB = 1 << 20


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(DOUBLES)
    import cuda_memory

    cuda_memory.clear()
    monkeypatch.setattr(job_parts, "device_allocator", lambda: cuda_memory)
    yield cuda_memory


def test_the_double_has_torchs_signatures() -> None:
    sys.path.insert(0, DOUBLES)
    try:
        import cuda_memory
    finally:
        sys.path.remove(DOUBLES)
    for name in (
        "reset_peak_memory_stats",
        "max_memory_allocated",
        "max_memory_reserved",
        "_record_memory_history",
        "_dump_snapshot",
    ):
        ours = inspect.signature(getattr(cuda_memory, name)).parameters
        theirs = inspect.signature(getattr(torch.cuda.memory, name)).parameters
        assert [(p.name, p.kind, p.default) for p in ours.values()] == [
            (p.name, p.kind, p.default) for p in theirs.values()
        ], name


def config(root: Path, **extensions: Any) -> dict[str, Any]:
    return {
        "integrated": {
            "profile": True,
            "mstx": True,
            "profile_level": "level_none",
            "profile_step_start": 1,
            "profile_step_end": 4,
            "profile_save_path": str(root),
        },
        "extensions": {"backend": "none", **extensions},
    }


def counters(root: Path) -> dict[tuple[int, str, str], float]:
    (path,) = root.rglob("*.mstx.trace.json")
    out = {}
    for e in json.loads(path.read_text())["traceEvents"]:
        if e.get("ph") == "C":
            args = e["args"]
            (out[(args["step"], args["stage"], e["name"])],) = args["values"]
    return out


def test_each_stage_carries_its_own_peaks_nested_ones_too(tmp_path: Path, device: Any) -> None:
    prof = Profiler.from_config(config(tmp_path, stage_memory=True), rank=0)
    plan = {"actor_generate": (300, 500), "actor_update": (800, 900)}  # MB: peak, reserved
    expected = {}
    for step in (1, 2, 3):
        with prof.step(step):
            device.use(100 * MB * step)  # before any stage: no stage's
            for stage, (peak, reserved) in plan.items():
                with prof.stage(stage):
                    device.use(peak * MB + step, reserved * MB)
                    if stage == "actor_update":
                        device.use(60 * MB)
                        with prof.stage("weight_sync"):  # an inner stage: its own peaks,
                            device.use(70 * MB)  # from what the device held when it began
                        expected[(step, "weight_sync", PEAK_ALLOCATED)] = 70 * MB
                        expected[(step, "weight_sync", PEAK_RESERVED)] = reserved * MB
                    device.use(10 * MB, 10 * MB)  # the cache emptied at the stage's end
                expected[(step, stage, PEAK_ALLOCATED)] = peak * MB + step
                expected[(step, stage, PEAK_RESERVED)] = reserved * MB
    prof.close()
    assert counters(tmp_path) == expected


def test_an_oom_in_a_stage_leaves_its_snapshot_and_goes_on_unchanged(
    tmp_path: Path, device: Any, caplog: pytest.LogCaptureFixture
) -> None:
    prof = Profiler.from_config(config(tmp_path, oom_snapshot=True), rank=3)
    device._record_memory_history("all")
    device.use(7 * MB)
    raised = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        with pytest.raises(torch.OutOfMemoryError) as err:
            with prof.step(2):
                with prof.stage("actor_update"):
                    device.use(9 * MB)
                    raise raised
    assert err.value is raised  # the trainer's own handling sees its own error
    (folder,) = tmp_path.glob("oom_2_actor_update_*")
    info = json.loads((folder / "rank3_integrated.oom.json").read_text())
    assert info["stage"] == "actor_update" and info["step"] == 2 and info["rank"] == 3
    assert "CUDA out of memory" in info["error"] and info["peak_allocated_bytes"] == 9 * MB
    snap = pickle.loads((folder / info["snapshot"]).read_bytes())
    assert snap["device_traces"] == [[7 * MB, 9 * MB]]  # the history it was recording
    (line,) = [r.getMessage() for r in caplog.records if "out of memory" in r.getMessage()]
    assert "stage actor_update of step 2 on rank 3" in line and str(folder) in line
    # the ranges so far are on disk before the error leaves the step
    (path,) = tmp_path.rglob("*.mstx.trace.json")
    names = {e["name"] for e in json.loads(path.read_text())["traceEvents"]}
    assert "actor_update" in names
    prof.close()


def test_other_errors_and_no_observer_leave_nothing(tmp_path: Path, device: Any) -> None:
    prof = Profiler.from_config(config(tmp_path, oom_snapshot=True), rank=0)
    with pytest.raises(ValueError), prof.step(1), prof.stage("actor_update"):
        raise ValueError("not memory")
    off = Profiler.from_config(config(tmp_path / "off"), rank=0)
    with pytest.raises(torch.OutOfMemoryError), off.step(1), off.stage("actor_update"):
        raise torch.OutOfMemoryError("out of memory")
    assert not list(tmp_path.rglob("oom_*"))
    assert is_oom(RuntimeError("NPU out of memory. Tried to allocate")) and not is_oom(None)


def test_a_memory_window_records_one_history_over_its_steps(tmp_path: Path, device: Any) -> None:
    cfg = config(tmp_path, memory_window_steps=2)
    cfg["integrated"].update(profile_with_memory=True, profile_step_end=6)
    prof = Profiler.from_config(cfg, rank=0)
    for step in range(1, 8):
        with prof.step(step):
            device.use(step * MB)
    prof.close()
    windows = [p for p in tmp_path.rglob("*.memory_snapshot.pickle")]
    assert len(windows) == 3  # steps 1-2, 3-4, 5
    traces = sorted(pickle.loads(p.read_bytes())["device_traces"][0] for p in windows)
    assert traces == [[1 * MB, 2 * MB], [3 * MB, 4 * MB], [5 * MB]]
    switches = [v for name, v in device.CALLS if name == "_record_memory_history"]
    assert switches == ["all", None] * 3


def test_on_a_host_without_a_device_stages_carry_the_resident_peak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(job_parts, "device_allocator", lambda: None)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        prof = Profiler.from_config(config(tmp_path, stage_memory=True, oom_snapshot=True), rank=0)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "oom_snapshot and memory_window_steps read a CUDA or NPU allocator" in line
    HostMemory().reset_peak_memory_stats()
    before = HostMemory().max_memory_allocated()  # resident now
    with prof.step(1):
        with prof.stage("actor_generate"):
            block = b"x" * (64 * MB)  # written: resident
            del block
        with prof.stage("actor_update"):
            pass
    prof.close()
    got = counters(tmp_path)
    assert set(got) == {(1, "actor_generate", PEAK_RSS), (1, "actor_update", PEAK_RSS)}
    assert got[(1, "actor_generate", PEAK_RSS)] >= before + 60 * MB
    assert got[(1, "actor_update", PEAK_RSS)] < got[(1, "actor_generate", PEAK_RSS)]
