"""The next capture: from a light capture, the stage-scoped one; from a detailed one, where to
look and the timeline command."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.model import CommRow, Tally
from mindspeed_prof.analysis.verdict import verdict
from mindspeed_prof.cli import main


def _rank(rank: int, generate: float, level: str = "level_none", **fields: Any) -> TraceData:
    t = TraceData(Path(f"run/rank{rank}.mstx.trace.json"), "spans", rank, "integrated", 1,
                  meta={"level": level, "stage": "all"}, **fields)
    for step in (1, 2):
        t.ranges += [Range(rank, "step", f"ProfilerStep#{step}", step, 0.0, 1e3 * (generate + 20)),
                     Range(rank, "stage", "actor_generate", step, 0.0, 1e3 * generate),
                     Range(rank, "stage", "actor_update", step, 0.0, 1e3 * 20.0)]
    return t


def test_light_capture_asks_for_the_straggler_stage_at_level1(tmp_path: Path) -> None:
    root = tmp_path / "my run"
    result = Analysis(root=root, traces=[_rank(0, 30.0), _rank(1, 300.0)])
    relaunch, live = verdict(result).next
    assert relaunch.overrides == ["profiler_config=stage_scoped",
                                  "profiler_config.integrated.stage=actor_generate",
                                  "profiler_config.integrated.profile_ranks=[1]"]
    assert not relaunch.runnable and shlex.split(relaunch.command) == relaunch.overrides
    assert "on rank 1" in relaunch.why and relaunch.why.endswith(
        "add these overrides to the job's command line")
    assert shlex.split(live.command) == [
        "mindspeed-prof", "capture", str(root), "--stage", "actor_generate", "--ranks", "1",
        "--level", "level1", "--steps", "1"]  # the root quoted: it has a space


def test_the_live_command_parses_as_the_capture_cli_takes_it(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    live = verdict(Analysis(root=tmp_path / "run",
                            traces=[_rank(0, 30.0), _rank(1, 300.0)])).next[1]
    argv = shlex.split(live.command)[1:]
    # no job answers here: the request is valid and the CLI says it found nobody (exit 5)
    assert main([*argv, "--timeout", "0.5"]) == 5


def test_without_a_straggler_the_slowest_stage_on_every_rank() -> None:
    relaunch, live = verdict(Analysis(root=Path("run"), traces=[
        _rank(0, 300.0), _rank(1, 300.0)])).next
    assert relaunch.command == "profiler_config=stage_scoped profiler_config.integrated.stage=" \
                               "actor_generate"  # nothing to quote
    assert "--ranks" not in live.command and "every rank" in relaunch.why


def test_a_detailed_capture_points_at_a_kernel_and_the_timeline() -> None:
    kernels = {"ampere_sgemm_128x64": Tally(10, 80_000.0), "ncclKernel_AllReduce": Tally(4, 1e5)}
    traces = [_rank(0, 30.0, "level1", kernels=kernels), _rank(1, 300.0, "level1")]
    (step,) = verdict(Analysis(root=Path("run"), traces=traces)).next
    assert step.kind == "timeline"
    assert step.command == ("mindspeed-prof timeline run -o timeline.json --detail 1 "
                            "--steps 1:2")
    # no device rows: the compute kernel, not the longer communication one
    assert "kernel 'ampere_sgemm_128x64' (80.0 ms)" in step.why
    assert "in actor_generate on rank 1 at step 1" in step.why


def test_communication_bound_npu_points_at_the_collective() -> None:
    from mindspeed_prof.analysis.readers.model import DeviceRow

    comm = [CommRow(name="hcom_allReduce_", kind="collective", step=50, count=4,
                    elapse_ms=106.0), CommRow(name="hcom_broadcast_", kind="collective",
                                              step=50, count=1, elapse_ms=1.0)]
    rows = [DeviceRow(step=50, compute_ms=9.0, comm_ms=100.0, overlap_ms=0.0, idle_ms=25.0,
                      comm_exposed_ms=100.0, step_ms=134.0)]
    npu = TraceData(Path("run/rank0_ascend_pt"), "npu", 0, "run", 1, device=rows, comm=comm,
                    kernels={"Conv2D": Tally(1, 3000.0)})
    (step,) = verdict(Analysis(root=Path("run"), traces=[npu])).next
    assert "communication op 'hcom_allReduce_' (106.0 ms, rank 0)" in step.why
    assert step.command.endswith("--detail all")


def test_nothing_to_point_at_is_no_next_step() -> None:
    assert verdict(Analysis(root=Path("run"))).next == []
