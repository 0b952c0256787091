"""``sweep`` and ``presets``: a job per row with its own overrides; each preset's values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from mindspeed_prof.views.safe import cell, printable
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import table as _table
from mindspeed_prof.views.text.cells import ms_cell

__all__ = ["print_presets", "print_sweep"]


def print_sweep(
    rows: Sequence[Mapping[str, object]], sweep_dir: Path, console: Console | None = None
) -> None:
    """One row per job; below it, one line per job with its own overrides and notes."""
    console = console or Console()
    columns = [
        ("job", "job"),
        ("stage", "stage"),
        ("status", "status"),
        ("captures", "captures"),
        ("ms/step", "ms_per_step"),
        ("ms/stage", "ms_per_stage"),
    ]
    columns = [
        (h, k)
        for h, k in columns
        if k in ("job", "status", "captures") or any(r.get(k) is not None for r in rows)
    ]
    console.print(f"[bold]Sweep[/bold] {cell(sweep_dir)}", soft_wrap=True, highlight=False)
    table = _table()
    for header, key in columns:
        _column(table, header, right=key not in ("stage", "status"))
    for r in rows:
        table.add_row(*[_sweep_cell(r.get(key), key) for _, key in columns])
    console.print(table)
    common = set.intersection(*(set(_overrides(r)) for r in rows)) if rows else set()
    for r in rows:
        own = [
            o
            for o in _overrides(r)
            if o not in common and not o.split("=")[0].lstrip("+").endswith("integrated.stage")
        ]
        failed = f"failed: {r['error']}" if r.get("error") else None
        note = r.get("note")
        line = "; ".join(filter(None, [" ".join(own), failed, str(note) if note else None]))
        if line:
            console.print(
                printable(f"job {r['job']}: {line}"), soft_wrap=True, highlight=False, markup=False
            )


def _overrides(row: Mapping[str, object]) -> list[str]:
    """A sweep row's command-line overrides."""
    given = row["overrides"]
    return [str(o) for o in given] if isinstance(given, list) else []


def _sweep_cell(value: object, key: str) -> str:
    """A sweep row's value for a cell (from its manifest: escaped)."""
    if key.startswith("ms_") and (value is None or isinstance(value, (int, float))):
        return ms_cell(value)
    if isinstance(value, list):
        return cell(",".join(map(str, value)))
    return "-" if value is None else cell(value)


def print_presets(
    presets: Sequence[tuple[str, str, Mapping[str, object]]], console: Console | None = None
) -> None:
    """Each preset, the question it answers and the values it changes from the defaults."""
    console = console or Console()
    table = _table(
        "profiler_config=<preset>: the question it answers, the values it changes", show_lines=True
    )
    _column(table, "preset", right=False)
    _column(table, "question and values", right=False)
    for name, question, values in presets:
        changed = " ".join(f"{k}={v}" for k, v in values.items()) or "(no changes)"
        table.add_row(name, f"{question}\n[cyan]{changed}[/cyan]")
    console.print(table)
