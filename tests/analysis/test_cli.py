"""``mindspeed-prof`` subcommands, run as a user runs them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from capture_fixtures import make_run


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mindspeed_prof.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_analyse_tables_and_json(run_dir: Path) -> None:
    proc = cli("analyse", str(run_dir))
    assert proc.returncode == 0, proc.stderr
    assert "actor_update" in proc.stdout and "rank 1" in proc.stdout
    assert "Stragglers" in proc.stdout
    data = json.loads(cli("analyse", str(run_dir), "--json").stdout)
    assert data["ranks"] == [0, 1] and data["skipped"] == []


def test_one_broken_file_among_good_ones(tmp_path: Path, run_dir: Path) -> None:
    shutil.copytree(run_dir, tmp_path / "run")
    broken = tmp_path / "run" / "integrated" / "rank9_h_1_step1.pt.trace.json"
    broken.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "du')
    proc = cli("analyse", str(tmp_path / "run"), "--json")
    assert proc.returncode == 3
    data = json.loads(proc.stdout)
    assert data["ranks"] == [0, 1] and len(data["stage_rank"]) == 12
    assert [s.split(":")[0] for s in data["skipped"]] == [str(broken)]
    assert str(broken) in proc.stderr


def test_missing_path_exit_1() -> None:
    proc = cli("analyse", "/nonexistent/path")
    assert proc.returncode == 1 and "no such file" in proc.stdout + proc.stderr


def test_html_report_is_self_contained_and_escaped(tmp_path: Path, run_dir: Path) -> None:
    shutil.copytree(run_dir, tmp_path / "run")
    hostile = tmp_path / "run" / "integrated" / "rank0_h_2_step1.pt.trace.json"
    hostile.write_text(json.dumps({"traceEvents": [  # an op name the top-ops table shows
        {"ph": "X", "cat": "cpu_op", "name": "<b>custom</b>", "pid": 1, "tid": 1, "ts": 0,
         "dur": 10_000_000}]}))
    report = tmp_path / "r.html"
    assert cli("analyse", str(tmp_path / "run"), "--html", str(report)).returncode == 0
    text = report.read_text()
    assert "<td>&lt;b&gt;custom&lt;/b&gt;</td>" in text  # shown, escaped
    assert text.count("<svg") == 3  # heat map, timeline, top ops
    for fetch in ('src="http', "src='http", 'href="http', "href='http", "<link", "@import",
                  "<script"):
        assert fetch not in text  # nothing to load over the network, nothing to run
    assert "<b>custom</b>" not in text


def test_compare_flags_regression(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", ranks=(0,), steps=2)
    b = make_run(tmp_path / "b", ranks=(0,), steps=2, slow={(0, "critic_update"): 2})
    proc = cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 0
    rows = {r["stage"]: r for r in json.loads(proc.stdout)["rows"]}
    assert rows["critic_update"]["regression"] and rows["critic_update"]["change"] > 1
    table = cli("compare", str(a), str(b)).stdout
    assert "regression" in table


def test_presets_command() -> None:
    out = json.loads(cli("presets", "--json").stdout)
    assert out["mstx_light"]["profile_level"] == "level_none" and out["none"]["profile"] is False
    assert set(out) == {"none", "mstx_light", "stage_scoped", "memory_debug", "full", "dpo"}


def test_sweep_command_from_files(tmp_path: Path) -> None:
    for job, stage in enumerate(("actor_generate", "critic_update")):
        root = make_run(tmp_path / str(job) / "profiler_data", ranks=(0,), steps=1, stage=stage)
        (root / "manifest.json").write_text(json.dumps({
            "status": "completed", "profiler_config": {"integrated": {"stage": stage}},
            "captures": [{}], "files": [], "job": {"overrides": [f"stage={stage}"]}}))
    proc = cli("sweep", str(tmp_path), "--json")
    rows = json.loads(proc.stdout)
    assert [r["stage"] for r in rows] == ["actor_generate", "critic_update"]
    assert all(r["ms_per_stage"] > 0 for r in rows)
    assert (tmp_path / "sweep_summary.json").is_file()
