"""Terminal output: rich tables for analyses, sweeps and comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers.model import rank_label, rank_order

__all__ = ["print_analysis", "print_sweep", "print_stage_rank"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _who(row: dict[str, Any]) -> tuple[int | None, str]:
    """A row's rank and, when two captures claim that rank, its source."""
    return row["rank"], row.get("source", "")


def print_stage_rank(rows: list[dict[str, Any]], console: Console | None = None,
                     title: str = "Time per stage and rank: total ms (executions)") -> None:
    """Stages as rows, ranks as columns, from ``Analysis.stage_rank()`` rows."""
    console = console or Console()
    ranks = sorted({_who(r) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    table = Table(title=title)
    table.add_column("stage")
    for rank in ranks:
        table.add_column(f"rank {rank_label(*rank)}", justify="right")
    stages: dict[str, dict[tuple[int | None, str], dict[str, Any]]] = {}
    for r in rows:
        stages.setdefault(r["stage"], {})[_who(r)] = r
    for stage, by_rank in stages.items():
        cells = [f"{_ms(by_rank[k]['total_ms'])} ({by_rank[k]['count']})" if k in by_rank
                 else "-" for k in ranks]
        table.add_row(stage, *cells)
    console.print(table)


def print_analysis(result: Analysis, console: Console | None = None, top: int = 10) -> None:
    console = console or Console()
    inventory = result.inventory()
    console.print(f"[bold]{len(inventory)} captures[/bold] under {result.root}, "
                  f"ranks {', '.join(rank_label(r) for r in result.ranks) or '-'}, {sum(i['bytes'] for i in inventory):,} bytes",
                  soft_wrap=True)
    print_stage_rank(result.stage_rank(), console)
    steps = result.per_step()
    if steps:
        stages = [s for s in dict.fromkeys(k for row in steps for k in row)
                  if s not in ("rank", "source", "step")]
        table = Table(title="Per step (ms)")
        table.add_column("rank", justify="right")
        table.add_column("step", justify="right")
        for s in stages:
            table.add_column(s, justify="right")
        for row in steps:
            table.add_row(rank_label(*_who(row)), str(row["step"]), *[_ms(row.get(s)) for s in stages])
        console.print(table)
    stragglers = result.stragglers()
    if stragglers:
        table = Table(title=f"Stragglers (> median + {result.margin:.0%})")
        for col in ("stage", "step", "rank", "ms", "median ms", "ratio"):
            table.add_column(col, justify="right" if col != "stage" else "left")
        for row in stragglers:
            table.add_row(row["stage"], str(row["step"]), rank_label(*_who(row)), _ms(row["ms"]),
                          _ms(row["median_ms"]), f"{row['ratio']:.2f}x")
        console.print(table)
    else:
        console.print("No stragglers.")
    ops = result.top_ops(top)
    if ops:
        table = Table(title=f"Top {len(ops)} ops by self time")
        table.add_column("op")
        table.add_column("calls", justify="right")
        table.add_column("self ms", justify="right")
        for op in ops:
            table.add_row(op["op"], str(op["count"]), _ms(op["self_ms"]))
        console.print(table)
    for w in result.warnings():
        console.print(f"[yellow]warning:[/yellow] {w}", markup=True, highlight=False)
    for b in result.bad:
        console.print(f"[red]skipped:[/red] {b}", highlight=False)


def print_sweep(rows: list[dict[str, Any]], sweep_dir: Path, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"Sweep {sweep_dir}")
    common = set.intersection(*(set(r["overrides"]) for r in rows)) if rows else set()
    for col in ("job", "stage", "status", "captures", "ms/step", "ms/stage", "overrides"):
        table.add_column(col, no_wrap=col != "overrides")
    for r in rows:
        own = " ".join(o for o in r["overrides"] if o not in common)
        table.add_row(str(r["job"]), str(r["stage"]), str(r["status"]), str(r["captures"]),
                      _ms(r["ms_per_step"]), _ms(r["ms_per_stage"]), own)
    console.print(table)
