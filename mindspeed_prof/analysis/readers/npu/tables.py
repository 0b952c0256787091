"""torch_npu's CSV files by column name: a missing column or a cut-short file is one line."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["NAMED_ROWS", "Table", "number", "step_number"]

_DIGITS = re.compile(r"(\d+)")
#: A line as a file opened with ``newline=""`` gives it: up to ``\r\n``, ``\r`` or ``\n``, kept.
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")


def number(cell: str | None) -> float | None:
    """A CSV cell as a float: torch_npu pads timestamps with a tab; empty and N/A are None."""
    if cell is None:
        return None
    text = cell.strip()
    if not text or text.upper() == "N/A":
        return None
    try:
        out = float(text)
    except ValueError:
        return None
    return out if math.isfinite(out) else None


def step_number(cell: object) -> int | None:
    """``50``, ``step50`` or ``50.0`` as 50; empty (a capture without steps) as None."""
    m = _DIGITS.search(str(cell)) if cell is not None else None
    return int(m.group(1)) if m else None


class Table:
    """One CSV file's rows, each as ``{column: cell}``, with the columns a reader requires.

    ``Table.open(path, required, problems)`` returns None (and adds one line to ``problems``)
    when the file lacks a required column or cannot be read. Rows with fewer cells than the
    header (a file cut short, a row edited by hand) are dropped, their cells cannot be matched
    to columns; one line names the file and those rows, every other row is kept.

    The file is read whole at ``open``; ``rows`` parses it a row at a time, once (a row's dict
    holds every cell of a wide file: all of them at once took ten times the file's size). The
    line about dropped rows goes into ``problems`` where ``open`` would have put it, before any
    line the reader adds while it takes the rows.
    """

    def __init__(self, path: Path, header: list[str], rows: Iterator[dict[str, str]]) -> None:
        self.path, self.header, self.rows = path, header, rows

    @classmethod
    def open(
        cls,
        path: Path,
        required: tuple[str, ...],
        problems: list[str],
        aliases: dict[str, str] | None = None,
    ) -> Table | None:
        """``aliases``: other names of columns (``{"Op Name": "Name"}``), used under the
        reader's name when the file lacks that one."""
        try:
            with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
                text = f.read()
            reader = csv.reader(m.group() for m in _LINE.finditer(text))
            header = [h.strip() for h in next(reader, [])]
        except (OSError, csv.Error) as err:
            problems.append(f"{path}: unreadable ({type(err).__name__}: {err}); file skipped")
            return None
        if aliases:
            header = [aliases[h] if aliases.get(h, h) not in header else h for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            problems.append(
                f"{path}: no column {missing[0]!r} (has: "
                f"{', '.join(header[:8]) or 'no header'}); file skipped"
            )
            return None
        return cls(path, header, _rows(reader, header, path, problems, len(problems)))

    def has(self, column: str) -> bool:
        return column in self.header


#: Short rows named one by one in the problem line; past this many, only their count.
NAMED_ROWS = 3


def _rows(
    reader: Iterator[list[str]], header: list[str], path: Path, problems: list[str], at: int
) -> Iterator[dict[str, str]]:
    """The rows; their problems inserted at ``at`` (in the order they were found)."""
    width = len(header)
    short: list[tuple[int, int]] = []  # (line, cells) of rows with fewer cells than the header
    last = 0
    found: list[str] = []
    try:
        for line in reader:
            if not line:
                continue
            last = getattr(reader, "line_num", 0)
            if len(line) < width:
                short.append((last, len(line)))
                continue
            yield dict(zip(header, line))
    except csv.Error as err:
        found.append(f"{path}: {err}; rows after it skipped")
    if short:
        found.append(f"{path}: {_short_rows(short, width, last)}")
    problems[at:at] = found


def _short_rows(short: list[tuple[int, int]], width: int, last: int) -> str:
    """``line 17 has 31 of 32 columns; row skipped``, or a few lines named and the rest counted."""
    if len(short) == 1:
        ((line, cells),) = short
        cut = " (cut short?)" if line == last else ""
        return f"line {line} has {cells} of {width} columns{cut}; row skipped"
    named = ", ".join(str(line) for line, _ in short[:NAMED_ROWS])
    more = f" and {len(short) - NAMED_ROWS:,} more" if len(short) > NAMED_ROWS else ""
    return f"lines {named}{more} have fewer than {width} columns; {len(short):,} rows skipped"
