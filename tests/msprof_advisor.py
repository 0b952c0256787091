"""msprof-analyze's advisor (Ascend's analysis tool, PyPI ``msprof-analyze``) as a test-only
reference: run on a copy of a torch_npu capture, its ``.xlsx`` parsed with the standard library.

``msprof-analyze advisor all -d COPY -o OUT -l en`` writes into its input, exits 0 even when it
logged errors and wrote nothing, and names its outputs with timestamps: ``advise`` always runs
it on a copy and returns what it wrote (``Advice.xlsx`` None when nothing, with the ERROR lines
it logged in ``Advice.errors``). Where to find the tool: ``$MSPROF_ANALYZE`` (a console script,
e.g. another venv's), else ``msprof-analyze`` on PATH.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

__all__ = ["Advice", "advise", "category", "executable", "from_json", "read_xlsx", "to_json"]


def executable() -> str | None:
    exe = os.environ.get("MSPROF_ANALYZE")
    if exe:
        return exe if Path(exe).is_file() else None
    return shutil.which("msprof-analyze")


@dataclass
class Advice:
    """``problems``: category -> the problems sheet's row; ``sheets``: every sheet as rows of
    {header: cell}; ``errors``: the ERROR lines it logged."""

    problems: dict[str, dict[str, Any]] = field(default_factory=dict)
    sheets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    xlsx: Path | None = None
    stdout: str = ""


def category(name: str) -> str:
    """``RANK 0 operator dynamic shape issues`` -> ``operator dynamic shape issues``."""
    return re.sub(r"^rank \d+ ", "", name.strip().lower())


def advise(src: Path, work: Path, timeout: float = 600.0) -> Advice:
    """``advisor all`` on a copy of ``src`` (a folder of ``*_ascend_pt`` folders) in ``work``."""
    exe = executable()
    if exe is None:
        raise RuntimeError("msprof-analyze not found")
    data = work / "in" / src.name
    shutil.copytree(src, data)
    out = work / "out"
    out.mkdir(parents=True)
    env = dict(os.environ, MSPROF_ANALYZE_LOG_FILE=str(work / "msprof.log"), TQDM_DISABLE="1")
    env.pop("AGENT_MODE", None)
    proc = subprocess.run(
        [exe, "advisor", "all", "-d", str(data), "-o", str(out), "-l", "en", "--force"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    advice = Advice(
        errors=[ln for ln in (proc.stderr + proc.stdout).splitlines() if "[ERROR]" in ln],
        stdout=proc.stdout,
    )
    books = sorted((out / "log").glob("mstt_advisor_*.xlsx"))
    if books:
        advice.xlsx = books[-1]
        for name, rows in read_xlsx(books[-1]).items():
            head = [h or f"col{i}" for i, h in enumerate(rows[0])] if rows else []
            advice.sheets[name] = [
                dict(zip(head, r + [None] * (len(head) - len(r)))) for r in rows[1:]
            ]
        advice.problems = {str(r["category"]): r for r in advice.sheets.get("problems", [])}
    return advice


def to_json(advice: Advice, work: Path) -> dict[str, Any]:
    """What the tests read of an :class:`Advice` as JSON (``work``'s path out of its errors)."""
    return {
        "xlsx": advice.xlsx.name if advice.xlsx else None,
        "problems": advice.problems,
        "sheets": advice.sheets,
        "errors": [line.replace(str(work), "WORK") for line in advice.errors],
    }


def from_json(doc: dict[str, Any]) -> Advice:
    """The :class:`Advice` of :func:`to_json`'s figures (``xlsx`` by its name alone)."""
    return Advice(
        problems=doc["problems"],
        sheets=doc["sheets"],
        errors=doc["errors"],
        xlsx=Path(doc["xlsx"]) if doc["xlsx"] else None,
    )


_NS = {
    "m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
}


def _col(ref: str) -> int:
    n = 0
    for ch in re.match(r"[A-Z]+", ref).group(0):  # type: ignore[union-attr]
        n = n * 26 + ord(ch) - 64
    return n - 1


def read_xlsx(path: Path) -> dict[str, list[list[str | None]]]:
    """Every sheet of an .xlsx (xlsxwriter's output) as rows of cell texts."""
    z = zipfile.ZipFile(path)
    shared: list[str] = []
    if "xl/sharedStrings.xml" in z.namelist():
        for si in ET.fromstring(z.read("xl/sharedStrings.xml")).findall("m:si", _NS):
            shared.append("".join(t.text or "" for t in si.iter(f"{{{_NS['m']}}}t")))
    book = ET.fromstring(z.read("xl/workbook.xml"))
    rels = {
        r.get("Id"): r.get("Target") for r in ET.fromstring(z.read("xl/_rels/workbook.xml.rels"))
    }
    out: dict[str, list[list[str | None]]] = {}
    for sheet in book.find("m:sheets", _NS) or ():
        target = str(rels[sheet.get(f"{{{_NS['r']}}}id")]).lstrip("/")
        target = target if target.startswith("xl/") else "xl/" + target
        rows: list[list[str | None]] = []
        for row in ET.fromstring(z.read(target)).iter(f"{{{_NS['m']}}}row"):
            cells: dict[int, str | None] = {}
            for c in row.findall("m:c", _NS):
                v = c.find("m:v", _NS)
                if c.get("t") == "s" and v is not None:
                    value: str | None = shared[int(v.text or 0)]
                elif c.get("t") == "inlineStr":
                    value = "".join(x.text or "" for x in c.iter(f"{{{_NS['m']}}}t"))
                else:
                    value = v.text if v is not None else None
                cells[_col(c.get("r", "A"))] = value
            rows.append([cells.get(i) for i in range(max(cells) + 1)] if cells else [])
        out[str(sheet.get("name"))] = rows
    return out
