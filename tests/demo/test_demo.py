"""The demo trainer: two Ray workers, every preset, rank selection, the main job's claims."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from rich.console import Console

from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.config.presets import PRESETS
from mindspeed_prof.demo.trainer import DemoResult, train
from mindspeed_prof.formats.cluster import WorkerSummary


def demo_cfg(tmp_path: Path, *overrides: str) -> Any:
    GlobalHydra.instance().clear()
    with initialize_config_module("mindspeed_prof.conf", version_base=None):
        cfg = compose(
            "demo",
            overrides=[
                "demo.steps=3",
                "demo.prompts=8",
                f"profiler_config.integrated.profile_save_path={tmp_path / 'out'}",
                *overrides,
            ],
        )
    GlobalHydra.instance().clear()
    return cfg


def files_by_rank(root: Path) -> dict[int, list[Path]]:
    out: dict[int, list[Path]] = {}
    for p in root.rglob("rank*"):
        out.setdefault(int(p.name[4:].split("_")[0]), []).append(p)
    return out


@pytest.fixture(scope="module")
def mstx_light_run(
    ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[DemoResult, Path]:
    """The demo on two Ray workers with ``mstx_light`` (3 steps, 8 prompts), run once for the
    tests that read it (each Ray run of the demo takes seconds: two new worker processes)."""
    from mindspeed_prof.testing.state import process_state

    tmp = tmp_path_factory.mktemp("mstx_light")
    with process_state():
        result = train(demo_cfg(tmp, "profiler_config=mstx_light"), Console(quiet=True))
    return result, tmp / "out"


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_on_two_workers(
    ray_cluster: Any, tmp_path: Path, preset: str, request: pytest.FixtureRequest
) -> None:
    if preset == "mstx_light":  # the same run as the tests below read
        result, root = request.getfixturevalue("mstx_light_run")
    else:
        result = train(demo_cfg(tmp_path, f"profiler_config={preset}"), Console(quiet=True))
        root = tmp_path / "out"
    summaries = result["summaries"]
    assert [s.rank for s in summaries] == [0, 1]
    if preset == "none":
        assert not root.exists()
        return
    on_disk = files_by_rank(root)
    assert sorted(on_disk) == [0, 1]
    for s in summaries:  # what came back through Ray matches the worker's files
        rank = s.rank
        assert rank is not None
        assert sorted(Path(f.path) for f in s.files) == sorted(on_disk[rank])
        assert all(Path(f.path).stat().st_size == f.bytes for f in s.files)
        assert isinstance(s, WorkerSummary) and s.captures and not s.failed
    cluster = json.loads((root / "cluster_summary.json").read_text())
    assert [w["rank"] for w in cluster["workers"]] == [0, 1]


def test_mstx_light_shows_all_stages_for_both_ranks(
    mstx_light_run: tuple[DemoResult, Path],
) -> None:
    result, _ = mstx_light_run
    rows = {(r["stage"], r["rank"]) for s in result["summaries"] for r in s.stage_rank}
    stages = {
        "actor_generate",
        "actor_compute_log_prob",
        "reference_compute_log_prob",
        "critic_compute_values",
        "actor_update",
        "critic_update",
        "weight_sync",
        "offload",
        "onload",
    }  # the colocated step's transitions too
    assert rows == {(s, r) for s in stages for r in (0, 1)}


@pytest.mark.parametrize("on_demand", [True, False])
def test_the_capture_board_follows_extensions_on_demand(
    ray_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_demand: bool
) -> None:
    """The demo opens its capture board when it starts Ray, unless
    ``profiler_config.extensions.on_demand`` is false. (The session's cluster stands in for
    the one the demo would start: it is neither started nor shut down here.)"""
    import mindspeed_prof.demo.trainer as trainer

    opened: list[bool] = []
    monkeypatch.setattr(ray_cluster, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_cluster, "init", lambda **kwargs: None)
    monkeypatch.setattr(ray_cluster, "shutdown", lambda: None)
    monkeypatch.setattr(trainer, "open_board", lambda: opened.append(True))
    console = Console(record=True, width=200)
    train(
        demo_cfg(
            tmp_path,
            "profiler_config=mstx_light",
            f"profiler_config.extensions.on_demand={str(on_demand).lower()}",
        ),
        console,
    )
    assert opened == ([True] if on_demand else [])
    # a run of seconds: no live-capture line, which would be gone before it is pasted
    assert "capture while it runs" not in console.export_text()


def test_the_live_capture_line_is_printed_where_it_can_be_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only with a minute or more left, saying until when it works."""
    import types

    import ray

    import mindspeed_prof.demo.trainer as trainer

    monkeypatch.setattr(
        ray, "get_runtime_context", lambda: types.SimpleNamespace(gcs_address="10.0.0.1:6379")
    )
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert trainer._capture_line(trainer.LIVE_MIN_S - 1, 12) is None
    assert trainer._capture_line(754.4, 2000) == (
        "capture while it runs (valid until the demo ends, about 754 s from now, at step "
        "2000): mindspeed-prof capture --ray 10.0.0.1:6379"
    )
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # Ray asks for it with an explicit address
    assert str(trainer._capture_line(60, 30)).endswith(
        ": RAY_AUTH_MODE=token mindspeed-prof capture --ray 10.0.0.1:6379"
    )


def test_in_process_mode(tmp_path: Path) -> None:
    result = train(
        demo_cfg(tmp_path, "profiler_config=stage_scoped", "demo.workers=0"), Console(quiet=True)
    )
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "actor_update",
        "cluster_summary.json",
    ]
    assert len(result["rewards"]) == 3


def test_in_process_iteration_window_captures_its_decode_iterations(tmp_path: Path) -> None:
    train(
        demo_cfg(
            tmp_path,
            "profiler_config=stage_scoped",
            "demo.workers=0",
            "profiler_config.integrated.stage=actor_generate",
            "++profiler_config.extensions.iteration_start=1",
            "++profiler_config.extensions.iteration_count=2",
        ),
        Console(quiet=True),
    )
    traces = sorted((tmp_path / "out" / "actor_generate").glob("*.pt.trace.json"))
    assert len(traces) == 2  # steps 2 and 3
    for path in traces:
        events = json.loads(path.read_text())["traceEvents"]
        names = {e["name"] for e in events if e.get("cat") == "user_annotation"}
        assert {n for n in names if n.startswith("iteration#")} == {"iteration#1", "iteration#2"}
        assert "aten::multinomial" in {e["name"] for e in events}


@pytest.mark.ray
@pytest.mark.hydra_app
def test_module_entry_point_stage_scoped(ray_cluster: Any, tmp_path: Path) -> None:
    """``python -m mindspeed_prof.demo`` on the session's cluster (``RAY_ADDRESS``, as a user
    joins one they started: a cluster's start is another test's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLUMNS")}
    # this session's cluster by its address: "auto" takes the newest on the machine, which may
    # be another test's (the two-node test starts one beside it)
    env["RAY_ADDRESS"] = str(ray_cluster.get_runtime_context().gcs_address)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mindspeed_prof.demo",
            "profiler_config=stage_scoped",
            "profiler_config.integrated.stage=actor_update",
            "demo.steps=4",
            "demo.prompts=8",
            "hydra.run.dir=run",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "run" / "profiler_data"
    dirs = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert dirs == ["actor_update"]
    traces = list((root / "actor_update").glob("*.pt.trace.json"))
    assert {t.name[:5] for t in traces} == {"rank0", "rank1"} and len(traces) == 4
    assert "actor_update" in proc.stdout and "reward" in proc.stdout
    (manifest,) = root.glob("manifest-*.json")  # the driver's, of this run
    assert json.loads(manifest.read_text())["status"] == "completed"
    assert "4 captures from ranks 0, 1 under" in proc.stdout
    assert (
        "mindspeed-prof: 4 captures in run/profiler_data; read them: mindspeed-prof analyse "
        "run/profiler_data" in proc.stdout
    )
    # Nothing the user did not ask for: Ray's token notice, torch's markers (workers' included).
    assert "Token authentication" not in proc.stderr
    assert "USDT" not in proc.stdout + proc.stderr
    assert max(len(line) for line in proc.stdout.splitlines() if "│" in line) <= 80


@pytest.mark.hydra_app
def test_in_process_mode_starts_no_ray(tmp_path: Path) -> None:
    """``demo.workers=0``: the workers run in this process, and Ray is neither imported for
    them nor started (asking Ray's runtime context would start a cluster)."""
    code = (
        "import sys; from mindspeed_prof.cli import main; "
        "code = main(['demo', 'profiler_config=mstx_light', 'demo.workers=0', "
        "'demo.steps=2', 'demo.prompts=8', 'hydra.run.dir=run']); "
        "ray = sys.modules.get('ray'); "
        "print('RAY', ray is not None and ray.is_initialized()); sys.exit(code)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "COLUMNS"))}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "RAY False" in proc.stdout
    assert "Token authentication" not in proc.stderr and "ray" not in proc.stderr.lower()


def test_a_slow_stage_is_the_verdict_and_the_next_command_captures_it(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """The issue's walk: a light capture names the slow stage and the straggler first, and the
    relaunch override it prints takes the stage-scoped capture of that stage on that rank."""
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.report.report import report
    from mindspeed_prof.views.text import print_analysis

    train(
        demo_cfg(
            tmp_path,
            "profiler_config=mstx_light",
            "demo.steps=4",
            "demo.slow_stage=actor_generate",
            "demo.slow_ms=400",
            "demo.slow_rank=1",
        ),
        Console(quiet=True),
    )
    result = analyse(tmp_path / "out")
    answers = report(result)
    v = answers.verdict
    assert v.slowest is not None and (v.slowest.kind, v.slowest.name) == ("stage", "actor_generate")
    # on its slowest rank, rank 1: at least the 400 ms planted; its share is of the step the
    # job lived, rank 1's (every step waits for it), never over 100%
    assert v.slowest.ms >= 400 and v.slowest.rank == 1
    assert v.slowest.share is not None and 0.5 < v.slowest.share <= 1.0
    # the step is the gating rank's, not a mean over ranks that no rank lived
    assert v.step is not None and v.step.median_ms >= 400 and v.step.gated_by == 1
    # the fastest rank's own step beside it (rank 0's, a busy machine's only: not always short)
    assert v.step.fastest_ms is not None and v.step.fastest_ms < v.step.median_ms
    assert v.straggler is not None and (v.straggler.name, v.straggler.rank) == ("actor_generate", 1)
    assert v.behind is not None and v.behind.lag_ms > 300
    assert v.causes and (v.causes[0].rule, v.causes[0].rank) == ("ranks.straggler", 1)
    assert answers.findings[0].rule == "ranks.straggler"
    console = Console(width=80, record=True, file=io.StringIO())
    print_analysis(answers, console)
    lines = console.export_text().splitlines()
    head = lines[lines.index("Verdict") : lines.index("Next")]  # the verdict comes first
    assert lines.index("Verdict") <= 3 and any(
        line.lstrip().startswith("slowest") and "actor_generate" in line for line in head
    )
    assert any("straggler" in line and "rank 1 at stage actor_generate" in line for line in head)
    relaunch, live = v.next
    assert relaunch.kind == "relaunch" and live.kind == "live"
    assert live.command.startswith(f"mindspeed-prof capture {tmp_path / 'out'} ")
    assert "--stage actor_generate --ranks 1 --level level1" in live.command
    # the printed override, run as given: the stage-scoped capture of that stage on rank 1
    again = tmp_path / "again"
    train(demo_cfg(again, *relaunch.overrides, "demo.steps=4"), Console(quiet=True))
    assert sorted(files_by_rank(again / "out")) == [1]
    scoped = analyse(again / "out")
    assert {r.name for r in tables(scoped).ranges if r.kind == "stage"} == {"actor_generate"}
    assert {t.meta.level for t in scoped.traces} == {"level1"}


def test_the_ledger_run_names_its_waste_in_the_verdict_next_and_findings_alike(
    ray_cluster: Any, tmp_path: Path
) -> None:
    """The issue's ledger run (``demo.long_tail=0.05 demo.constant_reward_groups=0.3
    demo.filter_groups=true``) on the demo's two workers: no straggler from noise, the planted
    waste among the verdict's causes, and the verdict, Next and the findings name the same
    first cause."""
    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.report.report import report
    from mindspeed_prof.views.words import verdict_lines

    train(
        demo_cfg(
            tmp_path,
            "profiler_config=mstx_light",
            "demo.long_tail=0.05",
            "demo.constant_reward_groups=0.3",
            "demo.filter_groups=true",
        ),
        Console(quiet=True),
    )
    answers = report(analyse(tmp_path / "out"))
    v = answers.verdict
    assert {"rl.dropped", "rl.zero_variance"} & {f.rule for f in answers.findings}
    costed = [f for f in answers.findings if f.impact_ms and f.severity != "low"]
    if v.causes:
        assert (costed[0].rule, costed[0].title) == (v.causes[0].rule, v.causes[0].title)
        assert "the first cause" in v.next[0].why
    lines = dict(verdict_lines(v))
    if v.behind is None:  # a named straggler is a cause of its own; none here is the stage's
        assert v.slowest is None or v.slowest.rank is None
    assert all("%" not in line or "0.00 s" not in line for line in lines.values())


def test_compare_gate_passes_the_same_config_and_fails_a_planted_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs of one config pass ``compare --fail-over``; a stage made 300 ms slower fails,
    named with what it costs. (The gate's floor is wide here: these are timed runs on a
    shared CPU. Six steps a run: enough for the gate's rank test to call one row of up to 32
    changed, `gate.steps_needed`.)"""
    from mindspeed_prof.cli import main

    runs = {}
    for name, extra in (
        ("a", ()),
        ("b", ()),
        ("slow", ("demo.slow_stage=critic_update", "demo.slow_ms=300")),
    ):
        train(
            demo_cfg(
                tmp_path / name,
                "profiler_config=mstx_light",
                "demo.workers=0",
                "demo.steps=7",
                *extra,
            ),
            Console(quiet=True),
        )
        runs[name] = str(tmp_path / name / "out")
    gate = ["--fail-over", "0.5", "--noise-ms", "50"]
    assert main(["compare", runs["a"], runs["b"], *gate]) == 0
    capsys.readouterr()
    assert main(["compare", runs["a"], runs["slow"], *gate]) == 4
    slower = [line for line in capsys.readouterr().err.splitlines() if "slower:" in line]
    assert len(slower) == 1 and "stage 'critic_update' rank 0" in slower[0]


# -- the demo's sweeps, run as users run them --------------------------------------------------
SMALL = ["demo.steps=4", "demo.prompts=8"]  # the demo's window: steps 2 and 3


def run_demo(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH", "COLUMNS"))}
    proc = subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", "demo", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr
    # Hydra turns a callback's exception into a warning: none here
    assert "Callback ProfilerCallback" not in proc.stderr, proc.stderr
    return proc


def summary(cwd: Path) -> tuple[Path, list[dict[str, Any]]]:
    (sweep,) = cwd.glob("multirun/*/*")
    return sweep, json.loads((sweep / "sweep_summary.json").read_text())["jobs"]


@pytest.mark.slow  # a sweep of the demo, in process
def test_every_stage_sweep_summarises_the_demo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-m profiler=stage_scoped +profiler_sweep=all_stages`` on the demo (its save path is
    ``${hydra:runtime.output_dir}/profiler_data``): one job per stage, each capturing its stage
    in its own dir, and the summary the multirun's end writes counts them. ``analyse`` of the
    multirun dir answers for the sweep (one row per job), not for its newest job alone."""
    from mindspeed_prof.config.schema import STAGES

    proc = run_demo(
        tmp_path,
        "-m",
        "profiler=stage_scoped",
        "+profiler_sweep=all_stages",
        "demo.workers=0",
        *SMALL,
    )
    sweep, jobs = summary(tmp_path)
    assert [j["stage"] for j in jobs] == list(STAGES)
    for num, job in enumerate(jobs):
        assert (job["status"], job["captures"], job["note"]) == ("completed", 2, None), job
        assert Path(job["save_root"]) == sweep / str(num) / "profiler_data"
        folders = [p.name for p in Path(job["save_root"]).iterdir() if p.is_dir()]
        assert job["stage"] in folders and not set(folders) & (set(STAGES) - {job["stage"]})
        assert job["ms_per_stage"] > 0
    assert proc.stdout.count(f"Sweep {sweep.relative_to(tmp_path)}") == 1  # its table
    from mindspeed_prof.cli import main

    capsys.readouterr()
    assert main(["analyse", str(sweep)]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"mindspeed-prof: {sweep} is a Hydra multirun of 6 jobs, each its own run: one row per "
        f"job (mindspeed-prof sweep {sweep}); one job's answer: mindspeed-prof analyse "
        f"{sweep / '0'}, or each apart: --run all"
    ]
    assert f"Sweep {sweep}" in out and all(stage in out for stage in STAGES)
    assert "Verdict" not in out  # no one job's verdict passed off as the sweep's
    assert main(["analyse", str(sweep), "--run", "all", "--json"]) == 0  # each job, as asked
    assert len(json.loads(capsys.readouterr().out)["results"]) == 6


@pytest.mark.ray
def test_a_stage_sweep_on_the_demos_ray_workers(tmp_path: Path) -> None:
    """The demo as shipped (two Ray workers, one cluster per job, one at a time): both ranks'
    captures of each job's stage are in the summary."""
    run_demo(
        tmp_path,
        "-m",
        "profiler_config=stage_scoped",
        "profiler_config.integrated.stage=actor_generate,critic_update",
        *SMALL,
    )
    _, jobs = summary(tmp_path)
    assert [(j["stage"], j["status"], j["captures"]) for j in jobs] == [
        ("actor_generate", "completed", 4),
        ("critic_update", "completed", 4),
    ]
    for job in jobs:
        traces = list((Path(job["save_root"]) / job["stage"]).glob("*.pt.trace.json"))
        assert sorted({t.name[:5] for t in traces}) == ["rank0", "rank1"]


# -- the demo's counters -----------------------------------------------------------------------
def demo_counts(root: Path) -> dict[int, dict[tuple[int, str], Any]]:
    """Every range file's counts: rank -> (step, name) -> value(s), checking each count's
    stage (the update's tokens in ``actor_update``, the rest in ``actor_generate``)."""
    out: dict[int, dict[tuple[int, str], Any]] = {}
    for path in root.rglob("*.mstx.trace.json"):
        trace = json.loads(path.read_text())
        rank = trace["mindspeed_prof"]["rank"]
        for e in trace["traceEvents"]:
            if e["ph"] != "C":
                continue
            args = e["args"]
            assert args["stage"] == (
                "actor_update" if e["name"] == "tokens_trained" else "actor_generate"
            ), e
            key = (args["step"], e["name"])
            assert key not in out.setdefault(rank, {}), e  # one call per name and step
            out[rank][key] = args.get("value", args.get("values"))
    return out


STANDARD = {
    "tokens_generated",
    "tokens_trained",
    "samples_kept",
    "samples_dropped",
    "groups",
    "groups_zero_variance",
    "responses_truncated",
    "response_length",
    "reward",
}


def test_the_demos_captures_hold_its_counters_on_both_ranks(
    mstx_light_run: tuple[DemoResult, Path],
) -> None:
    """As shipped (knobs off): every standard counter, each window step, both ranks; every
    sample kept, none cut, the tokens trained those generated (the 3 steps of the shared
    ``mstx_light`` run)."""
    got = demo_counts(mstx_light_run[1])
    assert sorted(got) == [0, 1]
    for counted in got.values():
        assert {step for step, _ in counted} == {2, 3}  # the preset's window, within 3 steps
        for step in (2, 3):
            c = {name: counted[(step, name)] for name in STANDARD}
            assert c["groups"] == 8 and len(c["reward"]) == len(c["response_length"]) == 32
            assert c["response_length"] == [4] * 32 and c["tokens_generated"] == 128
            assert (c["samples_kept"], c["samples_dropped"], c["responses_truncated"]) == (32, 0, 0)
            assert c["tokens_trained"] == 128
            assert 0 <= c["groups_zero_variance"] <= 8
            assert all(0.0 <= r <= 1.0 for r in c["reward"])


@pytest.mark.slow
def test_the_demos_planted_waste_and_long_tail_are_in_its_counters(tmp_path: Path) -> None:
    """``constant_reward_groups``: at least that share of groups has one reward for all its
    samples; ``filter_groups`` drops exactly those groups; ``long_tail``: some responses run
    to the length limit and are counted as cut."""
    train(
        demo_cfg(
            tmp_path,
            "profiler_config=mstx_light",
            "demo.workers=0",
            "demo.steps=5",
            "demo.constant_reward_groups=0.5",
            "demo.filter_groups=true",
            "demo.long_tail=0.1",
            "demo.long_tail_length=64",
            "demo.max_response_length=48",
        ),
        Console(quiet=True),
    )
    (counted,) = demo_counts(tmp_path / "out").values()
    planted = total = 0
    for step in (2, 3, 4, 5):
        c = {name: counted[(step, name)] for name in STANDARD}
        rewards, lengths = c["reward"], c["response_length"]
        groups = [rewards[i : i + 4] for i in range(0, 32, 4)]
        flat = sum(max(g) - min(g) <= 1e-6 for g in groups)
        assert c["groups"] == 8 and c["groups_zero_variance"] == flat
        if flat < 8:  # dynamic sampling drops the flat groups (unless that is all of them)
            assert (c["samples_kept"], c["samples_dropped"]) == (4 * (8 - flat), 4 * flat)
        assert set(lengths) <= {4, 48} and c["tokens_generated"] == sum(lengths)
        assert c["responses_truncated"] == lengths.count(48)
        assert 0 < c["tokens_trained"] <= c["tokens_generated"]
        planted += flat
        total += 8
    # the planted half, give or take the draw (unplanted, early groups are all-zero ~1 in 8)
    assert planted >= total * 0.5 - 4
    assert sum(counted[(s, "responses_truncated")] for s in (2, 3, 4, 5)) > 0


@pytest.mark.slow
def test_the_demos_planted_waste_and_tail_are_named_by_the_ledger_with_their_numbers(
    tmp_path: Path,
) -> None:
    """Issue 33's walk: the demo's knobs plant reward-constant groups and a long tail; the
    analysis names both as findings whose numbers are the counters' own, recomputed here."""
    import numpy as np

    from mindspeed_prof.analysis.analyse import analyse
    from mindspeed_prof.analysis.report.report import report

    train(
        demo_cfg(
            tmp_path,
            "profiler_config=mstx_light",
            "demo.workers=0",
            "demo.steps=5",
            "demo.constant_reward_groups=0.5",
            "demo.long_tail=0.03",
        ),
        Console(quiet=True),
    )
    (counted,) = demo_counts(tmp_path / "out").values()
    steps = sorted({step for step, _ in counted})
    flat = sum(counted[(s, "groups_zero_variance")] for s in steps)
    groups = sum(counted[(s, "groups")] for s in steps)
    lengths = np.array([x for s in steps for x in counted[(s, "response_length")]])
    assert flat >= groups * 0.4 and lengths.max() > np.percentile(lengths, 50)

    found = {f.rule: f for f in report(analyse(tmp_path / "out")).findings}
    zero = found["rl.zero_variance"]
    assert zero.title.endswith(f": {flat:,} of {groups:,} groups"), zero.title
    assert zero.detail.startswith(
        f"groups_zero_variance: {flat:,} of {groups:,} groups ({flat / groups:.0%})"
    ), zero.detail
    assert 25 <= int(zero.title.split("%")[0]) <= 100
    assert zero.impact_ms is not None and zero.impact_ms > 0
    tail = found["rl.long_tail"]
    assert tail.title.endswith(
        f"length p50 {np.percentile(lengths, 50):,.0f}, p99 "
        f"{np.percentile(lengths, 99):,.0f}, max {lengths.max():,.0f}"
    ), tail.title


@pytest.mark.slow
def test_live_figures_are_where_the_demo_says(ray_cluster: Any, tmp_path: Path) -> None:
    """``telemetry: [metrics, ray]``: the demo prints the Prometheus endpoint once, and both
    ranks' stage gauges are there while it trains (polled from a thread; Ray's agent exports
    some seconds after a gauge is set)."""
    import re
    import threading
    import time
    import urllib.request

    from mindspeed_prof.demo.cluster import endpoints

    (url,) = endpoints(ray_cluster.nodes())
    seen: set[str] = set()
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            try:
                body = urllib.request.urlopen(url, timeout=5).read().decode()
            except OSError:
                body = ""
            seen.update(re.findall(r'ray_mindspeed_prof_stage_ms\{[^}]*rank="(\d+)"', body))
            done.wait(2.0)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    console = Console(record=True, width=300, file=io.StringIO())
    started = time.monotonic()
    try:
        train(
            demo_cfg(
                tmp_path,
                "profiler_config=none",
                "demo.steps=80",
                "demo.slow_stage=critic_update",
                "demo.slow_ms=250",
                "profiler_config.extensions.telemetry=[metrics,ray]",
            ),
            console,
        )
        while seen != {"0", "1"} and time.monotonic() - started < 120:
            time.sleep(1.0)  # the last export may still be on its way
    finally:
        done.set()
        poller.join(10)
    lines = [x for x in console.export_text().splitlines() if "live figures" in x]
    assert lines == [
        f"live figures: Prometheus at {url} (gauges ray_mindspeed_prof_*, some seconds behind)"
    ]
    assert seen == {"0", "1"}
