"""The first day, as a new user runs it: ``mindspeed-prof`` from the venv's ``bin`` in a shell,
in a folder of their own, every printed command pasted as printed (the verdict's relaunch line,
the job's last line, the docs' anomaly example), profiling off, Ray failing to start, the lines
a mistake gets."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import helpers
import pytest

from mindspeed_prof.config.presets import misspelt_line, not_a_name_line, unknown_preset_line

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
#: The job's last line: where the captures are and the command to read them.
LAST = re.compile(
    r"mindspeed-prof: (\d+) captures? in (\S+); read them: (mindspeed-prof analyse .+)$"
)


def shell(
    cwd: Path, line: str, env: dict[str, str] | None = None, timeout: int = 900
) -> subprocess.CompletedProcess[str]:
    """``line`` in bash, as typed, the venv's ``bin`` first on PATH (an activated venv)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HYDRA_", "COLUMNS", "RAY_AUTH", "RAY_ADDRESS"))
    }
    base.update(
        PATH=f"{BIN}{os.pathsep}{base.get('PATH', '')}",
        PYTHONPATH=helpers.tested_path(base.get("PYTHONPATH")),
        **(env or {}),
    )
    return subprocess.run(
        ["bash", "-c", line], cwd=cwd, env=base, capture_output=True, text=True, timeout=timeout
    )


def joined(ray_cluster: Any) -> dict[str, str]:
    """The environment that has the demo join this session's Ray cluster, as a user joins one
    they started (``RAY_ADDRESS``): Ray's own start is the tests' in test_demo.py and
    test_cluster.py, and each start here would cost seconds of a busy machine."""
    auth = {k: v for k, v in os.environ.items() if k.startswith("RAY_AUTH")}  # its token
    return {"RAY_ADDRESS": str(ray_cluster.get_runtime_context().gcs_address), **auth}


def ok(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines the run printed (stdout, then stderr), once it exited 0."""
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout}\n{proc.stderr}"
    return [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The job's last line on stdout (Hydra's log prefix dropped): the callback's."""
    line = [x for x in proc.stdout.splitlines() if x.strip()][-1]
    assert "mindspeed-prof: " in line, proc.stdout[-2000:]
    return line[line.index("mindspeed-prof: ") :]


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.hydra_app
def test_the_verdicts_relaunch_line_pasted_as_printed(tmp_path: Path, ray_cluster: Any) -> None:
    """README's planted straggler, then the relaunch line the verdict prints, pasted: it
    starts as the user typed the command, captures the stage on rank 1 only, says which rank
    wrote, ends with the line to read them, and ``doctor`` finds nothing wrong."""
    ray = joined(ray_cluster)
    first = shell(
        tmp_path,
        "mindspeed-prof demo demo.slow_stage=actor_generate demo.slow_rank=1 demo.steps=6",
        env=ray,
    )
    ok(first)
    light = LAST.search(last_line(first))
    assert light and light.group(2).startswith("outputs/")
    read = shell(tmp_path, f"{light.group(3)} --json")
    assert read.returncode == 0, read.stderr
    verdict = json.loads(read.stdout)["verdict"]
    relaunch = next(n["command"] for n in verdict["next"] if n["kind"] == "relaunch")
    assert relaunch.startswith("mindspeed-prof demo ")  # as typed, not /.../bin/python ...
    assert "'profiler_config.integrated.profile_ranks=[1]'" in relaunch
    again = shell(tmp_path, relaunch, env=ray)
    lines = ok(again)
    found = LAST.search(last_line(again))
    assert found and found.group(2) != light.group(2)
    assert any(re.match(r"\d+ captures? from rank 1 under ", x) for x in lines), lines
    scoped = tmp_path / found.group(2)
    assert {p.name.split("_")[0] for p in scoped.rglob("rank*")} == {"rank1"}
    doctor = shell(tmp_path, f"mindspeed-prof doctor {found.group(2)}")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.splitlines()[-1] == "healthy"


RAY_WONT_START = """
import sys

def init(**kwargs):
    raise Exception("The current node timed out during startup. This could happen because "
                    "some of the raylet failed to startup or the GCS has become overloaded.")

if __name__ == "__main__":  # the workers' processes import this module too
    import ray
    ray.init = init  # Ray's start on a machine too busy for its 30 s
    from mindspeed_prof.cli import main
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
@pytest.mark.hydra_app
def test_the_demo_survives_ray_not_starting(tmp_path: Path) -> None:
    """Ray's start times out, twice (a double of ``ray.init``): two lines say so and what is
    done instead; the workers run as plain processes, each its own rank; the relaunch line's
    capture of rank 1 is taken, the last line printed, ``doctor`` clean."""
    (tmp_path / "busy.py").write_text(RAY_WONT_START)
    proc = shell(
        tmp_path,
        "python busy.py demo profiler_config=stage_scoped "
        "profiler_config.integrated.stage=actor_generate "
        "'profiler_config.integrated.profile_ranks=[1]' demo.steps=4 "
        "hydra.run.dir=run",
    )
    lines = ok(proc)
    said = [x for x in lines if x.startswith("mindspeed-prof demo: Ray did not start")]
    assert len(said) == 2 and "trying once more" in said[0]
    assert "running the 2 workers as plain processes instead" in said[1]
    assert "2 captures from rank 1 under" in "\n".join(lines)
    assert last_line(proc) == (
        "mindspeed-prof: 2 captures in run/profiler_data; read them: "
        "mindspeed-prof analyse run/profiler_data"
    )
    ranks = {p.name.split("_")[0] for p in (tmp_path / "run/profiler_data").rglob("rank*")}
    assert ranks == {"rank1"}
    assert shell(tmp_path, "mindspeed-prof doctor run/profiler_data").returncode == 0


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.hydra_app
def test_profiling_off_ends_with_a_line_that_says_so(tmp_path: Path) -> None:
    """The demo as a new user's first run starts it: its own Ray cluster, 12 steps in which
    the policy learns (the reward rises), and a last line that says profiling was off."""
    proc = shell(tmp_path, "mindspeed-prof demo profiler=none")
    lines = ok(proc)
    assert re.fullmatch(
        r"mindspeed-prof: nothing captured in outputs/\S+/profiler_data: "
        r"profiling was off \(profile: false\)",
        last_line(proc),
    )
    assert "step  12  reward" in "\n".join(lines)
    (rise,) = [m for x in lines if (m := re.match(r"reward (\S+) -> (\S+) in 12 steps", x))]
    assert float(rise.group(2)) > float(rise.group(1)) + 0.2


def _documented_anomaly_command() -> str:
    """The anomaly example, as docs/unplanned.md prints it and conf/demo.yaml's comment."""
    doc = (REPO / "docs" / "unplanned.md").read_text()
    (command,) = re.findall(r"Try it: `(mindspeed-prof demo [^`]+)`", doc)
    yaml = (REPO / "conf" / "demo.yaml").read_text()
    assert f"#   {command}\n" in yaml
    return command


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.hydra_app
def test_the_documented_anomaly_example_triggers(tmp_path: Path, ray_cluster: Any) -> None:
    """The docs' command, as printed: rank 0's slow step 8 fires the trigger, which dumps the
    flight recorder there and captures the next steps under triggered/; the demo says so from
    the workers' records (their own warning crosses Ray's log forwarding, which may drop a line
    logged just before the job ends), with no library noise; analyse names it."""
    command = _documented_anomaly_command()
    proc = shell(tmp_path, command, env=joined(ray_cluster))
    lines = ok(proc)
    found = LAST.search(last_line(proc))
    assert found, lines[-3:]
    root = tmp_path / found.group(2)
    # step 8's dump and the capture after it (a machine under load may stall another step
    # for real: that trigger is the trainer's, not this test's)
    dumps = list((root / "flight").glob("rank0_*_step*.mstx.trace.json"))
    assert "anomaly" in {json.loads(d.read_text())["mindspeed_prof"]["reason"] for d in dumps}
    assert "step9.mstx.trace.json" in {
        p.name.split("_")[-1] for p in (root / "triggered").rglob("rank0_*")
    }
    said = f"rank 0: an anomaly at step 8 captured steps 9, 10 under {root / 'triggered'}"
    assert said in [line.strip() for line in lines], "\n".join(lines)
    assert not [line for line in lines if "DeprecationWarning" in line]
    text = shell(tmp_path, found.group(3)).stdout
    assert re.search(r"unusual +flight dump \(anomaly\) at step 8 on rank 0", text), text


BAD = [
    ("profiler_config=null", not_a_name_line("profiler_config", "profiler_config=null")),
    ("profiler_config=[1]", not_a_name_line("profiler_config", "profiler_config=[1]")),
    ("profilr=full", misspelt_line("profilr=full", "profilr", "profiler")),
    (
        "profiler_confg.integrated.stage=actor_generate",
        misspelt_line(
            "profiler_confg.integrated.stage=actor_generate", "profiler_confg", "profiler_config"
        ),
    ),
    ("profiler=ful", unknown_preset_line("profiler", "ful")),
    (
        "demo.slow_stage=actor_generat",
        "mindspeed-prof demo: demo.slow_stage='actor_generat': "
        "not a stage of the demo (did you mean actor_generate?); stages: actor_generate, ",
    ),
    (
        "demo.slow_stag=actor_generate",
        "mindspeed-prof demo: demo.slow_stag: no such knob (did "
        "you mean demo.slow_stage?); knobs: ",
    ),
    (
        "trainer.steps=50",
        "mindspeed-prof demo: trainer.steps: no such key in the demo's config "
        "(Key 'trainer' is not in struct); mindspeed-prof demo --help",
    ),
    (
        "profiler_config.integrated.stage=bogus",
        "mindspeed-prof: invalid config: "
        "profiler_config.integrated.stage='bogus': allowed: all, actor_generate",
    ),
]


@pytest.mark.hydra_app
@pytest.mark.parametrize("override,line", BAD, ids=[o for o, _ in BAD])
def test_a_mistake_is_one_line(tmp_path: Path, override: str, line: str) -> None:
    proc = shell(tmp_path, f"mindspeed-prof demo {shlex.quote(override)}", timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(line), proc.stderr
    assert "step " not in proc.stdout  # stopped before training


@pytest.mark.hydra_app
def test_a_rank_that_is_no_rank_is_one_line_before_training(tmp_path: Path) -> None:
    proc = shell(tmp_path, "mindspeed-prof demo demo.workers=0", env={"RANK": "abc"}, timeout=300)
    assert proc.returncode == 1 and "step " not in proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "mindspeed-prof: cannot profile this job: environment variable RANK='abc'"
    )


@pytest.mark.hydra_app
def test_help_lists_the_spellings_readme_teaches(tmp_path: Path) -> None:
    out = ok(shell(tmp_path, "mindspeed-prof demo --help", timeout=300))
    groups = [x for x in out[: out.index("== Config ==")] if ": " in x]
    assert [g.split(":")[0] for g in groups] == ["profiler", "profiler_config", "profiler_sweep"]
