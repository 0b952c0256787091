"""The report: every table computed once per ``analyse``, whatever the output; settings reach
the analysis through ``Settings`` alone (the CLI's defaults among them); ``--json`` is
``Report.json``, written from the declaration of ``Tables``."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest
from counter_fixtures import Call, rl_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.judgement import judge
from mindspeed_prof.analysis.report import compute
from mindspeed_prof.analysis.report import report as report_module
from mindspeed_prof.analysis.report import tables as tables_module
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.report.tables import HIDDEN, TOP, Tables
from mindspeed_prof.analysis.summary import write_run_summary
from mindspeed_prof.cli import main, parser


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every call of ``tables`` (by ``report``) and of the functions that read the captures'
    ranges and judge them (``merged_ranges``, ``find_stragglers``, ``judge.rank_lags``)."""
    seen: Counter[str] = Counter()

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    for module, name in (
        (report_module, "tables"),
        (compute, "merged_ranges"),
        (tables_module, "find_stragglers"),
        (judge, "rank_lags"),
    ):
        monkeypatch.setattr(module, name, counted(name, getattr(module, name)))
    yield seen


def _calls(rank: int, step: int) -> list[Call]:
    return [
        ("tokens_generated", 4096, "actor_generate"),
        ("tokens_trained", 4096, "actor_update"),
        ("samples_kept", 6, "actor_update"),
        ("samples_dropped", 2, "actor_update"),
    ]


@pytest.fixture
def counted_run(tmp_path: Path) -> Path:
    """Two ranks, three steps, rank 1 slow in actor_update, counters recorded (the ledger)."""
    return rl_run(
        tmp_path / "run",
        calls=_calls,
        stage_ms=lambda rank, step, stage: 200.0 if (rank, stage) == (1, "actor_update") else 100.0,
    )


@pytest.mark.parametrize(
    "how", [[], ["--json"], ["--html", "REPORT"]], ids=["text", "json", "html"]
)
def test_every_table_is_computed_once_per_analyse(
    how: list[str],
    calls: Counter[str],
    counted_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Whatever the output, ``analyse`` computes the tables once: the views, the verdict and
    the findings read them, never a second copy."""
    args = [str(tmp_path / "r.html") if a == "REPORT" else a for a in how]
    assert main(["analyse", str(counted_run), *args]) == 0
    if how == ["--json"]:
        assert '"ledger": {' in capsys.readouterr().out
    assert calls == {"tables": 1, "merged_ranges": 1, "find_stragglers": 2, "rank_lags": 1}


def test_a_second_call_counts_again(calls: Counter[str], run_dir: Path) -> None:
    """The counter sees repeated work: two reports of one analysis compute twice."""
    result = analyse(run_dir)
    calls.clear()
    report(result)
    report(result)
    assert calls["tables"] == 2 and calls["merged_ranges"] == 2


def test_settings_reach_every_table(run_dir: Path) -> None:
    result = analyse(run_dir)
    loose = report(result, Settings(margin=20.0))  # rank 1 is 16 times the others, not 21
    tight = report(result)
    assert tight.settings == Settings() and loose.settings.margin == 20.0
    assert tight.tables.stragglers and not loose.tables.stragglers
    assert loose.json()["margin"] == 20.0 and loose.json()["stragglers"] == []
    assert loose.verdict.straggler is None and tight.verdict.straggler is not None


def test_the_cli_defaults_are_the_settings() -> None:
    """``analyse`` and ``compare`` with no option: the defaults ``Settings`` declares."""
    default = Settings()
    a = parser().parse_args(["analyse", "x"])
    c = parser().parse_args(["compare", "a", "b"])
    assert (a.margin, a.noise_ms, a.top, a.flops_per_token, a.peak_tflops) == (
        default.margin,
        default.noise_ms,
        default.top,
        default.flops_per_token,
        default.peak_tflops,
    )
    assert (c.noise_ms, c.include_warmup) == (default.noise_ms, default.include_warmup)


def test_json_is_every_table_once_the_verdict_first(run_dir: Path) -> None:
    rep = report(analyse(run_dir))
    doc: dict[str, Any] = rep.json()  # read as JSON
    assert list(doc)[:2] == ["verdict", "findings"]
    assert len(doc["top_ops"]) <= 15 and len(rep.tables.top_ops) >= len(doc["top_ops"])
    assert doc["stragglers"] == [s.json() for s in rep.tables.stragglers]


def test_json_is_written_from_the_declaration(run_dir: Path) -> None:
    """``--json``'s keys after the verdict and the findings are the fields of ``Tables`` in
    their order, under their JSON name, but those ``HIDDEN``; each top list cut to ``TOP``."""
    rep = report(analyse(run_dir), Settings(top=40))
    doc: dict[str, Any] = rep.json()
    shown = [f for f in msgspec.structs.fields(Tables) if HIDDEN not in get_args(f.type)]
    assert list(doc)[2:] == [f.encode_name for f in shown]
    assert "range_table" not in doc and doc["ranges"] == [r.json() for r in rep.tables.range_table]
    assert TOP.most is not None
    for top in ("top_ops", "top_kernels", "top_runtime"):
        assert doc[top] == [r.json() for r in getattr(rep.tables, top)[: TOP.most]]
    assert doc["throughput"] == {
        "model": rep.tables.throughput.model.json(),
        "rows": [r.json() for r in rep.tables.throughput.rows],
        "stages": [r.json() for r in rep.tables.throughput.stages],
    }


def test_a_job_summary_is_the_json_less_verdict_findings_and_rule_notes(run_dir: Path) -> None:
    """A job's ``analysis.json`` (``tables_json``) and ``--json`` keep one layout: the same
    keys in the same order and values, ``--json`` adding the verdict, findings and rule notes."""
    result = analyse(run_dir)
    written = write_run_summary(run_dir)
    assert written is not None
    doc, own = json.loads(json.dumps(report(result).json())), json.loads(written.read_text())
    assert [k for k in doc if k not in ("verdict", "findings")] == list(own)
    assert {k: v for k, v in doc.items() if k not in ("verdict", "findings", "notes")} == {
        k: v for k, v in own.items() if k != "notes"
    }
    assert doc["notes"][: len(own["notes"])] == own["notes"]
