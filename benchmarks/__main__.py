"""``python -m benchmarks``: overhead, size and speed figures; prints a table, writes RESULTS.md.

Every figure is a ratio against a baseline measured in the same run, with its goal and whether
it is met. Options: ``--quick`` (fewer repeats, for CI smoke runs), ``--only NAME`` (one group).
Each group runs in a process of its own: nothing one group leaves behind (a profiler still
open, torch's garbage, a thread) is measured by the next.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.report import Figure, Report

HERE = Path(__file__).resolve().parent
#: When the run started, and the load average (1 minute) before each group.
STARTED = time.time()
LOADS: list[float] = [os.getloadavg()[0]]

#: Figure groups, in the order they run and appear; each is ``benchmarks/<name>.py``.
MODULES = [
    "markers",
    "hot_path",
    "step_cost",
    "db_size",
    "analysis",
    "analysis_depth",
    "hydra_start",
    "scale",
    "cache_key",
    "stream",
    "decode",
    "references",
    "telemetry",
    "iterations",
    "scale_detailed",
    "judgement",
    "capture_estimate",
    "disk_budget",
]


def machine() -> str:
    import torch

    return (
        f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"torch {torch.__version__}"
    )


def render(report: Report, groups: list[str]) -> str:
    lines = [
        "# Benchmark results\n",
        f"Machine: {machine()}  ",
        f"Run: `python -m benchmarks{' --quick' if report.quick else ''}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(STARTED))} to "
        f"{time.strftime('%H:%M UTC', time.gmtime())}, the machine's load average (1 minute) "
        f"{LOADS[0]:.1f} at the start, {min(LOADS):.1f} to {max(LOADS):.1f} between groups, "
        f"{os.getloadavg()[0]:.1f} at the end. Every ratio is measured "
        "against a baseline in the same run; lower is better. Where a 95% interval is "
        "given, the verdict uses its upper bound.\n",
        "| figure | baseline | ratio [95% CI] | goal | verdict | detail |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f.line() for f in report.figures]
    lines.append("\n## Method\n")
    for name in groups:
        doc = inspect.getdoc(importlib.import_module(f"benchmarks.{name}")) or ""
        lines += [f"### {name}\n", doc, ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=MODULES, action="append")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"))
    p.add_argument("--json", help="also write the figures, with their verdicts, to this file")
    p.add_argument("--here", action="store_true", help=argparse.SUPPRESS)  # a group's process
    args = p.parse_args()
    report = Report(quick=args.quick)
    groups = args.only or MODULES
    for name in groups:
        LOADS.append(os.getloadavg()[0])
        if not args.here:
            print(f"== {name} (load {LOADS[-1]:.1f})", file=sys.stderr, flush=True)
        report.group = name
        first = len(report.figures)
        t0 = time.perf_counter()
        if not args.here:
            report.figures += _apart(name, args.quick)  # its lines are the process's own
            continue
        importlib.import_module(f"benchmarks.{name}").run(report)
        for f in report.figures[first:]:
            print(
                f"{f.ratio:8.3f}x  {f.verdict:10}  {f.figure}  vs  {f.baseline}  {f.detail}",
                file=sys.stderr,
                flush=True,
            )
        print(f"   ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    text = render(report, groups)
    if args.json:
        Path(args.json).write_text(
            json.dumps([{**dataclasses.asdict(f), "met": f.met} for f in report.figures], indent=1)
        )
    print(text)
    if not args.only or args.out != str(HERE / "RESULTS.md"):
        Path(args.out).write_text(text)
    return 0


def _apart(name: str, quick: bool) -> list[Figure]:
    """Group ``name`` run in a process of its own: its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        cmd = [sys.executable, "-m", "benchmarks", "--here", "--only", name, "--out", os.devnull]
        subprocess.run(
            [*cmd, "--json", str(out), *(["--quick"] if quick else [])],
            check=True,
            cwd=HERE.parent,
            stdout=subprocess.DEVNULL,
        )
        return [_figure(f) for f in json.loads(out.read_text())]


def _figure(row: dict[str, Any]) -> Figure:
    """A figure back from its ``--json`` row (the JSON list ``ci`` made a tuple again)."""
    fields = {k: v for k, v in row.items() if k != "met"}
    if fields.get("ci"):
        fields["ci"] = tuple(fields["ci"])
    return Figure(**fields)


if __name__ == "__main__":
    sys.exit(main())
