"""Terminal output: rich tables for analyses, sweeps, comparisons and presets, at 80 columns.

A table whose natural width exceeds the terminal switches to a narrower layout (short stage codes
with a legend, or ranks as rows) rather than letting rich cut its headers; headers never shrink
below their own width, values wrap instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers.model import rank_label, rank_order
from mindspeed_prof.formats import capture_stem

__all__ = ["STAGE_CODES", "count", "print_analysis", "print_compare", "print_presets",
           "print_stage_rank", "print_sweep"]

#: Short column names for the RL stages, used when full names do not fit (a legend follows).
STAGE_CODES = {
    "actor_generate": "A.gen",
    "actor_compute_log_prob": "A.logp",
    "reference_compute_log_prob": "R.logp",
    "critic_compute_values": "C.vals",
    "actor_update": "A.upd",
    "critic_update": "C.upd",
}


def count(n: int, noun: str) -> str:
    """``1 capture``, ``2 captures``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _table(title: str | None = None, **kwargs: Any) -> Table:
    """A table at least as wide as its title, so the title never wraps word by word."""
    return Table(title=title, min_width=len(title) if title else None, **kwargs)


def _column(table: Table, header: str, right: bool = True) -> None:
    """A column whose header is never cut: values wrap (or fold) before the header shrinks."""
    table.add_column(header, justify="right" if right else "left", min_width=len(header),
                     overflow="fold")


def _fits(console: Console, table: Table) -> bool:
    """Whether ``table`` at its natural width (nothing wrapped) fits the console."""
    natural = console.measure(table, options=console.options.update_width(10_000)).maximum
    return natural <= console.width


def _codes(names: Iterable[str]) -> dict[str, str]:
    """A short column name per stage: the known codes, else the name if short, else S1, S2..."""
    out: dict[str, str] = {}
    others = 0
    for name in names:
        code = STAGE_CODES.get(name, name if len(name) <= 8 else "")
        if not code:
            others += 1
            code = f"S{others}"
        out[name] = code
    return out


def _legend(console: Console, codes: dict[str, str]) -> None:
    """``A.gen = actor_generate`` pairs, packed into lines; a pair is never split."""
    pairs = [f"{code} = {name}" for name, code in codes.items() if code != name]
    lines: list[str] = []
    for pair in pairs:
        if lines and len(lines[-1]) + 2 + len(pair) <= console.width:
            lines[-1] += "  " + pair
        else:
            lines.append(pair)
    for line in lines:
        console.print(line, style="dim", highlight=False, soft_wrap=True)


def _who(row: dict[str, Any]) -> tuple[int | None, str]:
    """A row's rank and, when two captures claim that rank and step, its source."""
    return row["rank"], row.get("source", "")


def print_stage_rank(rows: list[dict[str, Any]], console: Console | None = None,
                     title: str = "Stage time per rank: total ms (executions)") -> None:
    """Stages as rows and ranks as columns; ranks as rows and stage codes as columns when the
    ranks do not fit side by side. ``rows`` as ``Analysis.stage_rank()`` returns them."""
    console = console or Console()
    if not rows:
        console.print("No stage ranges in these captures.", soft_wrap=True)
        return
    ranks = sorted({_who(r) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    stages: dict[str, dict[tuple[int | None, str], dict[str, Any]]] = {}
    for r in rows:
        stages.setdefault(r["stage"], {})[_who(r)] = r

    def cell(stage: str, rank: tuple[int | None, str]) -> str:
        r = stages[stage].get(rank)
        return f"{_ms(r['total_ms'])} ({r['count']})" if r else "-"

    table = _table(title)
    _column(table, "stage", right=False)
    for rank in ranks:
        _column(table, f"rank {rank_label(*rank)}")
    for stage in stages:
        table.add_row(stage, *[cell(stage, k) for k in ranks])
    if _fits(console, table):
        console.print(table)
        return
    codes = _codes(stages)
    table = _table(title)
    _column(table, "rank")
    for stage in stages:
        _column(table, codes[stage])
    for rank in ranks:
        table.add_row(rank_label(*rank), *[cell(stage, rank) for stage in stages])
    console.print(table)
    _legend(console, codes)


def _print_per_step(steps: list[dict[str, Any]], console: Console) -> None:
    stages = [s for s in dict.fromkeys(k for row in steps for k in row)
              if s not in ("rank", "source", "step", "total")]
    has_total = any("total" in row for row in steps)

    def build(names: dict[str, str]) -> Table:
        table = _table("Per step (ms)")
        for col in ("rank", "step", *(["total"] if has_total else []), *names.values()):
            _column(table, col)
        for row in steps:
            table.add_row(rank_label(*_who(row)), str(row["step"]),
                          *([_ms(row.get("total"))] if has_total else []),
                          *[_ms(row.get(s)) for s in names])
        return table

    table = build({s: s for s in stages})
    if _fits(console, table):
        console.print(table)
        return
    codes = _codes(stages)
    console.print(build(codes))
    _legend(console, codes)


def _captures(result: Analysis) -> int:
    """Captures, not files: a capture's trace and range file share one stem."""
    return len({(str(t.path.parent), capture_stem(t.path)) for t in result.traces})


def print_analysis(result: Analysis, console: Console | None = None, top: int = 10) -> None:
    console = console or Console()
    size = sum(t.size for t in result.traces)
    console.print(f"[bold]{count(_captures(result), 'capture')}[/bold] under {result.root}: "
                  f"{count(len(result.ranks), 'rank')} "
                  f"{', '.join(rank_label(r) for r in result.ranks) or '-'}, "
                  f"{count(size, 'byte')}",
                  soft_wrap=True, highlight=False)
    print_stage_rank(result.stage_rank(), console)
    steps = result.per_step()
    if steps:
        _print_per_step(steps, console)
    stragglers = result.stragglers()
    if stragglers:
        table = _table(f"Stragglers (> median + {result.margin:.0%})")
        _column(table, "stage", right=False)
        for col in ("step", "rank", "ms", "median ms", "ratio"):
            _column(table, col)
        for row in stragglers:
            table.add_row(row["stage"], str(row["step"]), rank_label(*_who(row)), _ms(row["ms"]),
                          _ms(row["median_ms"]), f"{row['ratio']:.2f}x")
        console.print(table)
    else:
        console.print("No stragglers.")
    ops = result.top_ops(top)
    if ops:
        table = _table(f"Top {len(ops)} ops by self time")
        _column(table, "op", right=False)
        _column(table, "calls")
        _column(table, "self ms")
        for op in ops:
            table.add_row(op["op"], str(op["count"]), _ms(op["self_ms"]))
        console.print(table)
    for w in result.warnings():
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False, soft_wrap=True)


def print_compare(rows: list[dict[str, Any]], a: str, b: str,
                  console: Console | None = None) -> None:
    """``compare`` rows: mean ms per execution in A (the baseline) and B, change flagged."""
    console = console or Console()
    console.print(f"A (baseline): {a}\nB: {b}", soft_wrap=True, highlight=False)
    table = _table("Mean ms per stage execution")
    _column(table, "stage", right=False)
    for col in ("rank", "A ms", "B ms", "change"):
        _column(table, col)
    for r in rows:
        change = "-" if r["change"] is None else f"{r['change']:+.1%}"
        if r["regression"]:
            change = f"[red]{change} slower[/red]"
        elif r["improvement"]:
            change = f"[green]{change} faster[/green]"
        table.add_row(r["stage"], rank_label(r["rank"]), _ms(r["a_mean_ms"]), _ms(r["b_mean_ms"]),
                      change)
    console.print(table)


def print_sweep(rows: list[dict[str, Any]], sweep_dir: Path,
                console: Console | None = None) -> None:
    """One row per job; below it, one line per job with its own overrides and notes."""
    console = console or Console()
    columns = [("job", "job"), ("stage", "stage"), ("status", "status"),
               ("captures", "captures"), ("ms/step", "ms_per_step"),
               ("ms/stage", "ms_per_stage")]
    columns = [(h, k) for h, k in columns if k in ("job", "status", "captures")
               or any(r.get(k) is not None for r in rows)]
    console.print(f"[bold]Sweep[/bold] {sweep_dir}", soft_wrap=True, highlight=False)
    table = _table()
    for header, key in columns:
        _column(table, header, right=key not in ("stage", "status"))
    for r in rows:
        table.add_row(*[_sweep_cell(r.get(key), key) for _, key in columns])
    console.print(table)
    common = set.intersection(*(set(r["overrides"]) for r in rows)) if rows else set()
    for r in rows:
        own = [o for o in r["overrides"] if o not in common
               and not o.split("=")[0].lstrip("+").endswith("integrated.stage")]
        line = "; ".join(filter(None, [" ".join(own), r.get("note")]))
        if line:
            console.print(f"job {r['job']}: {line}", soft_wrap=True, highlight=False)


def _sweep_cell(value: Any, key: str) -> str:
    if key.startswith("ms_"):
        return _ms(value)
    if isinstance(value, list):
        return ",".join(map(str, value))
    return "-" if value is None else str(value)


def print_presets(presets: list[tuple[str, str, dict[str, Any]]],
                  console: Console | None = None) -> None:
    """Each preset, the question it answers and the values it changes from the defaults."""
    console = console or Console()
    table = _table("profiler=<preset>: the question it answers, the values it changes",
                   show_lines=True)
    _column(table, "preset", right=False)
    _column(table, "question and values", right=False)
    for name, question, values in presets:
        changed = " ".join(f"{k}={v}" for k, v in values.items()) or "(no changes)"
        table.add_row(name, f"{question}\n[cyan]{changed}[/cyan]")
    console.print(table)
