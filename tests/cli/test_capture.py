"""``mindspeed-prof capture``: the command against no job, bad arguments and a running job."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.cli import main
from mindspeed_prof.cli.common import Exit


def test_command_when_no_job_runs_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["capture", str(tmp_path), "--timeout", "0.5"]) == Exit.NOT_RUNNING
    assert "no job took request" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # withdrawn, unmarked, the folders it made removed


@pytest.mark.slow
def test_command_on_a_root_no_job_saves_to_gives_up_soon_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert main(["capture", str(tmp_path / "a" / "nope"), "--timeout", "120"]) == Exit.NOT_RUNNING
    assert time.monotonic() - started < 30
    (line,) = capsys.readouterr().err.splitlines()[-1:]
    assert f"no job looked at {tmp_path / 'a' / 'nope'} within" in line
    assert list(tmp_path.iterdir()) == []  # what it made for the question, removed


TRAINER = textwrap.dedent("""
    import sys, time
    import torch
    from mindspeed_prof import Profiler, mstx
    rank, light = int(sys.argv[2]), sys.argv[3] == "light"
    fields = {"profile_save_path": sys.argv[1], "flight_recorder_steps": 2}
    if light:  # what profiler_config=mstx_light sets: ranges only, no host activity
        fields.update(mstx=True, profile_level="level_none", profile_with_cpu=False)
    prof = Profiler.from_config(fields, rank=rank)  # one flat mapping of any fields
    for step in range(1, 100000):
        with prof.step(step):
            with mstx.range("work"):
                torch.ones(8) @ torch.ones(8)
                time.sleep(0.01)
        if step == 1:
            print("ready", flush=True)
""")


def start_job(tmp_path: Path, root: Path, ranks: int = 1, light: bool = False) -> list[Any]:
    """Trainer processes saving to ``root``, each past its first step (started one after
    another, so that their step numbers differ, as ranks' first looks do)."""
    script = tmp_path / "train.py"
    script.write_text(TRAINER)
    procs = []
    for rank in range(ranks):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(root), str(rank), "light" if light else "plain"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return procs


def stop_jobs(procs: list[Any]) -> None:
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_command_against_a_running_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "out"
    procs = start_job(tmp_path, root)
    try:
        code = main(
            [
                "capture",
                str(root),
                "--steps",
                "2",
                "--level",
                "level_none",
                "--flight",
                "--timeout",
                "60",
            ]
        )
    finally:
        stop_jobs(procs)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"analyse: mindspeed-prof analyse {root / 'triggered'}" in out
    assert f"rank 0 (integrated) on {host_name()}: written: {root / 'triggered'}" in out
    assert len(list((root / "triggered" / "integrated").iterdir())) == 1
    assert any(p.name.endswith(".mstx.trace.json") for p in (root / "flight").iterdir())


@pytest.mark.slow
def test_a_light_job_asked_for_operators_records_them_on_the_same_step_on_both_ranks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "out"
    procs = start_job(tmp_path, root, ranks=2, light=True)
    try:
        code = main(["capture", str(root), "--steps", "2", "--level", "level1", "--timeout", "90"])
    finally:
        stop_jobs(procs)
    out, err = capsys.readouterr()
    assert code == Exit.OK, out + err
    traces = sorted((root / "triggered" / "integrated").glob("*.pt.trace.json"))
    assert len(traces) == 2  # operators: a torch trace per rank, not a range file only
    steps = []
    for trace in traces:
        events = json.loads(trace.read_text())["traceEvents"]
        assert any(e.get("cat") == "cpu_op" for e in events)
        steps.append(
            sorted(e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#"))
        )
    assert steps[0] == steps[1] and len(steps[0]) == 2, steps


@pytest.mark.slow
def test_asking_a_ranges_only_job_for_operators_says_it_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mindspeed_prof import Profiler

    root = tmp_path / "out"
    root.mkdir()
    prof = Profiler.from_config(
        {"integrated": {"profile_save_path": str(root)}, "extensions": {"backend": "none"}}
    )
    assert prof._ondemand is not None
    prof._ondemand.interval_ns = 0
    done = threading.Event()

    def train() -> None:
        step = 0
        while not done.is_set():
            step += 1
            with prof.step(step):
                time.sleep(0.005)

    thread = threading.Thread(target=train)
    thread.start()
    try:
        code = main(["capture", str(root), "--steps", "1", "--level", "level1", "--timeout", "30"])
    finally:
        done.set()
        thread.join()
        prof.close()
    out, err = capsys.readouterr()
    assert code == Exit.NOTHING, out + err
    assert "recorded ranges only: the none backend records no operators here" in out
    assert "no rank recorded what the request asked for" in err


def test_the_report_says_when_ranks_started_at_different_steps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mindspeed_prof.capture.control import Ack, Request, Status
    from mindspeed_prof.cli.capture import report

    request = Request.new(60, steps=1, start_step=40)
    acks = [
        Ack(
            id=request.id,
            rank=r,
            role="actor",
            status="written",
            files=[f"f{r}"],
            start_step=s,
            recorded=["ranges"],
        )
        for r, s in ((0, 40), (1, 43))
    ]
    assert report(request, Status(acks=acks), 10) == Exit.OK
    assert "the ranks started at different steps (40, 43; asked for 40)" in capsys.readouterr().out
    assert report(request, Status(acks=acks[:1]), 10) == Exit.OK
    assert "different steps" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "args,line",
    [
        (
            ["--stage", "actor_generat"],
            "--stage actor_generat: no such stage (did you mean "
            "actor_generate?); stages: actor_generate, ",
        ),
        (
            ["--level", "leve1"],
            "--level leve1: no such level (did you mean level1?); levels: "
            "level_none, level0, level1, level2",
        ),
        (
            ["--role", "actr"],
            "--role actr: no such role (did you mean actor?); roles: integrated, ",
        ),
        (
            ["--preset", "ful"],
            "--preset ful: no such preset (did you mean full?); presets: "
            "mstx_light, stage_scoped, memory_debug, full, dpo",
        ),
        (["--preset", "none"], "--preset none: no such preset; presets: mstx_light, "),
    ],
)
def test_a_misspelt_choice_gets_the_closest_before_anything_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    root = tmp_path / "root"
    assert main(["capture", str(root), *args]) == Exit.USAGE
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"mindspeed-prof: capture: {line}"), err
    assert not root.exists()  # no request posted, no folder made


def test_the_cards_preset_spelling_is_the_preset(tmp_path: Path) -> None:
    """``--preset stage-scoped`` is ``stage_scoped`` (the request is posted as such)."""
    import argparse

    from mindspeed_prof.cli.capture import _choice_problem

    args = argparse.Namespace(stage=None, level=None, role=None, preset="stage-scoped")
    assert _choice_problem(args) is None and args.preset == "stage_scoped"
