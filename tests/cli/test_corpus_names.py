"""A kernel is named the same in a torch_npu text export and a db export of the same run.

The corpus holds the same program exported as text and as db at each level (two runs each, so
op instance numbers differ: ``hcom_allReduce__868_0_1`` in one, ``__576_0_1`` in the other).
Level0 writes no op type, so there the names come from the tasks; level1 and up name the type.
Checked through ``mindspeed-prof analyse --json`` against the exports' raw rows.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from corpus import unpack

from mindspeed_prof.cli import main

OUT = "ASCEND_PROFILER_OUTPUT"
#: What an op instance's name ends with: the type's own underscore, then its numbers.
INSTANCE = re.compile(r"__\d+(?:_\d+)*$")


def analyse(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["analyse", str(root), "--json", "--jobs", "1"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def raw_hccl_text(root: Path) -> int:
    """HCCL tasks in every rank's kernel_details.csv."""
    n = 0
    for path in root.glob(f"*/{OUT}/kernel_details.csv"):
        with open(path, newline="") as fh:
            n += sum(r["Name"].startswith("hcom_") for r in csv.DictReader(fh))
    return n


def raw_hccl_db(root: Path) -> int:
    """COMMUNICATION_OP rows in every rank's profiler db."""
    n = 0
    for path in root.glob(f"*/{OUT}/ascend_pytorch_profiler_*.db"):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            n += con.execute("SELECT COUNT(*) FROM COMMUNICATION_OP").fetchone()[0]
    return n


@pytest.mark.parametrize("level", [0, 1, 2])
def test_text_and_db_exports_name_kernels_alike(
    level: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text_root = unpack(f"npu_text_level{level}", tmp_path / "text")
    db_root = unpack(f"npu_db_level{level}", tmp_path / "db")
    text, db = analyse(text_root, capsys), analyse(db_root, capsys)
    tk = {k["name"]: k["count"] for k in text["top_kernels"]}
    dk = {k["name"]: k["count"] for k in db["top_kernels"]}
    # no op instance listed apart: one row per HCCL op type, every instance of the raw rows in it
    assert not [n for n in (*tk, *dk) if INSTANCE.search(n)]
    assert (
        {n for n in tk if n.startswith("hcom_")}
        == {n for n in dk if n.startswith("hcom_")}
        == {"hcom_allReduce_"}
    )
    assert tk["hcom_allReduce_"] == raw_hccl_text(text_root) == 8
    assert dk["hcom_allReduce_"] == raw_hccl_db(db_root) == 8
    # the other kernels: under the same names, as many times each (the top 15 by time; the last
    # places can change hands between the two runs, whose times differ by a few microseconds)
    shared = set(tk) & set(dk)
    assert len(shared) >= len(tk) - 2
    assert {n: tk[n] for n in shared} == {n: dk[n] for n in shared}
    # communication rows carry the kernel's name (level0: from trace_view's HCCL lane and
    # COMMUNICATION_OP; level1 and up: communication.json and analysis.db), one per rank
    for doc in (text, db):
        assert sorted((r["rank"], r["name"]) for r in doc["comm"] if r["kind"] != "link") == [
            (0, "hcom_allReduce_"),
            (1, "hcom_allReduce_"),
        ]
