"""The command a job was launched with, as the manifest records it for a relaunch."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mindspeed_prof.hydra.launch import command, launch_info

VENV = "/venv/bin"


def nowhere(name: str) -> None:
    return None


@pytest.mark.parametrize(
    "typed,argv,words",
    [
        # python train.py ...
        (
            "python examples/train.py profiler=mstx_light x=1",
            ["examples/train.py", "profiler=mstx_light", "x=1"],
            ["python", "examples/train.py"],
        ),
        # interpreter options stay, -m (multirun) and overrides go
        (
            "python3 -X dev train.py -m profiler=a,b",
            ["train.py", "-m", "profiler=a,b"],
            ["python3", "-X", "dev", "train.py"],
        ),
        # python -m module: Python puts the module's file in argv[0]
        (
            "python -m mindspeed_prof.demo demo.workers=0",
            ["/src/mindspeed_prof/demo/__main__.py", "demo.workers=0"],
            ["python", "-m", "mindspeed_prof.demo"],
        ),
        # an app that renames argv[0] and keeps Hydra's arguments (mindspeed-prof demo)
        (
            "python -m mindspeed_prof.cli demo -m profiler=x",
            ["mindspeed-prof demo", "-m", "profiler=x"],
            ["python", "-m", "mindspeed_prof.cli", "demo"],
        ),
        # the config flags are the app's: kept, in one spelling
        (
            "python train.py -cn other --config-path=conf x=1",
            ["train.py", "-cn", "other", "--config-path=conf", "x=1"],
            ["python", "train.py", "--config-path=conf", "--config-name=other"],
        ),
        (
            "python train.py --config-dir /etc/cfg",
            ["train.py", "--config-dir", "/etc/cfg"],
            ["python", "train.py", "--config-dir=/etc/cfg"],
        ),
        ("python train.py", ["train.py"], ["python", "train.py"]),
    ],
)
def test_the_words_before_hydras_arguments(typed: str, argv: list[str], words: list[str]) -> None:
    assert command(shlex.split(typed), argv, which=nowhere) == words


def test_an_installed_script_reads_as_typed_its_name_where_the_shell_finds_it() -> None:
    """The kernel ran the script through the interpreter its ``#!`` line names: the relaunch
    starts with the script, by name where the shell finds that file, else by its path (as
    typed: ``.venv/bin/mindspeed-prof``), never with the interpreter before it."""
    orig = [f"{VENV}/python", f"{VENV}/mindspeed-prof", "demo", "profiler=x"]
    argv = ["mindspeed-prof demo", "profiler=x"]
    ours = {f"{VENV}/mindspeed-prof": f"{VENV}/python"}.get  # its first line: #!/venv/bin/python
    found = {"mindspeed-prof": f"{VENV}/mindspeed-prof"}
    assert command(orig, argv, which=found.get, shebang=ours) == ["mindspeed-prof", "demo"]
    # not on PATH (or another file of that name first): the script's path, as typed
    assert command(orig, argv, which=nowhere, shebang=ours) == [f"{VENV}/mindspeed-prof", "demo"]
    assert command(
        orig, argv, which={"mindspeed-prof": "/usr/bin/mindspeed-prof"}.get, shebang=ours
    ) == [f"{VENV}/mindspeed-prof", "demo"]
    typed = ["/venv/bin/python", ".venv/bin/mindspeed-prof", "demo", "profiler=x"]  # relative
    assert command(typed, argv, which=nowhere, shebang={typed[1]: typed[0]}.get) == [
        ".venv/bin/mindspeed-prof",
        "demo",
    ]
    # a script Python was asked to run (python /venv/bin/tool): the interpreter stays
    other = {f"{VENV}/mindspeed-prof": "/usr/bin/python3"}.get
    assert command(orig, argv, which=found.get, shebang=other) == [
        f"{VENV}/python",
        f"{VENV}/mindspeed-prof",
        "demo",
    ]


def test_a_real_script_is_read_by_its_first_line(tmp_path: Path) -> None:
    """The shebang is read from the file itself (a venv's console script)."""
    script = tmp_path / "bin" / "tool"
    script.parent.mkdir()
    python = str(tmp_path / "bin" / "python")
    script.write_text(f"#!{python}\nimport sys\n")
    orig, argv = [python, str(script), "a=1"], ["tool", "a=1"]
    assert command(orig, argv, which={"tool": str(script)}.get) == ["tool"]
    assert command(orig, argv, which=nowhere) == [str(script)]
    script.write_text("print(1)\n")  # no first line naming the interpreter: as Python saw it
    assert command(orig, argv, which={"tool": str(script)}.get) == [python, str(script)]


@pytest.mark.parametrize(
    "orig,argv",
    [
        (["python", "train.py", "a=1"], ["train.py", "b=2"]),  # argv changed after start
        (["python"], ["train.py", "a=1", "b=2"]),
    ],
)
def test_a_command_line_of_another_shape_is_no_command(orig: list[str], argv: list[str]) -> None:
    assert command(orig, argv, which=nowhere) == []


def test_launch_info_adds_the_jobs_hydra_overrides_but_its_run_mode() -> None:
    hydra: Any = SimpleNamespace(  # HydraConf's fields that launch_info reads
        overrides=SimpleNamespace(
            hydra=["hydra.run.dir=out", "hydra.mode=MULTIRUN", "hydra.job.chdir=true"]
        ),
        runtime=SimpleNamespace(cwd="/launch"),
    )
    assert launch_info(hydra, ["python", "train.py"]) == {
        "command": ["python", "train.py", "hydra.run.dir=out", "hydra.job.chdir=true"],
        "cwd": "/launch",
    }
    assert launch_info(hydra, []) == {"command": [], "cwd": "/launch"}  # unknown: none
