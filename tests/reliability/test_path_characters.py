"""Every path the OS accepts as a save root (a tab, ``"``, a newline, ``\\``, spaces, a byte that
is no UTF-8) yields op-level captures that ``analyse`` reads, and the commands it suggests name
that root in bash (issue 42, item 6). Kineto wrote the path unescaped into its trace
(``traceName``: invalid JSON for a tab or ``"``) and failed its own rename for a newline or
``\\`` (profiling off); a trace written so before is read all the same."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import torch

from mindspeed_prof import Profiler
from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report

NAMES = {
    "tab": "a\tb",
    "quote": 'a"b',
    "newline": "a\nb",
    "backslash": "a\\b",
    "spaces": "a  b ",
    "not-utf8": os.fsdecode(b"a\xffb"),
    "escape": "a\x1b[31mb",
}


def profiled(root: Path) -> Profiler:
    cfg = {
        "profile": True,
        "profile_save_path": str(root),
        "profile_step_start": 1,
        "profile_step_end": 3,
    }
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, 4):
            with prof.step(step), prof.stage("actor_update"):
                torch.randn(8, 8) @ torch.randn(8, 8)
    return prof


def bash_args(line: str) -> list[bytes]:
    """The words bash passes to the command of ``line`` (a stub of the same name prints them)."""
    stub = "mindspeed-prof() { printf '%s\\0' \"$@\"; }; "
    out = subprocess.run(["bash", "-c", stub + line], capture_output=True, check=True).stdout
    return out.split(b"\0")[:-1]


@pytest.mark.parametrize("name", list(NAMES.values()), ids=list(NAMES))
def test_an_odd_save_root_yields_op_level_captures_that_analyse_reads(
    tmp_path: Path, name: str
) -> None:
    root = tmp_path / name / "out"
    prof = profiled(root)
    assert not prof.failed and [c.steps for c in prof.captures] == [[1, 2]]
    (trace,) = root.rglob("*.pt.trace.json")
    doc = json.loads(trace.read_bytes())  # valid JSON
    assert {"ProfilerStep#1", "ProfilerStep#2"} <= {e.get("name") for e in doc["traceEvents"]}
    assert not list(root.rglob("*.tmp"))
    answer = analyse(root, cache=False)
    assert answer.bad == [] and len(answer.traces) == 1
    rep = report(answer)
    commands = [n.command for n in rep.verdict.next if n.runnable]
    live = [c for c in commands if c.startswith("mindspeed-prof capture ")]
    assert live, commands
    assert bash_args(live[0])[1] == os.fsencode(str(root))


@pytest.mark.parametrize("name", ["a\tb", 'a"b', "a\\b\udcff"], ids=["tab", "quote", "bs"])
def test_a_trace_kineto_named_unescaped_is_read(tmp_path: Path, name: str) -> None:
    root = tmp_path / "plain"
    profiled(root)
    (trace,) = root.rglob("*.pt.trace.json")
    raw = trace.read_bytes()
    named = b'"traceName": "/x/' + os.fsencode(name) + b'/t.json"'
    hostile = re.sub(rb'"traceName": "[^"]*"', lambda _: named, raw)
    assert hostile != raw
    trace.write_bytes(hostile)
    with pytest.raises(ValueError):
        json.loads(hostile)
    answer = analyse(root, cache=False)
    assert answer.bad == [] and len(answer.traces) == 1
    assert answer.traces[0].kind == "torch" and answer.traces[0].events > 10
