"""The report's tables: rows as HTML from their ``--json`` keys, every cell escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.views.html.style import MAX_COLUMNS as _MAX_COLUMNS
from mindspeed_prof.views.safe import printable

__all__ = ["WRAP", "esc", "lines", "table"]


#: Table columns whose cells may wrap (names, files); every other cell stays on one line.
WRAP = frozenset({"stage", "name", "op", "file", "range", "source", "group", "steps"})


def esc(text: str) -> str:
    """Text for the page: HTML-escaped, control and direction characters written as escapes."""
    return html.escape(printable(text))


def _header(column: str) -> str:
    """A column's name, breakable after its underscores."""
    return esc(column).replace("_", "_<wbr>")


def _cell(v: object) -> str:
    return f"{v:,.3f}" if isinstance(v, float) else "" if v is None else str(v)


def table(
    rows: Sequence[Row | Mapping[str, object]],
    columns: list[str],
    quiet: Iterable[str] = ("source",),
) -> str:
    """Rows as an HTML table of ``columns`` (their ``--json`` keys: a column a row does not have
    is a ``KeyError``, never an empty cell), in a wrapper that scrolls when the page is too
    narrow; name columns (``WRAP``) wrap. A column empty in every row is left out, and named
    under the table unless it is ``quiet``."""
    if not rows:
        return "<p>None.</p>"
    dicts = [row.json() if isinstance(row, Row) else row for row in rows]
    cells = {c: [_cell(r[c]) for r in dicts] for c in columns}
    empty = [c for c in columns if not any(cells[c])]
    shown = [c for c in columns if c not in empty] or columns
    head = "".join(f"<th>{_header(c)}</th>" for c in shown)
    body = "".join(
        "<tr>" + "".join(f"<td>{esc(cells[c][i])}</td>" for c in shown) + "</tr>"
        for i in range(len(dicts))
    )
    wrap = "".join(f" w{i}" for i, c in enumerate(shown, 1) if c in WRAP and i <= _MAX_COLUMNS)
    said = [c for c in empty if c not in set(quiet) and c not in shown]
    note = (
        f"<p class='empty'>Empty in every row, left out: {esc(', '.join(said))}.</p>"
        if said
        else ""
    )
    return f"<div class='tbl{wrap}'><table><tr>{head}</tr>{body}</table></div>{note}"


def lines(text: str) -> str:
    """A text of several lines, each escaped, kept apart."""
    return "<br>".join(esc(line) for line in text.splitlines())
