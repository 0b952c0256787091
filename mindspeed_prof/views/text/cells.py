"""What every terminal view shares: counts and numbers as cells, trace names shortened, a
row's rank, and plain text wrapped at the console's width."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TypeVar

from rich.console import Console

from mindspeed_prof.analysis.report.captures import Captures
from mindspeed_prof.analysis.rows import DeviceRow, StageRow, StepRow, Straggler
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.views.safe import printable

__all__ = [
    "ROW_LIMIT",
    "capture_total",
    "count",
    "left_out",
    "limited",
    "mb_cell",
    "ms_cell",
    "ms_whole_cell",
    "name_cell",
    "print_wrapped",
    "rank_source",
    "seconds_cell",
]

_R = TypeVar("_R")


def count(n: int, noun: str) -> str:
    """``1 capture``, ``2 captures``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def ms_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def mb_cell(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


def ms_whole_cell(value: float | None) -> str:
    """Milliseconds at 1,000 and over without decimals (five digits say enough there)."""
    return ms_cell(value) if value is None or abs(value) < 1000 else f"{value:,.0f}"


def seconds_cell(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.1f}"


def rank_source(row: StageRow | StepRow | Straggler | DeviceRow) -> tuple[int | None, str]:
    """A row's rank and, when two captures claim that rank and step, its source."""
    return row.rank, row.source


def name_cell(text: str, width: int = 60) -> str:
    """A trace name for a cell: escaped for rich markup, shortened in the middle."""
    from rich.markup import escape

    text = printable(text)
    if len(text) > width:
        text = text[: width // 2 - 1] + "..." + text[-(width // 2 - 2) :]
    return escape(text)


def capture_total(result: Captures) -> int:
    """Captures, not files: a capture's trace and range file share one stem."""
    return len({(str(t.path.parent), capture_stem(t.path)) for t in result.traces})


def print_wrapped(console: Console, text: str, indent: str = "  ", lead: str = "") -> None:
    """Plain ``text`` wrapped at the console's width on spaces, never inside a word (a path
    longer than a line keeps a line of its own), later lines indented; ``lead`` (a word at its
    start, such as ``warning:``) in yellow."""
    from rich.text import Text

    text = printable(text)
    for i, line in enumerate(
        textwrap.wrap(
            text,
            width=console.width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    ):
        out = Text(line)
        if i == 0 and lead and line.startswith(lead):
            out.stylize("yellow", 0, len(lead))
        console.print(out, soft_wrap=True, highlight=False)


#: The most rows one table shows in the terminal: past it, the first and last halves and a line
#: saying how many were left out (``--json`` and ``--html`` have every row). A trace of 100,000
#: steps is then printed in about the time ``--json`` takes, not rendered row by row.
ROW_LIMIT = 100


def limited(rows: Sequence[_R], limit: int = ROW_LIMIT, ends: bool = True) -> tuple[list[_R], int]:
    """``rows`` as a table shows them, and how many it leaves out: all up to ``limit``; past
    it the first and last ``limit // 2`` (``ends``: rows in step order) or the first ``limit``
    (rows ranked, most first)."""
    if len(rows) <= limit:
        return list(rows), 0
    if not ends:
        return list(rows[:limit]), len(rows) - limit
    half = limit // 2
    return [*rows[:half], *rows[-half:]], len(rows) - 2 * half


def left_out(console: Console, left: int, total: int, what: str, ends: bool = True) -> None:
    """The line under a table ``limited`` cut: how many rows it left out and how to see all."""
    if left:
        which = "the first and last shown" if ends else "the first shown"
        console.print(
            f"  ... {left:,} of {total:,} {what} rows left out ({which}); add --json (or --html) "
            "for every row",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
