"""Terminal output: rich tables for analyses, sweeps and comparisons."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.analyse import Analysis

__all__ = ["print_analysis", "print_compare", "print_details", "print_device", "print_memory",
           "print_ranges", "print_stage_rank", "print_sweep", "print_top_lists"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def print_stage_rank(rows: list[dict[str, Any]], console: Console | None = None,
                     title: str = "Time per stage and rank: total ms (executions)") -> None:
    """Stages as rows, ranks as columns, from ``Analysis.stage_rank()`` rows."""
    console = console or Console()
    ranks = sorted({r["rank"] for r in rows})
    table = Table(title=title)
    table.add_column("stage")
    for rank in ranks:
        table.add_column(f"rank {rank}", justify="right")
    stages: dict[str, dict[int, dict[str, Any]]] = {}
    for r in rows:
        stages.setdefault(r["stage"], {})[r["rank"]] = r
    for stage, by_rank in stages.items():
        cells = [f"{_ms(by_rank[k]['total_ms'])} ({by_rank[k]['count']})" if k in by_rank
                 else "-" for k in ranks]
        table.add_row(stage, *cells)
    console.print(table)


def print_analysis(result: Analysis, console: Console | None = None, top: int = 10) -> None:
    console = console or Console()
    inventory = result.inventory()
    console.print(f"[bold]{len(inventory)} captures[/bold] under {result.root}, "
                  f"ranks {result.ranks}, {sum(i['bytes'] for i in inventory):,} bytes",
                  soft_wrap=True)
    print_stage_rank(result.stage_rank(), console)
    steps = result.per_step()
    if steps:
        stages = [s for s in dict.fromkeys(k for row in steps for k in row)
                  if s not in ("rank", "step", "warmup")]
        table = Table(title="Per step (ms)")
        table.add_column("rank", justify="right")
        table.add_column("step", justify="right")
        for s in stages:
            table.add_column(s, justify="right")
        for row in steps:
            step = f"{row['step']} warmup" if row.get("warmup") else str(row["step"])
            table.add_row(str(row["rank"]), step, *[_ms(row.get(s)) for s in stages])
        console.print(table)
    stragglers = result.stragglers()
    if stragglers:
        table = Table(title=f"Stragglers (> median + {result.margin:.0%})")
        for col in ("stage", "step", "rank", "ms", "median ms", "ratio"):
            table.add_column(col, justify="right" if col != "stage" else "left")
        for s in stragglers:
            table.add_row(s["stage"], str(s["step"]), str(s["rank"]), _ms(s["ms"]),
                          _ms(s["median_ms"]), f"{s['ratio']:.2f}x")
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
    print_details(result, console, top)
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


# -- ranges, device breakdown, top lists, memory, compare (issue 12) --------------------------


def _name(text: str, width: int = 60) -> str:
    """A trace name for a cell: escaped for rich markup, shortened in the middle."""
    from rich.markup import escape

    if len(text) > width:
        text = text[: width // 2 - 1] + "..." + text[-(width // 2 - 2):]
    return escape(text)


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


def print_ranges(rows: list[dict[str, Any]], console: Console, top: int = 20) -> None:
    """Custom ranges per name and rank (``Analysis.range_table()``), the stage under the name."""
    if not rows:
        console.print("No custom ranges (mstx.range, record_function) in these captures.")
        return
    table = Table(title=f"Custom ranges by total time (top {min(top, len(rows))} of {len(rows)})")
    table.add_column("range (stage)", overflow="fold", max_width=28)
    for col in ("rank", "n", "total ms", "self ms", "mean", "p95", "max"):
        table.add_column(col, justify="right")
    for r in rows[:top]:
        label = _name(r["name"], 28) + (f"\n[dim]in {_name(r['stage'], 24)}[/dim]"
                                        if r["stage"] else "")
        table.add_row(label, str(r["rank"]), str(r["count"]), _ms(r["total_ms"]),
                      _ms(r["self_ms"]), _ms(r["mean_ms"]), _ms(r["p95_ms"]), _ms(r["max_ms"]))
    console.print(table)


def print_device(rows: list[dict[str, Any]], console: Console) -> None:
    """Device time per rank and step (``Analysis.device()``, whole-step rows)."""
    steps = [r for r in rows if r["stage"] is None]
    if not steps:
        console.print("No device data: these are CPU-only captures (no kernels, copies or "
                      "collectives were recorded).")
        return
    table = Table(title="Device time per step (ms)",
                  caption="overlap: communication during compute; copy: memcpy/memset")
    for col in ("rank", "step", "compute", "comm", "overlap", "copy", "idle", "busy"):
        table.add_column(col, justify="right")
    for r in steps:
        step = "outside" if r["step"] is None else f"{r['step']}{' w' if r['warmup'] else ''}"
        busy = f"{r['busy_ms'] / r['span_ms']:.0%}" if r["span_ms"] else "-"
        table.add_row(str(r["rank"]), step, _ms(r["compute_ms"]), _ms(r["comm_ms"]),
                      _ms(r["overlap_ms"]), _ms(r["memcpy_ms"]), _ms(r["idle_ms"]), busy)
    console.print(table)


def print_top_lists(result: Analysis, console: Console, top: int = 10) -> None:
    """Device kernels by device time and runtime/launch calls by host time."""
    for title, rows, unit in (("device kernels (device ms)", result.top_kernels(top), "device_ms"),
                              ("runtime calls (host ms)", result.top_runtime(top), "ms")):
        if not rows:
            continue
        table = Table(title=f"Top {len(rows)} {title}")
        table.add_column("name", overflow="fold", max_width=56)
        table.add_column("calls", justify="right")
        table.add_column("ms", justify="right")
        for r in rows:
            table.add_row(_name(r["name"], 56), str(r["count"]), _ms(r[unit]))
        console.print(table)


def print_memory(rows: list[dict[str, Any]], console: Console) -> None:
    """Peak memory per rank (and stage), and the top allocating operators."""
    if not rows:
        return
    table = Table(title="Memory peaks (MiB)")
    for col in ("rank", "stage", "allocated", "reserved", "source"):
        table.add_column(col, justify="left" if col in ("stage", "source") else "right")
    for r in rows:
        table.add_row(str(r["rank"]), r["stage"] or "(all)", _mb(r["peak_allocated_bytes"]),
                      _mb(r["peak_reserved_bytes"]), str(r["source"]))
    console.print(table)
    ops: dict[str, list[float]] = {}
    for r in rows:
        for o in r.get("top_ops") or []:
            slot = ops.setdefault(o["op"], [0, 0])
            slot[0] += o["count"]
            slot[1] += o["bytes"]
    if ops:
        table = Table(title="Top allocating operators")
        table.add_column("operator", overflow="fold", max_width=56)
        table.add_column("allocs", justify="right")
        table.add_column("MiB", justify="right")
        for name, (count, size) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:10]:
            table.add_row(_name(name, 56), str(int(count)), _mb(size))
        console.print(table)


def print_details(result: Analysis, console: Console, top: int = 10) -> None:
    """The tables after the stage tables: ranges, device time, top lists, memory, problems."""
    print_ranges(result.range_table(), console, top=2 * top)
    stragglers = result.stragglers("range")
    if stragglers:
        table = Table(title=f"Range stragglers (> median + {result.margin:.0%})")
        for col in ("range", "step", "rank", "ms", "median ms", "ratio"):
            table.add_column(col, justify="right" if col != "range" else "left",
                             max_width=30 if col == "range" else None)
        for s in stragglers[:top]:
            table.add_row(_name(s["range"], 30), str(s["step"]), str(s["rank"]), _ms(s["ms"]),
                          _ms(s["median_ms"]), f"{s['ratio']:.2f}x")
        console.print(table)
    print_device(result.device(), console)
    print_top_lists(result, console, top)
    print_memory(result.memory(), console)
    for p in result.problems():
        console.print(f"[yellow]partly read:[/yellow] {_name(p, 400)}", highlight=False)


def print_compare(result: dict[str, Any], a: str, b: str, console: Console) -> None:
    """``compare_runs`` as tables: stages, ranges, device means per step, memory peaks."""
    from rich.markup import escape

    console.print(f"A = {escape(a)}\nB = {escape(b)}", highlight=False, soft_wrap=True)
    for title, rows, key in (("Stages", result["rows"], "stage"),
                             ("Custom ranges", result["ranges"], "name")):
        if not rows:
            continue
        table = Table(title=f"{title}: mean ms per execution")
        for col in (key, "rank", "A", "B", "change", ""):
            table.add_column(col, justify="left" if col == key else "right",
                             max_width=30 if col == key else None)
        for r in rows:
            change = "-" if r["change"] is None else f"{r['change']:+.1%}"
            flag = ("[red]slower[/red]" if r["regression"]
                    else "[green]faster[/green]" if r["improvement"] else "")
            table.add_row(_name(r[key], 30), str(r["rank"]), _ms(r["a_mean_ms"]),
                          _ms(r["b_mean_ms"]), change, flag)
        console.print(table)
    if result["device"]:
        table = Table(title="Device ms per step, A -> B")
        for col in ("rank", "compute", "comm", "overlap", "copy", "idle"):
            table.add_column(col, justify="right")
        for r in result["device"]:
            table.add_row(str(r["rank"]), *[f"{_ms(r['a_' + k])} -> {_ms(r['b_' + k])}"
                                            for k in ("compute_ms", "comm_ms", "overlap_ms",
                                                      "memcpy_ms", "idle_ms")])
        console.print(table)
    if result["memory"]:
        table = Table(title="Peak memory (MiB), A -> B")
        for col in ("rank", "allocated", "reserved"):
            table.add_column(col, justify="right")
        for r in result["memory"]:
            table.add_row(str(r["rank"]),
                          f"{_mb(r['a_peak_allocated_bytes'])} -> {_mb(r['b_peak_allocated_bytes'])}",
                          f"{_mb(r['a_peak_reserved_bytes'])} -> {_mb(r['b_peak_reserved_bytes'])}")
        console.print(table)
