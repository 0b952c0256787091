"""The stage tables of ``analyse``: time per stage and rank, per step, and stragglers.

A table whose natural width exceeds the terminal switches to a narrower layout (short stage codes
with a legend, or ranks as rows) rather than letting rich cut its headers."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.report.settings import Settings
from mindspeed_prof.analysis.rows import StageRow, StepRow, Straggler
from mindspeed_prof.views.safe import cell
from mindspeed_prof.views.tables import codes as _codes
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import fits as _fits
from mindspeed_prof.views.tables import legend as _legend
from mindspeed_prof.views.tables import table as _table
from mindspeed_prof.views.text.cells import left_out, limited, ms_cell, name_cell, rank_source

__all__ = ["NO_OP_NOTE", "print_per_step", "print_stage_rank", "print_stragglers"]


def print_stage_rank(
    rows: list[StageRow],
    console: Console | None = None,
    title: str = "Stage time per rank: total ms (executions)",
) -> None:
    """Stages as rows and ranks as columns; ranks as rows and stage codes as columns when the
    ranks do not fit side by side. ``rows`` as ``Tables.stage_rank`` holds them."""
    console = console or Console()
    if not rows:
        console.print("No stage ranges in these captures.", soft_wrap=True)
        return
    ranks = sorted({rank_source(r) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    stages: dict[str, dict[tuple[int | None, str], StageRow]] = {}
    for r in rows:
        stages.setdefault(r.stage, {})[rank_source(r)] = r

    def total(stage: str, rank: tuple[int | None, str]) -> str:
        r = stages[stage].get(rank)
        return f"{ms_cell(r.total_ms)} ({r.count})" if r else "-"

    no_op = {stage: _no_op_share(list(by_rank.values())) for stage, by_rank in stages.items()}
    shown = any(v != "-" for v in no_op.values())  # captures that record host operators
    table = _table(title)
    _column(table, "stage", right=False)
    for rank in ranks:
        _column(table, cell(f"rank {rank_label(*rank)}"))
    if shown:
        _column(table, "no op")
    for stage in stages:
        table.add_row(cell(stage), *[total(stage, k) for k in ranks], *([no_op[stage]] * shown))
    if _fits(console, table):
        console.print(table)
        if shown:
            console.print(NO_OP_NOTE, style="dim", highlight=False, soft_wrap=True)
        return
    codes = _codes(stages)

    def by_rank(names: list[str], part: str = "") -> Table:
        table = _table(title + part)
        _column(table, "rank")
        for stage in names:
            _column(table, cell(codes[stage]))
        for rank in ranks:
            table.add_row(cell(rank_label(*rank)), *[total(stage, rank) for stage in names])
        if shown:
            table.add_row("no op", *[no_op[stage] for stage in names])
        return table

    parts = _fitting(console, list(stages), by_rank)
    for i, names in enumerate(parts):
        console.print(by_rank(names, f", {i + 1} of {len(parts)}" if len(parts) > 1 else ""))
    _legend(console, codes)
    if shown:
        console.print(NO_OP_NOTE, style="dim", highlight=False, soft_wrap=True)


#: What the stage table's ``no op`` column says.
NO_OP_NOTE = "no op: share of it no host operator ran (Python, waits, sleeps): see findings"


def _no_op_share(rows: list[StageRow]) -> str:
    """The share of these rows' time with no host operator running, over every rank where it
    is known (``-`` where no capture records operators)."""
    known = [r for r in rows if r.no_op_ms is not None]
    total = sum(r.total_ms for r in known)
    if not known or total <= 0:
        return "-"
    return f"{min(sum(r.no_op_ms or 0.0 for r in known) / total, 1.0):.0%}"


def print_per_step(rows: Sequence[StepRow], console: Console) -> None:
    stages = list(dict.fromkeys(k for row in rows for k in row.stages))
    has_total = any(row.total is not None for row in rows)
    steps, left = limited(rows)

    def build(names: dict[str, str], title: str = "Per step (ms)") -> Table:
        table = _table(title)
        for col in ("rank", "step", *(["total"] if has_total else []), *names.values()):
            _column(table, cell(col))
        for i, row in enumerate(steps):
            if left and i == len(steps) // 2:  # where rows were left out
                table.add_row(*["..."] * len(table.columns))
            step = f"{row.step}{' w' if row.warmup else ''}"
            table.add_row(
                cell(rank_label(*rank_source(row))),
                step,
                *([ms_cell(row.total)] if has_total else []),
                *[ms_cell(row.stages.get(s)) for s in names],
            )
        return table

    table = build({s: s for s in stages})
    if _fits(console, table):
        console.print(table)
        left_out(console, left, len(rows), "per-step")
        return
    codes = _codes(stages)
    parts = _fitting(console, list(codes), lambda names: build({s: codes[s] for s in names}))
    for i, names in enumerate(parts):
        title = "Per step (ms)" + (f", {i + 1} of {len(parts)}" if len(parts) > 1 else "")
        console.print(build({s: codes[s] for s in names}, title))
    left_out(console, left, len(rows), "per-step")
    _legend(console, codes)


def _fitting(
    console: Console, names: list[str], build: Callable[[list[str]], Table]
) -> list[list[str]]:
    """``names`` in runs, each as many as fit the console in one table (at least one)."""
    parts: list[list[str]] = []
    for name in names:
        if parts and _fits(console, build([*parts[-1], name])):
            parts[-1].append(name)
        else:
            parts.append([name])
    return parts


def print_stragglers(
    rows: list[Straggler], what: str, settings: Settings, console: Console
) -> None:
    """Stage or range stragglers: each rank's ms against the median of the other ranks; stage
    names as codes with a legend where the names would not fit (never cut mid-name)."""
    title = "Stragglers" if what == "stage" else "Range stragglers"

    def build(names: dict[str, str]) -> Table:
        table = _table(
            f"{title} (> the other ranks' median + {settings.margin:.0%}, "
            f"and by {settings.noise_ms:g} ms or 1% of the step)"
        )
        table.add_column(what, overflow="fold", max_width=26)
        for col in ("step", "rank", "ms", "others ms", "lost ms", "ratio"):
            _column(table, col)
        for row in rows:
            table.add_row(
                name_cell(names.get(row.name, row.name), 26),
                str(row.step),
                cell(rank_label(*rank_source(row))),
                ms_cell(row.ms),
                ms_cell(row.median_ms),
                ms_cell(row.excess_ms),
                f"{row.ratio:.2f}x",
            )
        return table

    table = build({})
    codes: dict[str, str] = {}
    if what == "stage" and not _fits(console, table):
        codes = _codes(dict.fromkeys(row.name for row in rows))
        table = build(codes)
    console.print(table)
    if codes:
        _legend(console, codes)
