"""``python -m benchmarks --quick`` produces every figure, each with a number and a verdict that
follows from its goal (the numbers themselves are not asserted: no timed tests)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Every benchmark module with a ``run(report)``: each must be registered and give figures.
GROUPS = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if "\ndef run(" in p.read_text()}

_spec = importlib.util.spec_from_file_location("bench_report", ROOT / "benchmarks" / "report.py")
assert _spec and _spec.loader
_report = importlib.util.module_from_spec(_spec)
sys.modules["bench_report"] = _report
_spec.loader.exec_module(_report)
Figure = _report.Figure


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], str]:
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--out",
            str(out / "r.md"),
            "--json",
            str(out / "r.json"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads((out / "r.json").read_text()), (out / "r.md").read_text()


@pytest.mark.slow
def test_every_group_gives_figures_with_numbers(quick: tuple[list[dict], str]) -> None:
    figures, _ = quick
    assert {f["group"] for f in figures} == GROUPS and len(GROUPS) >= 5
    hta_missing = [f for f in figures if "HTA not runnable" in f["detail"]]
    for f in figures:
        if f in hta_missing:
            assert math.isnan(f["ratio"]) and f["met"] is False  # a missing baseline is no pass
            continue
        assert math.isfinite(f["ratio"]) and f["ratio"] >= 0, f  # a rate of false alarms: 0 at best
        if f["ci"]:
            lo, hi = f["ci"]
            assert lo <= f["ratio"] <= hi, f


@pytest.mark.slow
def test_verdict_follows_goal(quick: tuple[list[dict], str]) -> None:
    figures, text = quick
    for f in figures:
        bound = f["ci"][1] if f["ci"] else f["ratio"]
        want = None if f["goal"] is None else (not math.isnan(bound) and bound <= f["goal"])
        assert f["met"] is want, f
        row = next(
            line
            for line in text.splitlines()
            if line.startswith(f"| {f['figure']} | {f['baseline']} |")
        )
        assert {None: "| report |", True: "| met |", False: "| **missed** |"}[want] in row
    assert sum(f["goal"] is not None for f in figures) >= 8  # goals are judged, not just shown


@pytest.mark.parametrize(
    "ratio,ci,goal,met",
    [
        (1.01, None, 1.02, True),
        (1.03, None, 1.02, False),
        (1.01, (1.00, 1.03), 1.02, False),
        (1.01, (1.005, 1.015), 1.02, True),
        (float("nan"), None, 0.2, False),
        (5.0, None, None, None),
    ],
)
def test_figure_verdict(
    ratio: float, ci: tuple[float, float] | None, goal: float | None, met: bool | None
) -> None:
    assert Figure("g", "f", "b", ratio, goal, ci=ci).met is met


_spec_ci = importlib.util.spec_from_file_location(
    "bench_interval", ROOT / "benchmarks" / "interval.py"
)
assert _spec_ci and _spec_ci.loader
_interval = importlib.util.module_from_spec(_spec_ci)
_spec_ci.loader.exec_module(_interval)


@pytest.mark.parametrize("n,lo,hi", [(10, 2, 9), (25, 8, 18), (100, 40, 61)])
def test_median_interval_is_the_order_statistic_one(n: int, lo: int, hi: int) -> None:
    """The 95% interval of a median from ``n`` values is ``[x(k), x(n-k+1)]`` with the largest
    ``k`` whose binomial tails stay within 5% (the published table's ranks), in any order."""
    values = list(range(n, 0, -1))
    assert _interval.median_ci(values) == ((n + 1) / 2, lo, hi)


def test_median_interval_of_too_few_values_is_their_range() -> None:
    assert _interval.median_ci([3.0, 1.0, 2.0]) == (2.0, 1.0, 3.0)
    with pytest.raises(ValueError):
        _interval.median_ci([])
