"""The demo's knobs are checked before anything runs: one line naming the knob, its value and
what is allowed; the closest knob or stage for a typo."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.demo.__main__ import _yaml_knobs, knob_problem
from mindspeed_prof.demo.knobs import RANGES, checked, problem

SHIPPED = _yaml_knobs()


def test_the_shipped_knobs_pass() -> None:
    assert problem(SHIPPED) is None
    assert checked(SHIPPED).steps == SHIPPED["steps"]


@pytest.mark.parametrize("name", list(RANGES))
def test_each_range_names_its_knob(name: str) -> None:
    """Just outside each knob's range (its lower end, or over 1 for a share)."""
    for bad in (-1, 1.5 if name in ("constant_reward_groups", "long_tail", "clip") else -1):
        if RANGES[name][0](bad):
            continue
        line = problem({**SHIPPED, name: bad})
        assert line == f"demo.{name}={bad}: must be {RANGES[name][1]}"


@given(stage=st.text(min_size=1, max_size=30))
def test_slow_stage_is_a_stage_of_the_demo(stage: str) -> None:
    line = problem({**SHIPPED, "slow_stage": stage})
    assert (line is None) == (stage in STAGES)
    if line is not None:
        assert line.startswith(f"demo.slow_stage={stage!r}: not a stage of the demo")


@pytest.mark.parametrize(
    "knobs,line",
    [
        (
            {"slow_stage": "actor_generat"},
            "demo.slow_stage='actor_generat': not a stage of the demo "
            f"(did you mean actor_generate?); stages: {', '.join(STAGES)}",
        ),
        (
            {"slow_stag": "x"},
            "demo.slow_stag: no such knob (did you mean demo.slow_stage?); knobs: ",
        ),
        ({"steps": "abc"}, "demo.steps='abc': expected `int`, got `str`"),
        ({"slow_step": 13}, "demo.slow_step=13: must be a step of the run, 1 to 12"),
        ({"slow_rank": 2}, "demo.slow_rank=2: must be a worker's rank, 0 to 1"),
        ({"slow_rank": 1, "workers": 0}, "demo.slow_rank=1: must be a worker's rank, 0 to 0"),
    ],
)
def test_a_bad_knob_is_one_line(knobs: dict[str, Any], line: str) -> None:
    got = problem({**SHIPPED, **knobs})
    assert got is not None and got.startswith(line) and "\n" not in got
    with pytest.raises(ValueError, match="^mindspeed-prof demo: demo"):
        checked({**SHIPPED, **knobs})


@pytest.mark.parametrize(
    "args,line",
    [
        (["demo.slow_stage=actor_generat"], "demo.slow_stage='actor_generat'"),
        (["-m", "demo.steps=2,abc"], "demo.steps='abc'"),  # each value of a sweep
        (["demo.workers=0", "demo.slow_rank=1"], "demo.slow_rank=1"),  # with the other override
        (["demo.slow_step=8", "--cfg", "job"], None),
        (["+demo.slow_step=8"], None),
        (["~demo.slow_step"], None),
        (["profiler=full", "hydra.run.dir=x"], None),
        (["demo.steps=${oops"], None),  # not Hydra's to parse: Hydra says why
    ],
)
def test_the_command_line_is_checked_against_the_shipped_knobs(
    args: list[str], line: str | None
) -> None:
    got = knob_problem(args)
    assert (got is None) if line is None else (got is not None and got.startswith(line))


def test_checking_the_knobs_imports_no_torch() -> None:
    """A bad knob is named before anything heavy loads: the check imports no torch (its first
    call took 0.7 s when the config lived beside the worker's model)."""
    code = (
        "import sys; from mindspeed_prof.demo.knobs import checked, problem; "
        "from mindspeed_prof.demo.__main__ import _yaml_knobs; k = _yaml_knobs(); "
        "assert problem({**k, 'slow_stage': 'x'}) and checked(k); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
