"""Text ``analyse`` on very many steps: each table shows at most ``ROW_LIMIT`` rows (the first
and last halves, a ``...`` row where the rest were), then one line saying how many rows were
left out and how to see them all; ``--json`` keeps every row (issue 42, item 11: a trace of
100,000 steps took 167 s and 754 MiB as text, 36 s as ``--json``)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.rows import StepRow
from mindspeed_prof.views.text import print_analysis
from mindspeed_prof.views.text.cells import ROW_LIMIT, limited
from mindspeed_prof.views.text.stages import print_per_step


def rendered(print_it: object, *args: object, width: int = 120) -> list[str]:
    out = io.StringIO()
    print_it(*args, Console(file=out, width=width))  # type: ignore[operator]
    return out.getvalue().splitlines()


def test_100000_steps_print_a_bounded_table_and_say_what_was_left_out() -> None:
    rows = [
        StepRow(rank=r, step=s, total=1.0, stages={"actor_update": 0.5})
        for r in (0, 1)
        for s in range(1, 50_001)
    ]
    lines = rendered(print_per_step, rows)
    steps = [int(m.group(1)) for line in lines if (m := re.match(r"│ +\d+ │ +(\d+) │", line))]
    half = ROW_LIMIT // 2
    assert steps == list(range(1, half + 1)) + list(range(50_001 - half, 50_001))
    assert sum("│  ... │" in line for line in lines) == 1  # where the rows were left out
    left = len(rows) - ROW_LIMIT
    assert lines[-1] == (
        f"  ... {left:,} of {len(rows):,} per-step rows left out (the first and "
        "last shown); add --json (or --html) for every row"
    )
    assert len(lines) <= ROW_LIMIT + 8


def test_a_table_within_the_limit_is_whole_and_says_nothing_more() -> None:
    rows = [StepRow(rank=0, step=s, total=1.0) for s in range(1, ROW_LIMIT + 1)]
    lines = rendered(print_per_step, rows)
    assert not any("left out" in line or "..." in line for line in lines)
    assert limited(rows) == (rows, 0)


@pytest.mark.parametrize("ends", [True, False])
def test_limited_keeps_the_ends_or_the_first(ends: bool) -> None:
    rows = list(range(1000))
    shown, left = limited(rows, 10, ends)
    assert left == 990 and len(shown) == 10
    assert shown == ([0, 1, 2, 3, 4, 995, 996, 997, 998, 999] if ends else list(range(10)))


def test_analyse_of_many_steps_as_text_is_cut_and_json_is_whole(tmp_path: Path) -> None:
    steps = ROW_LIMIT * 3
    cfg = {
        "profile": True,
        "profile_save_path": str(tmp_path),
        "profile_level": "level_none",
        "profile_step_start": 1,
        "profile_step_end": steps + 1,
    }
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, steps + 1):
            with prof.step(step), prof.stage("actor_update"):
                pass
    rep = report(analyse(tmp_path, cache=False))
    lines = rendered(print_analysis, rep)
    assert (
        f"  ... {steps - ROW_LIMIT:,} of {steps:,} per-step rows left out (the first and last "
        "shown); add --json (or --html) for every row" in lines
    )
    assert len(lines) < ROW_LIMIT + 100
    assert len(json.loads(json.dumps(rep.json()))["per_step"]) == steps
