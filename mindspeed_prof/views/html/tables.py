"""The report's tables: rows as HTML from their ``--json`` keys, every cell escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence

from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.views.html.style import MAX_COLUMNS as _MAX_COLUMNS
from mindspeed_prof.views.safe import printable

__all__ = ["NONE", "WRAP", "esc", "lines", "table"]


#: What ``table`` gives for no rows: the page leaves such sections out and names them once.
NONE = "<p>None.</p>"

#: Table columns whose cells may wrap (names, files); every other cell stays on one line.
WRAP = frozenset({"stage", "name", "op", "file", "range", "source", "group", "steps"})


def esc(text: str) -> str:
    """Text for the page: HTML-escaped, control and direction characters written as escapes."""
    return html.escape(printable(text))


def _header(column: str) -> str:
    """A column's name, breakable after its underscores."""
    return esc(column).replace("_", "_<wbr>")


def _cells(column: str, values: list[object]) -> list[str]:
    """A column's cells: floats to three decimals, unless every one is whole in a column that
    is no time (``*ms``, ``*_s``): a count read as a float, ``512``, not ``512.000``."""
    floats = [v for v in values if isinstance(v, float)]
    whole = bool(floats) and all(v.is_integer() and abs(v) < 1e15 for v in floats)
    whole = whole and not column.endswith(("ms", "_s"))
    return [
        (f"{v:,.0f}" if whole else f"{v:,.3f}")
        if isinstance(v, float)
        else ""
        if v is None
        else str(v)
        for v in values
    ]


def _breakable(text: str) -> str:
    """A name cell's text, escaped, breakable only after ``_``, ``/`` and ``.`` (never
    mid-word: ``actor_<wbr>generate``, not ``actor_gener|ate``)."""
    out = esc(text)
    for sep in ("_", "/", "."):
        out = out.replace(sep, f"{sep}<wbr>")
    return out


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
        return NONE
    dicts = [row.json() if isinstance(row, Row) else row for row in rows]
    cells = {c: _cells(c, [r[c] for r in dicts]) for c in columns}
    empty = [c for c in columns if not any(cells[c])]
    # a note that says the same on every row (why there is no MFU) is said once, under the table
    once = {c: cells[c][0] for c in columns if c.endswith("_note") and len(set(cells[c])) == 1}
    shown = [c for c in columns if c not in empty and c not in once] or columns
    head = "".join(f"<th>{_header(c)}</th>" for c in shown)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{_breakable(cells[c][i]) if c in WRAP else esc(cells[c][i])}</td>" for c in shown
        )
        + "</tr>"
        for i in range(len(dicts))
    )
    wrap = "".join(f" w{i}" for i, c in enumerate(shown, 1) if c in WRAP and i <= _MAX_COLUMNS)
    said = [c for c in empty if c not in set(quiet) and c not in shown]
    note = (
        f"<p class='empty'>Empty in every row, left out: {esc(', '.join(said))}.</p>"
        if said
        else ""
    )
    note += "".join(f"<p class='empty'>{esc(c)}: {esc(v)}</p>" for c, v in once.items() if v)
    return f"<div class='tbl{wrap}'><table><tr>{head}</tr>{body}</table></div>{note}"


def lines(text: str) -> str:
    """A text of several lines, each escaped, kept apart."""
    return "<br>".join(esc(line) for line in text.splitlines())
