"""``compare``: two runs side by side, mean ms per execution in A and B, change flagged."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.compare import Comparison
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.rows import Change
from mindspeed_prof.views.safe import printable
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import table as _table
from mindspeed_prof.views.text.cells import mb_cell, ms_cell, name_cell

__all__ = ["print_compare", "print_compare_details"]


def print_compare(rows: list[Change], a: str, b: str, console: Console | None = None) -> None:
    """``compare`` rows: mean ms per execution in A (the baseline) and B, change flagged."""
    console = console or Console()
    for line in (f"A (baseline): {a}", f"B: {b}"):
        console.print(printable(line), soft_wrap=True, highlight=False, markup=False)
    if not rows:
        console.print("No stage ranges in either run.")
        return
    console.print(_changes("Mean ms per stage execution", "stage", rows))


def _changes(title: str, what: str, rows: list[Change]) -> Table:
    """Stages or ranges in A and B: mean ms per execution and the change."""
    table = _table(title)
    _column(table, what, right=False)
    for col in ("rank", "A ms", "B ms", "change", "impact ms"):
        _column(table, col)
    for r in rows:
        table.add_row(
            name_cell(r.name, 30),
            rank_label(r.rank),
            ms_cell(r.a_mean_ms),
            ms_cell(r.b_mean_ms),
            _change(r),
            "" if r.impact_ms is None else f"{r.impact_ms:+,.1f}",
        )
    return table


def print_compare_details(result: Comparison, console: Console) -> None:
    """``compare_runs`` beyond stages: ranges, device ms per step and memory peaks, A -> B."""
    if result.ranges:
        console.print(_changes("Mean ms per custom range execution", "range", result.ranges))
    if result.device:
        per = result.device_per or {"a": "step", "b": "step"}
        table = _table(
            f"Device ms per {per['a']}, A -> B"
            if per["a"] == per["b"]
            else f"Device ms, A per {per['a']} -> B per {per['b']}",
            caption="per capture: a capture without steps is one whole"
            if "capture" in per.values()
            else None,
        )
        for col in ("rank", "compute", "comm", "overlap", "copy", "idle"):
            _column(table, col)
        for d in result.device:
            a, b = d.a.json(), d.b.json()
            table.add_row(rank_label(d.rank), *[f"{ms_cell(a[k])} -> {ms_cell(b[k])}" for k in a])
        console.print(table)
    if result.memory:
        table = _table("Peak memory MiB, A -> B")
        for col in ("rank", "allocated", "reserved"):
            _column(table, col)
        for m in result.memory:
            a, b = m.a.json(), m.b.json()
            table.add_row(rank_label(m.rank), *[f"{mb_cell(a[k])} -> {mb_cell(b[k])}" for k in a])
        console.print(table)


def _change(row: Change) -> str:
    """A compare row's change, coloured and worded when it is a regression or an improvement."""
    change = "-" if row.change is None else f"{row.change:+.1%}"
    if row.regression:
        return f"[red]{change} slower[/red]"
    if row.improvement:
        return f"[green]{change} faster[/green]"
    return change
