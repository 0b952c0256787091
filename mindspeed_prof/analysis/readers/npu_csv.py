"""torch_npu's CSV files by column name: a missing column or a cut-short file is one line."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Table", "number", "step_number"]

_DIGITS = re.compile(r"(\d+)")


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
    when the file lacks a required column or cannot be read; a last row cut short is dropped
    and reported, the rows before it are kept.
    """

    def __init__(self, path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
        self.path, self.header, self.rows = path, header, rows

    @classmethod
    def open(cls, path: Path, required: tuple[str, ...], problems: list[str]) -> Table | None:
        try:
            with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
                reader = csv.reader(f)
                header = [h.strip() for h in next(reader, [])]
                missing = [c for c in required if c not in header]
                if missing:
                    problems.append(f"{path}: no column {missing[0]!r} (has: "
                                    f"{', '.join(header[:8]) or 'no header'}); file skipped")
                    return None
                rows = list(_rows(reader, header, path, problems))
        except (OSError, csv.Error) as err:
            problems.append(f"{path}: unreadable ({type(err).__name__}: {err}); file skipped")
            return None
        return cls(path, header, rows)

    def has(self, column: str) -> bool:
        return column in self.header


def _rows(reader: Iterator[list[str]], header: list[str], path: Path,
          problems: list[str]) -> Iterator[dict[str, str]]:
    width = len(header)
    try:
        for line in reader:
            if not line:
                continue
            if len(line) < width:
                problems.append(f"{path}: line {getattr(reader, 'line_num', '?')} has "
                                f"{len(line)} of {width} columns (cut short?); rest of it skipped")
                return
            yield dict(zip(header, line))
    except csv.Error as err:
        problems.append(f"{path}: {err}; rows after it skipped")
