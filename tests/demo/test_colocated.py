"""The demo's colocated step: weight sync (with its parts), offload and onload are stages of every
step; ``demo.transition_ms`` makes them dominate, and ``rl.transitions`` names them with the
figures recomputed here from the capture's own range file."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from rich.console import Console

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.config.schema import TRANSITIONS, WEIGHT_SYNC_PARTS
from mindspeed_prof.demo.trainer import train


def demo(tmp_path: Path, *overrides: str) -> Path:
    GlobalHydra.instance().clear()
    with initialize_config_module("mindspeed_prof.conf", version_base=None):
        cfg = compose(
            "demo",
            overrides=[
                "demo.steps=5",
                "demo.prompts=8",
                "demo.workers=0",
                "profiler_config=mstx_light",
                f"profiler_config.integrated.profile_save_path={tmp_path / 'out'}",
                *overrides,
            ],
        )
    GlobalHydra.instance().clear()
    train(cfg, Console(quiet=True))
    return tmp_path / "out"


def per_step(root: Path) -> dict[int, dict[str, Any]]:
    """Per captured step, from the range file as written: the step's ms, each stage's and each
    custom range's ms."""
    (path,) = root.rglob("*.mstx.trace.json")
    out: dict[int, dict[str, Any]] = defaultdict(
        lambda: {"stages": defaultdict(float), "ranges": defaultdict(float)}
    )
    for e in json.loads(path.read_text())["traceEvents"]:
        if e.get("ph") != "X":
            continue
        step = out[e["args"]["step"]]
        if e["cat"] == "step":
            step["step"] = e["dur"] / 1000
        else:
            step["stages" if e["cat"] == "stage" else "ranges"][e["name"]] += e["dur"] / 1000
    return out


def test_the_default_demo_names_its_transitions_and_finds_nothing_in_them(tmp_path: Path) -> None:
    root = demo(tmp_path)
    steps = per_step(root)
    assert sorted(steps) == [2, 3, 4, 5]
    for s in steps.values():
        assert {"weight_sync", "offload", "onload"} <= set(s["stages"])
        assert set(WEIGHT_SYNC_PARTS) <= set(s["ranges"])
    # small copies: no transition near a tenth of the step, unless a loaded machine stalls one;
    # either way the finding says what the capture holds
    step_ms = statistics.median(s["step"] for s in steps.values())
    over = {
        n
        for n in TRANSITIONS
        if statistics.median(s["stages"].get(n, 0.0) for s in steps.values()) >= step_ms / 10
    }
    rules = {f.rule for f in report(analyse(root)).findings}
    assert ("rl.transitions" in rules) == bool(over)


def test_transition_ms_makes_them_dominate_and_the_finding_quotes_the_capture(
    tmp_path: Path,
) -> None:
    root = demo(tmp_path, "demo.transition_ms=40")
    steps = per_step(root)
    # medians over the steps, as the verdict reads them; the transitions together per step
    step_ms = statistics.median(s["step"] for s in steps.values())
    each = {
        n: statistics.median(s["stages"].get(n, 0.0) for s in steps.values()) for n in TRANSITIONS
    }
    parts = {p: statistics.fmean(s["ranges"][p] for s in steps.values()) for p in WEIGHT_SYNC_PARTS}
    named = {n: ms for n, ms in each.items() if ms / step_ms >= 0.10}
    assert set(named) == {"weight_sync", "offload", "onload"}
    total = statistics.median(
        sum(s["stages"].get(n, 0.0) for n in TRANSITIONS) for s in steps.values()
    )
    top = max(named, key=lambda n: named[n])
    doc = report(analyse(root))
    (f,) = [f for f in doc.findings if f.rule == "rl.transitions"]
    assert f.title == (
        f"transitions take {total:,.1f} ms per step ({total / step_ms:.0%} of the "
        f"step) on rank 0: most {top} ({named[top]:,.1f} ms, "
        f"{named[top] / step_ms:.0%})"
    )
    assert total / step_ms > 0.5 and f.severity == "high"
    sync = ", ".join(f"{p} {parts[p]:,.1f}" for p in WEIGHT_SYNC_PARTS)
    assert (
        f"weight_sync {named['weight_sync']:,.1f} ms ({named['weight_sync'] / step_ms:.0%}; "
        f"{sync})" in f.detail
    )
    assert parts["transfer"] >= 40.0 and "hybrid_engine" in f.suggestion
    # the step's split: the same transitions, the parts adding up to each step
    for row in doc.tables.phases:
        s = steps[row.step]
        assert abs(row.step_ms - s["step"]) < 1e-6
        assert (
            abs(row.transition_ms - sum(s["stages"][n] for n in TRANSITIONS if n in s["stages"]))
            < 1e-3
        )
        assert abs(row.generation_ms - s["stages"]["actor_generate"]) < 1e-3


def test_a_leak_is_named_as_memory_growth_with_the_counters_figures(tmp_path: Path) -> None:
    """``demo.leak_mb`` keeps memory in actor_update every step; with ``stage_memory`` (on
    this CPU host: each stage's peak resident set) ``rl.memory_growth`` names it, its slope and
    values recomputed here from the range file's counters."""
    from mindspeed_prof.stats.trend import theil_sen

    root = demo(
        tmp_path,
        "demo.leak_mb=16",
        "demo.steps=12",
        "profiler_config.integrated.profile_step_end=13",
        "++profiler_config.extensions.stage_memory=true",
    )
    (path,) = root.rglob("*.mstx.trace.json")
    peaks: dict[str, dict[int, float]] = defaultdict(dict)
    for e in json.loads(path.read_text())["traceEvents"]:
        if e.get("ph") == "C" and e["name"] == "memory_peak_rss_bytes":
            a = e["args"]
            peaks[a["stage"]][a["step"]] = max(peaks[a["stage"]].get(a["step"], 0), *a["values"])
    assert set(peaks) >= {"actor_update", "weight_sync", "actor_generate"}
    slopes = {st: theil_sen(sorted(v), [v[k] for k in sorted(v)])[0] for st, v in peaks.items()}
    # the 16 MiB a step it keeps, less what the step frees of pages it held before (RSS)
    assert slopes["actor_update"] >= 12 * (1 << 20)
    (f,) = [f for f in report(analyse(root)).findings if f.rule == "rl.memory_growth"]
    top = max(slopes.values())
    assert f.title.startswith(f"peak memory grows {top / (1 << 20):,.2f} MiB per step on rank 0 ")
    from mindspeed_prof.analysis.ranges import stage_order

    first = min(slopes, key=lambda st: (-slopes[st], stage_order(st)))  # the steepest
    v, steps = peaks[first], sorted(peaks[first])
    assert f.detail.splitlines()[0].startswith(
        f"rank 0 {first}: {v[steps[0]] / (1 << 20):,.1f} -> {v[steps[-1]] / (1 << 20):,.1f} "
        f"MiB over steps 2-12, {slopes[first] / (1 << 20):+,.2f} MiB per step"
    )


def test_the_schedule_inside_a_step_on_the_demos_mini_batches(tmp_path: Path) -> None:
    """``demo.minibatch_stages``: four PPO epochs, four executions of actor_update a step; the
    schedule (skip 1, warm up 1, capture 2) keeps the third and fourth of each captured step."""
    from mindspeed_prof.demo.trainer import train as run

    GlobalHydra.instance().clear()
    with initialize_config_module("mindspeed_prof.conf", version_base=None):
        cfg = compose(
            "demo",
            overrides=[
                "demo.steps=3",
                "demo.prompts=8",
                "demo.workers=0",
                "demo.ppo_epochs=4",
                "demo.minibatch_stages=true",
                "profiler_config=stage_scoped",
                "profiler_config.integrated.profile_level=level0",
                f"profiler_config.integrated.profile_save_path={tmp_path / 'out'}",
                "++profiler_config.extensions.schedule_skip_first=1",
                "++profiler_config.extensions.schedule_warmup=1",
                "++profiler_config.extensions.schedule_active=2",
            ],
        )
    GlobalHydra.instance().clear()
    result = run(cfg, Console(quiet=True))
    (summary,) = result["summaries"]
    got = sorted((c.step, c.index) for c in summary.captures)
    assert got == [(s, i) for s in (2, 3) for i in (2, 3)]  # stage_scoped: steps 2 and 3
    traces = sorted((tmp_path / "out" / "actor_update").glob("*.pt.trace.json"))
    assert len(traces) == 4 and all(
        t.name.endswith(("_2.pt.trace.json", "_3.pt.trace.json")) for t in traces
    )
