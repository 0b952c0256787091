"""``examples/train.py``, the docs' snippet as a whole file, run as a user runs it (from a copy
of the repo's ``examples/``): both spellings, a stage sweep and its summary, and the relaunch
line ``analyse`` prints, pasted into a shell as printed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mindspeed_prof.formats.manifest import newest_job

REPO = Path(__file__).resolve().parents[2]
#: Every test runs the example app in a subprocess (CONTRIBUTING.md's markers).
pytestmark = pytest.mark.hydra_app
#: The demo's clock is the machine's: a multi-threaded op that waits for a core looks slow.
ENV = {k: v for k, v in os.environ.items() if not k.startswith(("HYDRA_", "COLUMNS"))}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A folder holding a copy of ``examples/``, where the user runs it."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


def run(cwd: Path, line: str) -> subprocess.CompletedProcess[str]:
    """``line`` in bash, as typed (``python`` is this interpreter)."""
    env = {**ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{ENV.get('PATH', '')}"}
    proc = subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
    return proc


def said(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """What the callback told the user (``mindspeed-prof: ...`` lines)."""
    return [
        line.split("mindspeed-prof: ", 1)[1]
        for line in (proc.stdout + proc.stderr).splitlines()
        if "mindspeed-prof: " in line
    ]


def test_mstx_light_by_the_missions_spelling(repo: Path) -> None:
    proc = run(repo, "python examples/train.py profiler=mstx_light")
    assert said(proc) == [
        "1 capture in profiler_data; read them: mindspeed-prof analyse profiler_data"
    ]
    (path,) = (repo / "profiler_data").glob("manifest-*.json")  # this run's
    manifest = json.loads(path.read_text())
    assert manifest["status"] == "completed" and len(manifest["captures"]) == 1
    assert manifest["job"]["command"] == ["python", "examples/train.py"]
    assert manifest["job"]["cwd"] == str(repo)
    assert "step 6  reward" in proc.stdout


def test_a_stage_by_the_group_and_a_field(repo: Path) -> None:
    run(
        repo,
        "python examples/train.py profiler_config=stage_scoped "
        "profiler_config.integrated.stage=actor_generate",
    )
    folders = sorted(p.name for p in (repo / "profiler_data").iterdir() if p.is_dir())
    assert folders == ["actor_generate"]
    assert list((repo / "profiler_data" / "actor_generate").glob("*.pt.trace.json"))


def test_a_stage_sweep_reports_what_it_captured(repo: Path) -> None:
    """``current()`` in each job gives the callback's profiler: no job says it captured
    nothing, and the summary counts every capture."""
    proc = run(
        repo,
        "python examples/train.py -m profiler=stage_scoped "
        "profiler_config.integrated.stage=actor_generate,actor_update",
    )
    assert [line for line in said(proc) if "nothing captured" in line] == []
    (sweep,) = repo.glob("multirun/*/*")
    jobs = json.loads((sweep / "sweep_summary.json").read_text())["jobs"]
    # stage_scoped's window is steps 2-3 (step 1 is warm-up): one capture per execution
    assert [(j["stage"], j["status"], j["captures"]) for j in jobs] == [
        ("actor_generate", "completed", 2),
        ("actor_update", "completed", 2),
    ]
    for job in jobs:
        assert list((Path(job["save_root"]) / job["stage"]).glob("*.pt.trace.json"))
    assert f"Sweep {sweep.relative_to(repo)}" in proc.stdout  # its table, printed


def next_lines(out: str) -> dict[str, str]:
    """``analyse``'s Next section: kind -> the command under it."""
    section = out.split("\nNext\n", 1)[1].split("\nFindings", 1)[0]
    kinds = re.findall(r"^  (\w+) ", section, re.MULTILINE)
    commands = [line.strip()[2:] for line in section.splitlines() if line.strip()[:2] == "$ "]
    return dict(zip(kinds, commands))


@pytest.mark.parametrize("where", ["launch dir", "elsewhere"])
def test_the_printed_relaunch_line_runs_the_next_capture(repo: Path, where: str) -> None:
    run(repo, "python examples/train.py profiler=mstx_light steps=4")
    here = repo if where == "launch dir" else repo / "elsewhere"
    here.mkdir(exist_ok=True)
    root = os.path.relpath(repo / "profiler_data", here)
    out = run(here, f"python -m mindspeed_prof.cli analyse {root}").stdout
    lines = next_lines(out)
    assert list(lines) == ["relaunch"]  # the job ended: no live request
    line = lines["relaunch"]
    stage = re.search(r"profiler_config\.integrated\.stage=(\w+)", line)
    assert stage is not None, out
    assert ("cd " in line) == (where == "elsewhere")
    assert line.endswith(
        "python examples/train.py profiler=stage_scoped steps=4 "
        f"profiler_config.integrated.stage={stage[1]}"
    )
    run(here, line)  # pasted as printed
    manifest = newest_job(repo / "profiler_data")  # the newest job's
    assert manifest is not None and manifest.window.stage == stage[1]
    assert manifest.job.overrides == [
        "profiler=stage_scoped",
        "steps=4",
        f"profiler_config.integrated.stage={stage[1]}",
    ]
    assert [c.stage for c in manifest.captures or []] == [stage[1]] * 2  # steps 2 and 3
    assert list((repo / "profiler_data" / stage[1]).glob("*.pt.trace.json"))


def test_a_field_set_under_none_is_checked_and_profiling_off_is_said_once(repo: Path) -> None:
    """The design card's own example on an app whose preset is ``none``: it trains, captures
    nothing and says so once, with how to turn profiling on; a typo in it stops before
    training, in one line, as it does with a preset."""
    proc = run(repo, "python examples/train.py profiler_config.integrated.stage=actor_generate")
    assert said(proc) == [
        "profiling is off (profile: false), so profiler_config.integrated.stage=actor_generate "
        "captures nothing; to profile, pick a preset: profiler_config=stage_scoped "
        "(mindspeed-prof presets lists them), or add profiler_config.integrated.profile=true"
    ]
    assert "step 6  reward" in proc.stdout and not (repo / "profiler_data").exists()
    env = {**ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{ENV.get('PATH', '')}"}
    typo = subprocess.run(
        ["bash", "-c", "python examples/train.py profiler_config.integrated.stage=actor_generat"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert typo.returncode == 1 and "step 1" not in typo.stdout
    (line,) = typo.stderr.splitlines()
    assert line.startswith(
        "mindspeed-prof: invalid config: profiler_config.integrated.stage="
        "'actor_generat': unknown (did you mean actor_generate?)"
    )


REJECTED = [
    "profiler_config=null",
    "profiler_config=[1]",
    "profiler=null",
    "+profiler_sweep=null",
    "profilr=full",
    "profiler_config.integrated.profile=maybe",
    "profiler_config.integrated=5",
]


@pytest.mark.parametrize("override", REJECTED)
def test_an_override_rejected_is_one_line_before_training(repo: Path, override: str) -> None:
    """``profiler_config=null`` was a 25-line Hydra traceback on this app; ``[1]`` 50 lines."""
    env = {**ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{ENV.get('PATH', '')}"}
    proc = subprocess.run(
        ["python", "examples/train.py", override],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1 and "step 1" not in proc.stdout, proc.stdout + proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"mindspeed-prof: {override if 'integrated' not in override else ''}")
