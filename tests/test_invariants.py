"""Issue 30, section 3: the invariants of ``invariants.py`` on every corpus set, through every
command (``analyse`` text, ``--json`` and ``--html``, ``timeline``, ``doctor``, ``compare`` of
a set against itself), run through the CLI's entry point in this process.

Each (set, check) pair is one test, so a red one names both. A pair that fails on main for a
reason another branch owns, or that nobody owns yet, is in ``KNOWN`` with the owner and the
exact symptom: a strict xfail, red again as soon as it passes. The variants of section 4
are in ``test_invariants_variants.py``.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS, SETS
from invariants import (
    check_compare_self,
    check_doctor,
    check_text,
    check_timeline,
    counted_once,
    counted_rows,
    decode,
    device_sums,
    exit_code,
    findings_agree,
    finite,
    printed_finite,
    shares,
    verdict_reads_rows,
)
from invariants_run import cli, known, original

READ = [n for n, s in SETS.items() if "pending" not in s]
#: Sets whose files take at most this many bytes packed: the expensive commands (the HTML
#: report, every variant that rewrites a trace) run on these.
SMALL_BYTES = 400_000


def packed_bytes(name: str) -> int:
    return sum(p.stat().st_size for p in (CORPUS / SETS[name]["path"]).rglob("*") if p.is_file())


SMALL = [n for n in READ if packed_bytes(n) <= SMALL_BYTES]

#: What fails on main today, and why (a strict xfail each).
KNOWN: dict[tuple[str, str], tuple[str, str]] = {}


# -- every set unpacked, every command run once per session --------------------------------------


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Where ``invariants.original`` unpacks the sets (each on first use)."""
    return original(READ[0])[0].parent


@dataclass
class Commands:
    """Every command's answer on one folder."""

    json: Any
    text: Any
    doctor: Any
    compare: Any
    timeline: Any
    trace: dict[str, Any] | None


@pytest.fixture(scope="session")
def commands(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``commands(name)``: every command on that set, run once (memoised)."""
    out_dir = tmp_path_factory.mktemp("timelines")

    @functools.cache
    def run(name: str) -> Commands:
        here, json = original(name)
        root = str(here)
        merged = out_dir / f"{name}.json"
        timeline = cli("timeline", root, "-o", str(merged), "--jobs", "1")
        return Commands(
            json=json,
            text=cli("analyse", root, "--jobs", "1"),
            doctor=cli("doctor", root, "--json"),
            compare=cli("compare", root, root, "--json"),
            timeline=timeline,
            trace=decode(merged.read_text()) if merged.exists() else None,
        )

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", "80")
        yield run


CHECKS = {
    "finite": lambda c: finite(c.json.doc),
    "exit_code": lambda c: exit_code(c.json.code, c.json.doc),
    "shares": lambda c: shares(c.json.doc),
    "device_sums": lambda c: device_sums(c.json.doc),
    "counted_once": lambda c: counted_once(c.json.doc),
    "verdict_reads_rows": lambda c: verdict_reads_rows(c.json.doc),
    "findings_agree": lambda c: findings_agree(c.json.doc),
    "counted_rows": lambda c: counted_rows(c.json.doc),
    "text": lambda c: check_text(c.text.out, c.json.doc),
    "doctor": lambda c: check_doctor(decode(c.doctor.out), c.doctor.code, c.json.doc),
    "compare_self": lambda c: check_compare_self(decode(c.compare.out), c.compare.code, c.json.doc),
    "timeline": lambda c: check_timeline(c.trace or {}, c.timeline.code, c.json.doc),
}
CASES = [pytest.param(n, k, id=f"{n}-{k}", marks=known(KNOWN, n, k)) for n in READ for k in CHECKS]


@pytest.mark.parametrize(("name", "check"), CASES)
def test_invariant(name: str, check: str, commands: Any) -> None:
    c = commands(name)
    assert c.json.doc is not None, f"{name}: nothing read (exit {c.json.code}): {c.json.err}"
    assert c.text.code == c.json.code and c.text.err == c.json.err
    CHECKS[check](c)


@pytest.mark.parametrize("name", SMALL)
def test_html_report(name: str, commands: Any, corpus: Path, tmp_path: Path) -> None:
    """``--html`` on the small sets: the exit code of ``--json``, and no NaN or infinity in
    the page (a figure divided by a zero duration)."""
    c = commands(name)
    page = tmp_path / "report.html"
    run = cli("analyse", str(corpus / name), "--html", str(page), "--jobs", "1")
    assert run.code == c.json.code
    printed_finite(re.sub(r"<[^>]*>", " ", page.read_text(encoding="utf-8")))


def test_cli_as_a_program(corpus: Path, commands: Any) -> None:
    """``python -m mindspeed_prof.cli`` answers as its entry point does in this process (the
    in-process runs above stand for the program): on the smallest set of each kind."""
    for name in ("kineto_trace_compare", "npu_db_level0", "kineto_cpu_only_gloo"):
        c = commands(name)  # first: it unpacks the set (whichever test of it ran before)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mindspeed_prof.cli",
                "analyse",
                str(corpus / name),
                "--json",
                "--jobs",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "80"},
        )
        assert (proc.returncode, decode(proc.stdout)) == (c.json.code, c.json.doc)


def test_an_empty_folder_reads_nothing(tmp_path: Path) -> None:
    """Exit 1, one line, no JSON: nothing to read is not an answer."""
    for argv in (
        ("analyse", str(tmp_path), "--json"),
        ("timeline", str(tmp_path), "-o", str(tmp_path / "t.json")),
    ):
        run = cli(*argv)
        assert (run.code, run.out) == (1, "") and len(run.err.splitlines()) == 1, argv
    exit_code(1, None)
