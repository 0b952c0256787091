"""The report: every ``Captures`` table computed once per ``analyse``, whatever the output;
settings reach the analysis through ``Settings`` alone; ``--json`` is ``Report.json``."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from counter_fixtures import Call, rl_run

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.summary import write_run_summary
from mindspeed_prof.cli import main

#: Not tables: a line of text made relative to the root (one call per line shown).
HELPERS = {"shown"}


def _key(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """A call's method and the arguments that choose what it computes (``stragglers("range")``,
    ``top_ops(25)``); a list argument (``device(traces)``) by its length."""
    shown = [repr(a) if isinstance(a, (str, int, float)) or a is None else f"<{len(a)}>"
             for a in (*args, *kwargs.values())]
    return f"{name}({', '.join(shown)})"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every call of an ``Captures`` method or property, counted by method and arguments."""
    seen: Counter[str] = Counter()

    def counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen[_key(name, args, kwargs)] += 1
            return fn(self, *args, **kwargs)
        return wrapper

    for name, attr in list(vars(Captures).items()):
        if name.startswith("__") or name in HELPERS:
            continue
        if isinstance(attr, property) and attr.fget is not None:
            monkeypatch.setattr(Captures, name, property(counted(name, attr.fget)))
        elif callable(attr):
            monkeypatch.setattr(Captures, name, counted(name, attr))
    yield seen


def _calls(rank: int, step: int) -> list[Call]:
    return [("tokens_generated", 4096, "actor_generate"), ("tokens_trained", 4096,
            "actor_update"), ("samples_kept", 6, "actor_update"),
            ("samples_dropped", 2, "actor_update")]


@pytest.fixture
def counted_run(tmp_path: Path) -> Path:
    """Two ranks, three steps, rank 1 slow in actor_update, counters recorded (the ledger)."""
    return rl_run(tmp_path / "run", calls=_calls,
                  stage_ms=lambda rank, step, stage: 200.0 if (rank, stage) == (
                      1, "actor_update") else 100.0)


@pytest.mark.parametrize("how", [[], ["--json"], ["--html", "REPORT"]],
                         ids=["text", "json", "html"])
def test_every_table_is_computed_once_per_analyse(how: list[str], calls: Counter[str],
                                                  counted_run: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(tmp_path / "r.html") if a == "REPORT" else a for a in how]
    assert main(["analyse", str(counted_run), *args]) == 0
    if how == ["--json"]:
        assert '"ledger": {' in capsys.readouterr().out
    # the tables the views show were computed (the counters see them) ...
    for table in ("ranges", "counted()", "stage_rank()", "per_step()", "stragglers('stage')",
                  "stragglers('range')", "device()", "throughput_stages()", "ledger()",
                  "warnings()", "memory()"):
        assert any(k.startswith(table) for k in calls), (table, calls)
    # ... and none twice
    assert {k: n for k, n in calls.items() if n > 1} == {}


def test_a_second_call_counts_again(calls: Counter[str], run_dir: Path) -> None:
    """The counter sees repeated work: two reports of one analysis compute twice."""
    result = analyse(run_dir)
    calls.clear()
    report(result)
    report(result)
    assert calls["counted()"] == 2 and calls["stage_rank()"] == 2


def test_settings_apply_to_a_copy_and_reach_every_table(run_dir: Path) -> None:
    result = analyse(run_dir)
    loose = report(result, Settings(margin=20.0))  # rank 1 is 16 times the others, not 21
    tight = report(result)
    assert result.margin == 0.2 and loose.result.margin == 20.0
    assert tight.tables.stragglers and not loose.tables.stragglers
    assert loose.json()["margin"] == 20.0 and loose.json()["stragglers"] == []
    assert loose.verdict.straggler is None and tight.verdict.straggler is not None


def test_json_is_every_table_once_the_verdict_first(run_dir: Path) -> None:
    rep = report(analyse(run_dir))
    doc: dict[str, Any] = rep.json()  # read as JSON
    assert list(doc)[:2] == ["verdict", "findings"]
    assert len(doc["top_ops"]) <= 15 and len(rep.tables.top_ops) >= len(doc["top_ops"])
    assert doc["stragglers"] == [s.json() for s in rep.tables.stragglers]


def test_a_job_summary_is_the_json_less_verdict_findings_and_rule_notes(run_dir: Path) -> None:
    """A job's ``analysis.json`` (``tables_json``) and ``--json`` keep one layout: the same
    keys in the same order and values, ``--json`` adding the verdict, findings and rule notes."""
    result = analyse(run_dir)
    written = write_run_summary(run_dir)
    assert written is not None
    doc, own = json.loads(json.dumps(report(result).json())), json.loads(written.read_text())
    assert [k for k in doc if k not in ("verdict", "findings")] == list(own)
    assert {k: v for k, v in doc.items() if k not in ("verdict", "findings", "notes")} == {
        k: v for k, v in own.items() if k != "notes"}
    assert doc["notes"][:len(own["notes"])] == own["notes"]
