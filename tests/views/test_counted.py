"""Throughput and the RL ledger in the views: the text tables at 80 columns, the HTML report's
sections and ``--json``; nothing of them where no counter was recorded."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from counter_fixtures import rl_run
from invariants import check_analysis, check_text, decode
from rich.console import Console

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.cli import main
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.text import print_analysis

WIDTH = 80


def _calls(rank: int, step: int) -> list:
    return [
        *[
            ("tokens_generated" if s == "actor_generate" else "tokens_trained", 12_345 + rank, s)
            for s in STAGES
        ],
        ("samples_kept", 48, None),
        ("samples_dropped", 16, None),
        ("groups", 16, None),
        ("groups_zero_variance", 4, None),
        ("responses_truncated", 3, None),
        ("response_length", [300.0] * 60 + [8192.0] * 4, "actor_generate"),
    ]


@pytest.fixture
def every_stage(tmp_path: Path) -> Path:
    """Every RL stage counts tokens, on 4 ranks (long stage names: the table takes codes)."""
    return rl_run(
        tmp_path / "run",
        ranks=(0, 1, 2, 3),
        calls=_calls,
        stages=STAGES,
        model={"flops_per_token": 1.4e10, "peak_tflops": 989.0},
        stage_ms=lambda rank, step, stage: 1000.0 + 10 * rank,
    )


def _text(root: Path) -> str:
    out = io.StringIO()
    print_analysis(report(analyse(root)), Console(file=out, width=WIDTH, color_system=None))
    return out.getvalue()


def test_text_at_80_columns(every_stage: Path) -> None:
    text = _text(every_stage)
    ours = text[text.index("Throughput per rank") - 20 : text.index("No custom ranges")]
    assert max(len(line) for line in ours.splitlines()) <= WIDTH
    verdict = text[: text.index("Next")]  # what to run next is one line, to be copied
    assert max(len(line) for line in verdict.splitlines()[1:]) <= WIDTH
    assert "Throughput per rank" in text and "RL ledger" in text and "Long tail:" in text
    assert "A.upd = actor_update" in text  # stage codes and their legend
    for header in ("tok/s", "slowest", "fastest", "samples/s", "trend", "MFU", "gen ms"):
        assert header in text
    assert "zero-variance groups" in text and "dropped samples" in text


def test_json_and_text_keep_the_invariants(every_stage: Path, capsys) -> None:
    code = main(["analyse", str(every_stage), "--json"])
    doc = decode(capsys.readouterr().out)
    check_analysis(doc, code)
    assert {s["stage"] for s in doc["throughput"]["stages"]} == set(STAGES)
    assert len(doc["throughput"]["rows"]) == 4 * 3 * len(STAGES)
    assert doc["ledger"]["lines"][1]["line"] == "zero_variance"
    assert main(["analyse", str(every_stage)]) == 0
    check_text(capsys.readouterr().out, doc)


def test_html_sections(every_stage: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.html"
    assert main(["analyse", str(every_stage), "--html", str(out), "--json"]) == 0
    html = out.read_text()
    for section in (
        "Throughput per rank (per second of stage time)",
        "Throughput per stage, rank and step",
        "RL ledger",
        "Long tail:",
    ):
        assert section in html
    assert "FLOPs per token 1.4e+10 (header), peak TFLOPS 989 (header)" in html


def test_html_without_counters_has_no_such_section(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    rl_run(tmp_path / "run", ranks=(0,))
    out = tmp_path / "r.html"
    assert main(["analyse", str(tmp_path / "run"), "--html", str(out), "--json"]) == 0
    html = out.read_text()
    assert "Throughput per" not in html and "RL ledger" not in html


def test_the_verdict_names_the_throughput(every_stage: Path, capsys) -> None:
    assert main(["analyse", str(every_stage), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    gen = doc["verdict"]["throughput"][0]
    assert gen["stage"] == "actor_generate" and gen["slowest_rank"] == 3
    text = " ".join(_text(every_stage).split())
    rate = f"{gen['tokens_per_s']:,.0f}"
    assert f"throughput actor_generate {rate} tok/s per rank (slowest rank 3: " in text
    assert f"MFU {gen['mfu']:.0%}" in text


def test_ledger_seconds_under_one_read_in_milliseconds() -> None:
    """A demo's generation is milliseconds: the ledger's time column switches to ms rather
    than printing 0.00 s; seconds stay seconds."""
    from mindspeed_prof.analysis.ledger import Ledger, LedgerLine
    from mindspeed_prof.views.counted import print_ledger

    def text(seconds: float) -> str:
        line = LedgerLine(
            line="zero_variance",
            counter="c",
            unit="groups",
            means="m",
            count=2,
            of=8,
            share=0.25,
            seconds=seconds,
            generation_s=seconds * 4,
            time_share=0.25,
        )
        book = Ledger(lines=[line], steps=2, generation_s=seconds * 4)
        out = io.StringIO()
        print_ledger(book, Console(file=out, width=WIDTH, color_system=None))
        return out.getvalue()

    small = text(0.0042)
    assert "gen ms" in small and "4.20" in small and "16.80 ms of actor_generate" in small
    big = text(3.5)
    assert "gen s" in big and "3.50" in big and "14.00 s of actor_generate" in big
