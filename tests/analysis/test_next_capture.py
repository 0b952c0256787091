"""The next capture: from a light capture, the stage-scoped one; from a detailed one, where to
look and the timeline command."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from helpers import answered
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.analyse import Captures
from mindspeed_prof.analysis.findings import find
from mindspeed_prof.analysis.next_capture import (
    alive,
    merged_overrides,
    relaunch_line,
)
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.readers.model import CommRow, Tally
from mindspeed_prof.analysis.verdict import verdict
from mindspeed_prof.cli import main
from mindspeed_prof.config.presets import PRESETS, preset_sections
from mindspeed_prof.config.schema import Level
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.formats.manifest import Job, Manifest, newest_job, read_manifest


def _rank(rank: int, generate: float, level: str = "level_none", **fields: Any) -> TraceData:
    t = TraceData(
        Path(f"run/rank{rank}.mstx.trace.json"),
        "spans",
        rank,
        "integrated",
        1,
        meta=CaptureHeader(level=level, stage="all"),
        **fields,
    )
    for step in (1, 2, 3):  # a straggler is named over three steps or more
        t.ranges += [
            Range(rank, "step", f"ProfilerStep#{step}", step, 0.0, 1e3 * (generate + 20)),
            Range(rank, "stage", "actor_generate", step, 0.0, 1e3 * generate),
            Range(rank, "stage", "actor_update", step, 0.0, 1e3 * 20.0),
        ]
    return t


def test_light_capture_asks_for_the_straggler_stage_at_level1(tmp_path: Path) -> None:
    root = tmp_path / "my run"
    result = Captures(root=root, traces=[_rank(0, 30.0), _rank(1, 300.0)])
    relaunch, live = verdict(*answered(result)).next
    assert relaunch.overrides == [
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_generate",
        "profiler_config.integrated.profile_ranks=[1]",
    ]
    assert not relaunch.runnable and shlex.split(relaunch.command) == relaunch.overrides
    assert "on rank 1" in relaunch.why and relaunch.why.endswith(
        "add these overrides to the job's command line"
    )
    assert shlex.split(live.command) == [
        "mindspeed-prof",
        "capture",
        str(root),
        "--stage",
        "actor_generate",
        "--ranks",
        "1",
        "--level",
        "level1",
        "--steps",
        "1",
    ]  # the root quoted: it has a space


def test_time_between_stages_asks_for_whole_steps_not_a_stage(tmp_path: Path) -> None:
    """The first cause is time no stage covers (8 ms a step between the stages on rank 1): a
    capture of a stage cannot show it; the next capture is of whole steps at level1, on that
    rank, and the live request names no stage."""

    def gap(rank: int, ms: float) -> TraceData:
        t = _rank(rank, 30.0)
        t.ranges = []
        for step in (1, 2, 3):
            t0 = step * 1e6
            t.ranges += [
                Range(rank, "step", f"ProfilerStep#{step}", step, t0, 1e3 * (50.0 + ms)),
                Range(rank, "stage", "actor_generate", step, t0, 3e4),
                Range(rank, "stage", "actor_update", step, t0 + 1e3 * (30.0 + ms), 2e4),
            ]
        return t

    parts = answered(Captures(root=tmp_path, traces=[gap(0, 0.0), gap(1, 8.0)]))
    v = verdict(*parts, find(*parts)[0])
    assert v.causes and v.causes[0].rule == "rl.uncovered"
    relaunch, live = v.next
    assert relaunch.overrides == [
        "profiler_config=full",
        "profiler_config.integrated.profile_ranks=[1]",
    ]
    full = PRESETS["full"].fields  # whole steps (every stage) at level1
    assert full["profile_level"] == Level.level1 and "stage" not in full
    assert "time no stage covers" in relaunch.why and "whole-step (level1)" in relaunch.why
    argv = shlex.split(live.command)[1:]
    assert "--stage" not in argv and argv[argv.index("--ranks") + 1] == "1"
    assert main([*argv, "--timeout", "0.5"]) == 5  # a valid request nobody answers here


def test_the_live_command_parses_as_the_capture_cli_takes_it(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    live = verdict(
        *answered(Captures(root=tmp_path / "run", traces=[_rank(0, 30.0), _rank(1, 300.0)]))
    ).next[1]
    argv = shlex.split(live.command)[1:]
    # no job answers here: the request is valid and the CLI says it found nobody (exit 5)
    assert main([*argv, "--timeout", "0.5"]) == 5


def test_without_a_straggler_the_slowest_stage_on_every_rank() -> None:
    relaunch, live = verdict(
        *answered(Captures(root=Path("run"), traces=[_rank(0, 300.0), _rank(1, 300.0)]))
    ).next
    assert (
        relaunch.command == "profiler_config=stage_scoped profiler_config.integrated.stage="
        "actor_generate"
    )  # nothing to quote
    assert "--ranks" not in live.command and "every rank" in relaunch.why


def test_a_detailed_capture_points_at_a_kernel_and_the_timeline() -> None:
    kernels = {"ampere_sgemm_128x64": Tally(10, 80_000.0), "ncclKernel_AllReduce": Tally(4, 1e5)}
    traces = [_rank(0, 30.0, "level1", kernels=kernels), _rank(1, 300.0, "level1")]
    (step,) = verdict(*answered(Captures(root=Path("run"), traces=traces))).next
    assert step.kind == "timeline"
    assert step.command == ("mindspeed-prof timeline run -o timeline.json --detail 1 --steps 1:2")
    # no device rows: the compute kernel, not the longer communication one
    assert "kernel 'ampere_sgemm_128x64' (80.0 ms)" in step.why
    assert "in actor_generate on rank 1 at step 1" in step.why


def test_communication_bound_npu_points_at_the_collective() -> None:
    from mindspeed_prof.analysis.readers.model import DeviceRow

    comm = [
        CommRow(name="hcom_allReduce_", kind="collective", step=50, count=4, elapse_ms=106.0),
        CommRow(name="hcom_broadcast_", kind="collective", step=50, count=1, elapse_ms=1.0),
    ]
    rows = [
        DeviceRow(
            step=50,
            compute_ms=9.0,
            comm_ms=100.0,
            overlap_ms=0.0,
            idle_ms=25.0,
            comm_exposed_ms=100.0,
            step_ms=134.0,
        )
    ]
    npu = TraceData(
        Path("run/rank0_ascend_pt"),
        "npu",
        0,
        "run",
        1,
        device=rows,
        comm=comm,
        kernels={"Conv2D": Tally(1, 3000.0)},
    )
    (step,) = verdict(*answered(Captures(root=Path("run"), traces=[npu]))).next
    assert "communication op 'hcom_allReduce_' (106.0 ms, rank 0)" in step.why
    assert step.command.endswith("--detail all")


def test_nothing_to_point_at_is_no_next_step() -> None:
    assert verdict(*answered(Captures(root=Path("run")))).next == []


# -- the relaunch line ---------------------------------------------------------------------
NEW = [
    "profiler_config=stage_scoped",
    "profiler_config.integrated.stage=actor_generate",
    "profiler_config.integrated.profile_ranks=[1]",
]
#: What stage_scoped sets itself (a relaunch selecting it drops the job's own values of these),
#: as its definition says: the switches, the stage, the level and its window.
SET_BY_PRESET = {
    f"profiler_config.{section}.{field}"
    for section, fields in preset_sections(PRESETS["stage_scoped"].fields).items()
    for field in fields
}
KEYS = [
    "profiler_config",
    "profiler",
    "profiler_config.integrated.stage",
    "profiler_config.integrated.profile_ranks",
    "profiler_config.integrated.profile_level",
    "profiler_config.integrated.profile_step_end",
    "demo.workers",
    "x",
    "hydra.run.dir",
]
VALUES = st.sampled_from(["1", "mstx_light", "a b", "${oc.env:HOME}", "[0,1]", "it's", ""])


@st.composite
def job_overrides(draw: st.DrawFn) -> list[str]:
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=len(KEYS)))
    return [f"{draw(st.sampled_from(['', '+', '++']))}{k}={draw(VALUES)}" for k in keys]


def _key(line: str) -> str:
    key = line.lstrip("+~").partition("=")[0]
    return "profiler_config" if key == "profiler" else key


@given(job_overrides())
def test_new_values_replace_the_old_of_their_key_and_the_rest_stays(old: list[str]) -> None:
    merged = merged_overrides(old, NEW)
    keys = [_key(o) for o in merged]
    assert len(keys) == len(set(keys))  # one value per key
    for new in NEW:  # each new value, once, where the job had its key (with its + and spelling)
        (line,) = [o for o in merged if _key(o) == _key(new)]
        assert line.partition("=")[2] == new.partition("=")[2]
        before = [o for o in old if _key(o) == _key(new)]
        if before:
            assert line.partition("=")[0] == before[0].partition("=")[0]
    kept = [o for o in old if _key(o) not in {_key(n) for n in NEW} | SET_BY_PRESET]
    assert [o for o in merged if o in kept] == kept  # the rest, in the job's order
    assert all(o in kept or _key(o) in {_key(n) for n in NEW} for o in merged)


def test_the_alias_the_job_used_is_the_one_replaced() -> None:
    assert merged_overrides(["profiler=mstx_light", "demo.workers=0"], NEW) == [
        "profiler=stage_scoped",
        "demo.workers=0",
        *NEW[1:],
    ]
    assert merged_overrides(
        ["+profiler_config=mstx_light", "profiler_config.integrated.profile_level=level0"], NEW[:1]
    ) == ["+profiler_config=stage_scoped"]  # the preset's own level, not the job's


@given(
    job_overrides(),
    st.lists(
        st.sampled_from(
            ["python", "-m", "app.main", "my app.py", "--config-name=x y", "hydra.run.dir=$HOME"]
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_the_line_splits_back_into_the_words_and_overrides(
    old: list[str], words: list[str]
) -> None:
    here = Path("/launch dir")
    job = Job(command=words, cwd=str(here), overrides=old)
    line = relaunch_line(job, NEW, here)
    assert line is not None and shlex.split(line) == [*words, *merged_overrides(old, NEW)]
    elsewhere = relaunch_line(job, NEW, Path("/other"))
    assert elsewhere == f"cd '/launch dir' && {line}"


@pytest.mark.parametrize(
    ("job", "said"),
    [
        ({}, None),
        ({"command": []}, None),
        ({"command": "python t.py"}, "job.command"),
        ({"command": ["python", 3]}, "job.command[1]"),
    ],
)
def test_no_recorded_command_is_no_line(
    tmp_path: Path, job: dict[str, Any], said: str | None
) -> None:
    """A manifest without a command has no line; one whose command is not a list of words
    is not read, with one line naming the file and the field."""
    import json

    path = tmp_path / "manifest-r1.json"
    path.write_text(json.dumps({"status": "completed", "job": job}))
    lines: list[str] = []
    manifest = read_manifest(path, lambda err: lines.append(str(err)))
    if said is None:
        assert manifest is not None and lines == []
        assert relaunch_line(manifest.job, NEW, Path("/")) is None
    else:
        assert manifest is None and len(lines) == 1
        assert lines[0].startswith(f"{path}: not a manifest: {said}: expected")


def test_the_newest_jobs_manifest(tmp_path: Path) -> None:
    import json

    root = tmp_path / "profiler_data"
    (root / "integrated").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"start_time": 1.0, "job": {"num": 0}}))
    (root / "manifest.job1.json").write_text(json.dumps({"start_time": 2.0, "job": {"num": 1}}))
    (root / "manifest.job2.json").write_text("[not a manifest")
    (root / "manifest.job3.json").write_text(json.dumps(["no", "job"]))
    (root / "manifest.job4.json").symlink_to(root / "manifest.json")
    (root / "manifest.job5.json").write_text(json.dumps({"start_time": 9.0, "job": {"num": "5"}}))
    newest = newest_job(root)
    assert newest is not None and newest.job.num == 1 and newest.start_time == 2.0
    assert newest_job(root / "integrated") == newest  # a stage's folder given
    assert newest_job(tmp_path / "nothing here") is None


def test_alive_while_running_and_its_process_is_there() -> None:
    import os
    import socket
    import subprocess
    import sys

    here = socket.gethostname()
    assert alive(Manifest(status="running", host=here, pid=os.getpid()))
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert not alive(Manifest(status="running", host=here, pid=int(ended.stdout)))
    assert alive(Manifest(status="running", host="another-host", pid=1))  # cannot tell
    assert not alive(Manifest(status="completed", host=here, pid=os.getpid()))
    assert not alive(Manifest(status="failed"))


@pytest.mark.parametrize(
    "status,live", [("running", True), ("completed", False), ("exited", False)]
)
def test_a_jobs_manifest_gives_its_line_and_the_live_one_while_it_runs(
    tmp_path: Path, status: str, live: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json
    import os
    import socket

    root = tmp_path / "profiler_data"
    root.mkdir()
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "status": status,
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "start_time": 1,
                "job": {
                    "command": ["python", "examples/train.py"],
                    "cwd": str(tmp_path),
                    "overrides": ["profiler=mstx_light", "steps=8"],
                },
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    steps = verdict(*answered(Captures(root=root, traces=[_rank(0, 30.0), _rank(1, 300.0)]))).next
    assert [s.kind for s in steps] == (["relaunch", "live"] if live else ["relaunch"])
    assert steps[0].runnable and steps[0].command == (
        "python examples/train.py profiler=stage_scoped steps=8 "
        "profiler_config.integrated.stage=actor_generate "
        "'profiler_config.integrated.profile_ranks=[1]'"
    )
