"""Running the commands for the invariant tests: the CLI's entry point in this process, and
every corpus set unpacked and analysed once per process (shared by the test modules)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invariants import decode

__all__ = ["Answer", "Run", "answer", "cli", "known", "original"]


@dataclass
class Run:
    code: int
    out: str
    err: str


def cli(*argv: str) -> Run:
    """``mindspeed-prof ARGV`` through its entry point, in this process (the commands' own
    argument parsing, output and exit code; an exception in it fails the test)."""
    from mindspeed_prof.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return Run(code, out.getvalue(), err.getvalue())


@dataclass
class Answer:
    """``analyse PATH --json`` (``doc`` None when nothing was read) and its exit code."""

    code: int
    doc: dict[str, Any] | None
    err: str


def answer(path: Path) -> Answer:
    run = cli("analyse", str(path), "--json", "--jobs", "1")
    doc = decode(run.out) if run.out.strip() else None
    return Answer(run.code, doc, run.err)


@functools.cache
def _copies() -> Path:
    root = Path(tempfile.mkdtemp(prefix="invariants-"))
    atexit.register(shutil.rmtree, root, True)
    return root


@functools.cache
def original(name: str) -> tuple[Path, Answer]:
    """Corpus set ``name`` unpacked (once per process, shared by the test modules) and its
    ``analyse --json``. The analysis writes its cache files beside the captures: variants
    are made from ``corpus.unpack`` copies, never from this one."""
    from corpus import unpack

    root = unpack(name, _copies() / name)
    return root, answer(root)


def known(table: dict[tuple[str, str], tuple[str, str]], name: str, key: str) -> list[Any]:
    """A strict xfail naming the owner and the symptom where ``table`` lists (name, key)."""
    import pytest

    if (name, key) not in table:
        return []
    owner, symptom = table[(name, key)]
    return [pytest.mark.xfail(strict=True, reason=f"owner: {owner}; {symptom}")]
