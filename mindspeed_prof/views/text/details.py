"""The tables after the stage tables: custom ranges, device time, top lists, memory."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from mindspeed_prof.analysis.readers.labels import WHOLE, rank_label, step_label
from mindspeed_prof.analysis.readers.model import Tally, tally
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.report.report import Report
from mindspeed_prof.analysis.rows import DeviceRow, MemoryRow, RangeRow
from mindspeed_prof.views.safe import cell
from mindspeed_prof.views.tables import codes as _codes
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import legend as _legend
from mindspeed_prof.views.tables import table as _table
from mindspeed_prof.views.text.cells import (
    left_out,
    limited,
    mb_cell,
    ms_cell,
    ms_whole_cell,
    name_cell,
    print_wrapped,
    rank_source,
    seconds_cell,
)
from mindspeed_prof.views.text.stages import print_stragglers
from mindspeed_prof.views.words import no_device_text

__all__ = ["print_details", "print_device", "print_memory", "print_ranges", "print_top_lists"]


#: The narrowest the name column of the ranges table may get before its times lose decimals.
_NAME_MIN = 14


def print_ranges(rows: list[RangeRow], console: Console, top: int = 20) -> None:
    """Custom ranges per name and rank (``Tables.range_table``), the stage under the name.

    Times never wrap inside a number: when they and a name column of ``_NAME_MIN`` do not fit
    the console, times of a second and more drop their decimals.
    """
    if not rows:
        console.print("No custom ranges (mstx.range, record_function) in these captures.")
        return
    shown = rows[:top]
    headers = ("rank", "n", "total", "self", "mean", "p95", "max")

    def cells(fmt: Callable[[float | None], str]) -> list[list[str]]:
        return [
            [
                rank_label(r.rank),
                str(r.count),
                *[fmt(t) for t in (r.total_ms, r.self_ms, r.mean_ms, r.p95_ms, r.max_ms)],
            ]
            for r in shown
        ]

    def room(body: list[list[str]]) -> tuple[list[int], int]:
        """Each time column's width, and what is left of the line for the name column."""
        widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]
        return widths, console.width - sum(widths) - 3 * (len(headers) + 1) - 1

    unit = "ms"
    body = cells(ms_cell)
    widths, left = room(body)
    if left < _NAME_MIN:
        body = cells(ms_whole_cell)
        widths, left = room(body)
    if left < _NAME_MIN:  # ranges of an hour and more: seconds
        unit, body = "s", cells(seconds_cell)
        widths, left = room(body)
    name = max(8, min(28, left))
    # a stage name that does not fit under its range: its code, in a legend after the table
    stages = sorted({r.stage for r in shown if r.stage})
    short = {s: c if len(s) > name - 3 else s for s, c in _codes(stages).items()}
    table = _table(f"Custom ranges by total {unit} (top {len(shown)} of {len(rows)})")
    table.add_column("range (stage)", overflow="fold", max_width=name)
    for header, width in zip(headers, widths):
        table.add_column(header, justify="right", min_width=width, no_wrap=True)
    for r, row in zip(shown, body):
        label = name_cell(r.name, name) + (
            f"\n[dim]in {name_cell(short[r.stage], max(8, name - 3))}[/dim]" if r.stage else ""
        )
        table.add_row(label, *row)
    console.print(table)
    _legend(console, short)


def print_device(
    rows: list[DeviceRow],
    console: Console,
    unread: dict[str, int] | None = None,
    memory: list[MemoryRow] | None = None,
) -> None:
    """Device time per rank and step (``Tables.device``, whole-step rows); without rows,
    why not (``unread``: device events recorded but not read as device time; ``memory``: the
    memory rows, whose sources say whether a device's memory was recorded)."""
    every = [r for r in rows if r.stage is None]
    if not every:
        sources = [m.source for m in memory or []]
        print_wrapped(console, no_device_text(unread or {}, sources), indent="")
        return
    steps, left = limited(every)
    table = _table(
        "Device time per step (ms)",
        caption="overlap: communication during compute; copy: memcpy/memset",
    )
    for col in ("rank", "step", "compute", "comm", "overlap", "copy", "idle", "busy"):
        _column(table, col)
    for i, r in enumerate(steps):
        if left and i == len(steps) // 2:  # where rows were left out
            table.add_row(*["..."] * len(table.columns))
        step = WHOLE if r.whole else f"{step_label(r.step)}{' w' if r.warmup else ''}"
        share = ratio(r.busy_ms, r.span_ms, None) if r.busy_ms is not None and r.span_ms else None
        busy = "-" if share is None else f"{share:.0%}"
        table.add_row(
            cell(rank_label(*rank_source(r))),
            step,
            *[ms_cell(v) for v in (r.compute_ms, r.comm_ms, r.overlap_ms, r.memcpy_ms, r.idle_ms)],
            busy,
        )
    console.print(table)
    left_out(console, left, len(every), "device time")


def print_top_lists(rep: Report, console: Console, top: int = 10) -> None:
    """Device kernels by device time and runtime/launch calls by host time."""
    t = rep.tables
    lists = (
        (
            "device kernels (device ms)",
            [(r.name, r.count, r.device_ms) for r in t.top_kernels[:top]],
        ),
        ("runtime calls (host ms)", [(r.name, r.count, r.ms) for r in t.top_runtime[:top]]),
    )
    for title, rows in lists:
        if not rows:
            continue
        table = _table(f"Top {len(rows)} {title}")
        table.add_column("name", overflow="fold", max_width=56)
        _column(table, "calls")
        _column(table, "ms")
        for name, calls, ms in rows:
            table.add_row(name_cell(name, 56), str(calls), ms_cell(ms))
        console.print(table)


def print_memory(rows: list[MemoryRow], console: Console) -> None:
    """Peak memory per rank (and stage), and the top allocating operators."""
    if not rows:
        return
    table = _table("Memory peaks (MiB)")
    for col in ("rank", "stage", "allocated", "reserved", "source"):
        _column(table, col, right=col not in ("stage", "source"))
    for r in rows:
        table.add_row(
            rank_label(r.rank),
            cell(r.stage or "(all)"),
            mb_cell(r.peak_allocated_bytes),
            mb_cell(r.peak_reserved_bytes),
            cell(r.source or "-"),
        )
    console.print(table)
    ops: dict[str, Tally] = {}
    for r in rows:
        for o in r.top_ops:
            tally(ops, o.op, o.count, o.bytes)
    if ops:
        table = _table("Top allocating operators")
        table.add_column("operator", overflow="fold", max_width=56)
        _column(table, "allocs")
        _column(table, "MiB")
        for name, t in sorted(ops.items(), key=lambda kv: -kv[1].total)[:10]:
            table.add_row(name_cell(name, 56), str(t.count), mb_cell(t.total))
        console.print(table)


def print_details(rep: Report, console: Console, top: int = 10) -> None:
    """The tables after the stage tables: ranges, device time, top lists, memory, problems."""
    t = rep.tables
    print_ranges(t.range_table, console, top=2 * top)
    if t.range_stragglers:
        print_stragglers(t.range_stragglers[:top], "range", rep.settings, console)
    print_device(t.device, console, t.unread_device, t.memory)
    print_top_lists(rep, console, top)
    print_memory(t.memory, console)
