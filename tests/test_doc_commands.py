"""Every demo and example-app command README.md and docs/ print composes as printed: its
overrides are keys the app has, its knobs and ``profiler_config`` pass the checks that stop a
run (each job of a ``-m`` sweep). The ones a new user runs first are run whole by
tests/demo/test_first_day.py and tests/hydra/test_example.py."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser

from mindspeed_prof.config import validate
from mindspeed_prof.demo.__main__ import knob_problem
from mindspeed_prof.hydra.lines import typed_fields

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
APPS = {"mindspeed-prof demo": None, "python examples/train.py": ROOT / "examples" / "conf"}
_START = re.compile(
    r"(?:^|`|\$ |&& |\s)((?:[A-Z_]+=\S+ )*(?:mindspeed-prof demo|"
    r"python examples/train\.py)(?:[ \t][^`\n]*)?)"
)


def commands(text: str) -> list[str]:
    """Each command line of ``text`` that runs the demo or the example app (continuation
    lines joined, comments and a trailing inline-code tick dropped)."""
    text = re.sub(r"\\\n\s*", " ", text)
    out = []
    for match in _START.finditer(text):
        line = match.group(1).split(" #")[0].strip().rstrip("`.,;)")
        out.append(" ".join(line.split()))
    return out


def documented() -> list[tuple[str, str]]:
    return [(path.name, c) for path in DOCS for c in commands(path.read_text())]


def _argv(command: str) -> tuple[Path | None, list[str]]:
    words = shlex.split(command)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # RAY_ADDRESS=auto ...
        words.pop(0)
    app = " ".join(words[:2])
    assert app in APPS, command
    return APPS[app], words[2:]


def _jobs(args: list[str]) -> list[list[str]]:
    """The jobs' overrides: one job, or each of a ``-m`` sweep's."""
    overrides = [a for a in args if not a.startswith("-")]
    if "-m" not in args:
        return [overrides]
    parsed = OverridesParser.create().parse_overrides(overrides)
    choices = [
        [f"{o.get_key_element()}={v}" for v in o.sweep_string_iterator()]
        if o.is_sweep_override()
        else [str(o.input_line)]
        for o in parsed
    ]
    return [list(job) for job in itertools.product(*choices)]


def _compose(conf: Path | None, overrides: list[str]) -> Any:
    """The job's config as Hydra composes it, set as the current job's (``${hydra:...}``)."""
    from hydra.core.hydra_config import HydraConfig

    GlobalHydra.instance().clear()
    try:
        if conf is None:
            with initialize_config_module("mindspeed_prof.conf", version_base=None):
                cfg = compose("demo", overrides=overrides, return_hydra_config=True)
        else:
            with initialize_config_dir(str(conf), version_base=None):
                cfg = compose("config", overrides=overrides, return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()
    HydraConfig.instance().set_config(cfg)
    return cfg


def test_the_commands_are_found() -> None:
    found = {c for _, c in documented()}
    assert "mindspeed-prof demo demo.slow_step=8 profiler_config.extensions.anomaly_factor=2" in (
        found
    )
    assert (
        "mindspeed-prof demo -m profiler_config=stage_scoped "
        "profiler_config.integrated.stage=actor_generate,actor_update,critic_update" in found
    )
    assert "python examples/train.py profiler=mstx_light" in found
    assert len(found) >= 15


@pytest.mark.parametrize("doc,command", documented(), ids=[c for _, c in documented()])
def test_each_documented_command_composes_as_printed(doc: str, command: str) -> None:
    conf, args = _argv(command)
    if "--help" in args:
        return  # Hydra's own
    if conf is None:
        assert knob_problem(args) is None, command
    for job in _jobs(args):
        cfg = _compose(conf, job)
        validate(cfg.profiler_config, typed=typed_fields(job))  # as the callback checks
