"""Terminal tables of what counters give (``prof.count``): throughput per stage and the RL
ledger, at 80 columns; nothing at all where no counter was recorded."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.counts import Model
from mindspeed_prof.analysis.ledger import Ledger
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.throughput import StageThroughput
from mindspeed_prof.views.safe import cell, printable
from mindspeed_prof.views.tables import codes as _codes
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import fits as _fits
from mindspeed_prof.views.tables import legend as _legend
from mindspeed_prof.views.tables import table as _table

__all__ = ["LEDGER_NAMES", "count_text", "print_ledger", "print_throughput", "share_text"]

#: How the ledger table names its lines.
LEDGER_NAMES = {
    "dropped": "dropped samples",
    "zero_variance": "zero-variance groups",
    "truncated": "truncated responses",
}


def count_text(value: float | None) -> str:
    """``12,345``, with decimals only where the count has them."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def share_text(share: float | None) -> str:
    """A share (0-1) as a percentage, ``-`` where there is none."""
    return "-" if share is None else f"{share:.0%}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"


def _notes(console: Console, lines: list[str]) -> None:
    for line in lines:
        for i, part in enumerate(textwrap.wrap(printable(line), console.width - 2)):
            console.print(("  " if i else "") + part, style="dim", highlight=False, markup=False)


def print_throughput(stages: list[StageThroughput], model: Model, console: Console) -> None:
    """Per stage: tokens/s per rank (median, the slowest rank, the fastest), samples/s, the
    trend over the steps and MFU; under it, why an MFU is missing."""
    if not stages:
        return

    def build(names: dict[str, str]) -> Table:
        table = _table("Throughput per rank (tokens and samples per second of stage time)")
        _column(table, "stage", right=False)
        for col in ("tok/s", "slowest", "fastest", "samples/s", "trend", "MFU"):
            _column(table, col)
        for s in stages:
            slow = (
                "-"
                if s.min_tokens_per_s is None
                else (
                    f"{_rate(s.min_tokens_per_s)} (r{rank_label(s.slowest_rank, s.slowest_source)})"
                    if s.min_tokens_per_s < (s.max_tokens_per_s or 0.0)
                    else _rate(s.min_tokens_per_s)
                )
            )
            table.add_row(
                cell(names[s.stage]),
                _rate(s.tokens_per_s),
                cell(slow),
                _rate(s.max_tokens_per_s),
                _rate(s.samples_per_s),
                "-" if s.change is None else f"{s.change:+.0%}",
                share_text(s.mfu),
            )
        return table

    table = build({s.stage: s.stage for s in stages})
    codes: dict[str, str] = {}
    if not _fits(console, table):
        codes = _codes(s.stage for s in stages)
        table = build(codes)
    console.print(table)
    if codes:
        _legend(console, codes)
    notes = [
        "tok/s: the median over ranks of each rank's tokens over its time in the stage; "
        "trend: the change over the steps of each step's median where they rise or fall "
        "beyond their noise (Mann-Kendall, 5 steps at least), else -"
    ]
    seen = set()
    for s in stages:
        if s.mfu_note and s.mfu_note not in seen and s.tokens_per_s is not None:
            seen.add(s.mfu_note)  # a missing fact is every stage's; a bad value, one stage's
            where = "" if s.mfu_note.startswith("no ") else f" {s.stage}"
            notes.append(f"MFU{where}: {s.mfu_note}")
    notes += [f"model: {p}" for p in model.problems]
    _notes(console, notes)


def _time_unit(seconds: list[float | None]) -> tuple[str, float]:
    """Seconds, or milliseconds where every value is under a second (a demo's generation)."""
    known = [abs(x) for x in seconds if x is not None]
    return ("ms", 1000.0) if known and max(known) < 1.0 else ("s", 1.0)


def _duration(seconds: float) -> str:
    unit, scale = _time_unit([seconds])
    return f"{seconds * scale:,.2f} {unit}"


def print_ledger(book: Ledger | None, console: Console) -> None:
    """The ledger: each line's count of its whole and the generation seconds it took; the
    long tail of response lengths under it."""
    if book is None:
        return
    unit, scale = _time_unit([x.seconds for x in book.lines])
    if book.lines:
        table = _table("RL ledger: generation spent on work not trained on")
        _column(table, "line", right=False)
        for col in ("count", "of", "share", f"gen {unit}", "of gen"):
            _column(table, col)
        for x in book.lines:
            table.add_row(
                LEDGER_NAMES.get(x.line, x.line),
                count_text(x.count),
                count_text(x.of),
                share_text(x.share),
                "-" if x.seconds is None else f"{x.seconds * scale:,.2f}",
                share_text(x.time_share),
            )
        console.print(table)
    notes = [f"{LEDGER_NAMES.get(x.line, x.line)}: {x.note}" for x in book.lines if x.note]
    t = book.tail
    if t is not None and t.responses:
        held = (
            f" ({_duration(t.seconds)} of {_duration(t.generation_s)})"
            if t.seconds is not None and t.generation_s is not None
            else ""
        )
        text = (
            f"Long tail: {t.responses:,} responses, length p50 {count_text(t.p50)}, p95 "
            f"{count_text(t.p95)}, p99 {count_text(t.p99)}, max {count_text(t.max)}; "
            f"after 95% had finished, decode ran {share_text(t.share)} of generation"
            f"{held}"
        )
        for i, part in enumerate(textwrap.wrap(printable(text), console.width - 2)):
            console.print(("  " if i else "") + part, highlight=False, markup=False)
    if t is not None and t.note:
        notes.append(f"long tail: {t.note}")
    gen = (
        f"{_duration(book.generation_s)} of actor_generate in {book.steps} steps (the mean "
        "over ranks); "
        if book.generation_s is not None
        else ""
    )
    notes.append(
        f"{gen}share: of the counted whole; of gen: of those steps' generation "
        "time; the lines may overlap (not added up); see docs/ledger.md"
    )
    _notes(console, notes)
