"""What every terminal view shares: counts and numbers as cells, trace names shortened, a
row's rank, and plain text wrapped at the console's width."""

from __future__ import annotations

import textwrap

from rich.console import Console

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.rows import DeviceRow, StageRow, StepRow, Straggler
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.views.safe import printable

__all__ = ["count"]


def count(n: int, noun: str) -> str:
    """``1 capture``, ``2 captures``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


def _ms_whole(value: float | None) -> str:
    """Milliseconds at 1,000 and over without decimals (five digits say enough there)."""
    return _ms(value) if value is None or abs(value) < 1000 else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.1f}"


def _who(row: StageRow | StepRow | Straggler | DeviceRow) -> tuple[int | None, str]:
    """A row's rank and, when two captures claim that rank and step, its source."""
    return row.rank, row.source


def _name(text: str, width: int = 60) -> str:
    """A trace name for a cell: escaped for rich markup, shortened in the middle."""
    from rich.markup import escape

    text = printable(text)
    if len(text) > width:
        text = text[: width // 2 - 1] + "..." + text[-(width // 2 - 2) :]
    return escape(text)


def _captures(result: Analysis) -> int:
    """Captures, not files: a capture's trace and range file share one stem."""
    return len({(str(t.path.parent), capture_stem(t.path)) for t in result.traces})


def _wrapped(console: Console, text: str, indent: str = "  ", lead: str = "") -> None:
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
