"""Helpers shared by tests (``pythonpath = tests`` in pyproject)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mindspeed_prof
from mindspeed_prof.analysis.report.captures import Captures
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import Tables, tables

#: The folder holding the copy of the package these tests import (the working tree, an
#: installed copy, or mutmut's ``mutants/``): every subprocess a test starts imports this one.
TESTED = str(Path(mindspeed_prof.__file__).resolve().parents[1])


def tested_path(pythonpath: str | None) -> str:
    """``PYTHONPATH`` for a subprocess: ``TESTED`` first. Not in mutmut's stats run, whose
    recording trampolines cannot run outside mutmut's process: children there import the
    copy they find (mutant runs do put ``mutants/`` first, so subprocess tests kill too)."""
    rest = [p for p in (pythonpath or "").split(os.pathsep) if p and p != TESTED]
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        return os.pathsep.join(rest)
    return os.pathsep.join([TESTED, *rest])


def run_app(app: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Run ``app.py`` in ``app`` with nothing from this repo on its path but the tested
    package (and its Hydra plugin, found by Hydra's own discovery)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYDRA_")}
    env["PYTHONPATH"] = tested_path(None)
    proc = subprocess.run(
        [sys.executable, "app.py", *args],
        cwd=app,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"app failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def load_json(path: Path) -> Any:
    with open(path) as f:
        return json.load(f)


def trace_names(path: Path, cat: str | None = None) -> set[str]:
    events = load_json(path)["traceEvents"]
    return {e["name"] for e in events if cat is None or e.get("cat") == cat}


#: Counts the reliability suite reports at the end of the run (overrides tried, faults, files).
COUNTS: dict[str, int] = {}


def count(what: str, n: int = 1) -> None:
    COUNTS[what] = COUNTS.get(what, 0) + n


def answered(
    captures: Captures, settings: Settings | None = None
) -> tuple[Captures, Tables, Settings]:
    """``captures`` with its tables under ``settings`` (default: the CLI's): what a finding
    rule, the verdict and Next take."""
    s = settings or Settings()
    return captures, tables(captures, s), s
