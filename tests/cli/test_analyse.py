"""``mindspeed-prof`` subcommands, run as a user runs them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from capture_fixtures import make_run


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


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
    assert [s.split(":")[0] for s in data["skipped"]] == [str(broken)]  # --json: in full
    # stderr names it below the analysed root, as given
    assert proc.stderr.startswith(
        "mindspeed-prof: skipped integrated/rank9_h_1_step1.pt.trace.json: "
    )


@pytest.mark.parametrize("command", ["analyse", "compare"])
def test_missing_path_is_one_line_naming_it(tmp_path: Path, command: str, run_dir: Path) -> None:
    given = "outputs/nope"
    args = [given] if command == "analyse" else [str(run_dir), given]
    proc = subprocess.run(
        [sys.executable, "-m", "mindspeed_prof.cli", command, *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert proc.stderr == f"mindspeed-prof: {given}: no such file or directory\n"
    assert proc.stdout == ""


def test_run_that_captured_nothing_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "profiler_data" / "integrated").mkdir(parents=True)
    proc = cli("analyse", str(tmp_path / "profiler_data"))
    assert proc.returncode == 1 and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"mindspeed-prof: no captures under {tmp_path / 'profiler_data'} (")


def test_closed_pipe_is_not_a_traceback(run_dir: Path) -> None:
    """``mindspeed-prof analyse DIR --json | head``: the reader leaves before the output ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mindspeed_prof.cli", "analyse", str(run_dir), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the command writes anything (it is still importing)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == 6  # the output was cut short, not "nothing to read" (1)
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception" not in err


def test_html_without_matplotlib_names_the_install(run_dir: Path, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None; from mindspeed_prof.cli import main; "
        f"sys.exit(main(['analyse', {str(run_dir)!r}, '--html', 'r.html']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == (
        "mindspeed-prof: --html needs matplotlib, which is not installed: "
        "pip install 'matplotlib>=3.7'\n"
    )
    assert not (tmp_path / "r.html").exists()


def test_help_is_plain_text_and_describes_every_positional() -> None:
    import argparse

    from mindspeed_prof.cli import parser

    top = parser()
    (sub,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    texts = [top.format_help()]
    for name, command in sub.choices.items():
        texts.append(command.format_help())
        for action in command._actions:
            if not action.option_strings:  # a positional
                assert action.help, f"{name} {action.dest}"
    assert not any("``" in t or "`" in t for t in texts)
    assert "the baseline" in sub.choices["compare"].format_help()


def test_compare_has_no_margin_option(run_dir: Path) -> None:
    assert cli("compare", str(run_dir), str(run_dir), "--margin", "0.1").returncode == 2


def test_html_report_is_self_contained_and_escaped(tmp_path: Path, run_dir: Path) -> None:
    shutil.copytree(run_dir, tmp_path / "run")
    hostile = tmp_path / "run" / "integrated" / "rank0_h_2_step1.pt.trace.json"
    ours = next(hostile.parent.glob("*.mstx.trace.json"))
    run = json.loads(ours.read_text())["mindspeed_prof"]["run"]  # a capture of the same run
    hostile.write_text(
        json.dumps(
            {
                "mindspeed_prof": {"run": run},
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "<b>custom</b>",
                        "pid": 1,
                        "tid": 1,
                        "ts": 0,
                        "dur": 10_000_000,
                    }
                ],
            }
        )
    )  # an op name the top-ops table shows
    report = tmp_path / "r.html"
    assert cli("analyse", str(tmp_path / "run"), "--html", str(report)).returncode == 0
    text = report.read_text()
    assert "<td>&lt;b&gt;custom&lt;/<wbr>b&gt;</td>" in text  # shown, escaped (breakable at /)
    assert text.count("<svg") == 4  # heat map, timeline, top ops, Gantt
    for fetch in (
        'src="http',
        "src='http",
        'href="http',
        "href='http",
        "<link",
        "@import",
        "<script",
    ):
        assert fetch not in text  # nothing to load over the network, nothing to run
    assert "<b>custom</b>" not in text


def test_compare_flags_regression(tmp_path: Path) -> None:
    """Six steps a side: enough for the gate's rank test over every row it asks about."""
    a = make_run(tmp_path / "a", ranks=(0,), steps=6)
    b = make_run(tmp_path / "b", ranks=(0,), steps=6, slow={(0, "critic_update"): 2})
    proc = cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 0
    rows = {r["stage"]: r for r in json.loads(proc.stdout)["rows"]}
    assert rows["critic_update"]["regression"] and rows["critic_update"]["change"] > 1
    table = cli("compare", str(a), str(b)).stdout
    assert "slower" in table and f"A (baseline): {a}" in table


def test_presets_command() -> None:
    out = json.loads(cli("presets", "--json").stdout)
    assert out["mstx_light"]["profile_level"] == "level_none" and out["none"]["profile"] is False
    assert set(out) == {"none", "mstx_light", "stage_scoped", "memory_debug", "full", "dpo"}


def test_sweep_command_from_files(tmp_path: Path) -> None:
    for job, stage in enumerate(("actor_generate", "critic_update")):
        root = make_run(tmp_path / str(job) / "profiler_data", ranks=(0,), steps=1, stage=stage)
        (root / "manifest.json").write_text(
            json.dumps(
                {
                    "status": "completed",
                    "profiler_config": {"integrated": {"stage": stage}},
                    "captures": [{}],
                    "files": [],
                    "job": {"overrides": [f"stage={stage}"]},
                }
            )
        )
    proc = cli("sweep", str(tmp_path), "--json")
    rows = json.loads(proc.stdout)
    assert [r["stage"] for r in rows] == ["actor_generate", "critic_update"]
    assert all(r["ms_per_stage"] > 0 for r in rows)
    assert (tmp_path / "sweep_summary.json").is_file()
