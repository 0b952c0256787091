"""Terminal output: rich tables for analyses, sweeps, comparisons and presets, at 80 columns.

A table whose natural width exceeds the terminal switches to a narrower layout (short stage codes
with a legend, or ranks as rows) rather than letting rich cut its headers; headers never shrink
below their own width, values wrap instead.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.compare import Comparison
from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.events import UNREAD_DEVICE
from mindspeed_prof.analysis.readers.model import (
    WHOLE,
    Tally,
    rank_label,
    rank_order,
    ranks_text,
    step_label,
    tally,
)
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.report import Answers
from mindspeed_prof.analysis.rows import (
    Change,
    DeviceRow,
    MemoryRow,
    RangeRow,
    StageRow,
    StepRow,
    Straggler,
)
from mindspeed_prof.analysis.verdict import Verdict
from mindspeed_prof.formats import capture_stem
from mindspeed_prof.views.safe import cell, printable
from mindspeed_prof.views.tables import STAGE_CODES
from mindspeed_prof.views.tables import codes as _codes
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import fits as _fits
from mindspeed_prof.views.tables import legend as _legend
from mindspeed_prof.views.tables import table as _table

__all__ = ["STAGE_CODES", "count", "headline", "no_device_text", "print_analysis", "print_compare",
           "print_compare_details", "print_details", "print_device", "print_memory",
           "print_presets", "print_ranges", "print_stage_rank", "print_sweep", "print_top_lists"]

def count(n: int, noun: str) -> str:
    """``1 capture``, ``2 captures``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _who(row: StageRow | StepRow | Straggler | DeviceRow) -> tuple[int | None, str]:
    """A row's rank and, when two captures claim that rank and step, its source."""
    return row.rank, row.source


def print_stage_rank(rows: list[StageRow], console: Console | None = None,
                     title: str = "Stage time per rank: total ms (executions)") -> None:
    """Stages as rows and ranks as columns; ranks as rows and stage codes as columns when the
    ranks do not fit side by side. ``rows`` as ``Analysis.stage_rank()`` returns them."""
    console = console or Console()
    if not rows:
        console.print("No stage ranges in these captures.", soft_wrap=True)
        return
    ranks = sorted({_who(r) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    stages: dict[str, dict[tuple[int | None, str], StageRow]] = {}
    for r in rows:
        stages.setdefault(r.stage, {})[_who(r)] = r

    def total(stage: str, rank: tuple[int | None, str]) -> str:
        r = stages[stage].get(rank)
        return f"{_ms(r.total_ms)} ({r.count})" if r else "-"

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
    table = _table(title)
    _column(table, "rank")
    for stage in stages:
        _column(table, cell(codes[stage]))
    for rank in ranks:
        table.add_row(cell(rank_label(*rank)), *[total(stage, rank) for stage in stages])
    if shown:
        table.add_row("no op", *[no_op[stage] for stage in stages])
    console.print(table)
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


def _print_per_step(steps: list[StepRow], console: Console) -> None:
    stages = list(dict.fromkeys(k for row in steps for k in row.stages))
    has_total = any(row.total is not None for row in steps)

    def build(names: dict[str, str]) -> Table:
        table = _table("Per step (ms)")
        for col in ("rank", "step", *(["total"] if has_total else []), *names.values()):
            _column(table, cell(col))
        for row in steps:
            step = f"{row.step}{' w' if row.warmup else ''}"
            table.add_row(cell(rank_label(*_who(row))), step,
                          *([_ms(row.total)] if has_total else []),
                          *[_ms(row.stages.get(s)) for s in names])
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


def _wrapped(console: Console, text: str, indent: str = "  ", lead: str = "") -> None:
    """Plain ``text`` wrapped at the console's width on spaces, never inside a word (a path
    longer than a line keeps a line of its own), later lines indented; ``lead`` (a word at its
    start, such as ``warning:``) in yellow."""
    from rich.text import Text

    text = printable(text)
    for i, line in enumerate(textwrap.wrap(text, width=console.width, subsequent_indent=indent,
                                           break_long_words=False, break_on_hyphens=False)):
        out = Text(line)
        if i == 0 and lead and line.startswith(lead):
            out.stylize("yellow", 0, len(lead))
        console.print(out, soft_wrap=True, highlight=False)


def headline(result: Analysis, width: int) -> list[str]:
    """``2 captures under ROOT: 2 ranks 0, 1, 4,096 bytes``; the counts on a line of their own
    when a long root would push the line past ``width``."""
    size = sum(t.size for t in result.traces)
    where = f"{count(_captures(result), 'capture')} under {result.root}"
    what = (f"{count(len(result.ranks), 'rank')} {ranks_text(result.ranks) or '-'}, "
            f"{count(size, 'byte')}")
    return [f"{where}: {what}"] if len(where) + 2 + len(what) <= width else [f"{where}:", what]


def print_verdict(v: Verdict, console: Console) -> None:
    """The verdict's lines, a label then a sentence wrapped under itself; then what to run."""
    lines = v.lines()
    if not lines:
        return
    pad = max(len(label) for label in [*(x for x, _ in lines), *(n.kind for n in v.next)]) + 2
    width = max(console.width - pad - 2, 20)
    console.print("[bold]Verdict[/bold]", highlight=False)
    for label, sentence in lines:
        body = textwrap.wrap(printable(sentence), width) or [""]
        console.print(f"  [bold]{label:<{pad}}[/bold]{body[0]}", highlight=False)
        for more in body[1:]:
            console.print(f"  {'':<{pad}}{more}", highlight=False, markup=False)
    if v.next:
        console.print("[bold]Next[/bold]", highlight=False)
    for n in v.next:
        body = textwrap.wrap(printable(n.why), width) or [""]
        console.print(f"  [bold]{n.kind:<{pad}}[/bold]{body[0]}", highlight=False)
        for more in body[1:]:
            console.print(f"  {'':<{pad}}{more}", highlight=False, markup=False)
        command = f"{'$ ' if n.runnable else ''}{printable(n.command)}"  # $: a whole line
        lead = pad if 2 + pad + len(command) <= console.width else 2  # less indent, not 2 lines
        console.print(f"  {'':<{lead}}{command}", highlight=False, markup=False,
                      soft_wrap=True)  # one line, whatever its length: it is copied


def print_findings(findings: list[Finding], console: Console, most: int = 8) -> None:
    """One line per finding (severity, title), its suggestion under it; the first ``most``."""
    if not findings:
        return
    console.print(f"[bold]Findings[/bold] ({len(findings)})", highlight=False)
    width = max(console.width - 4, 20)
    for f in findings[:most]:
        for i, line in enumerate(textwrap.wrap(printable(f"[{f.severity}] {f.title}"), width)):
            console.print(f"  {'' if i == 0 else '  '}{line}", highlight=False, markup=False)
        if f.suggestion:
            for line in textwrap.wrap(printable(f"-> {f.suggestion}"), width - 2):
                console.print(f"    {line}", highlight=False, markup=False)
    if len(findings) > most:
        console.print(f"  ... {len(findings) - most} more in --json and --html",
                      highlight=False)


def print_analysis(result: Analysis, console: Console | None = None, top: int = 10,
                   answers: Answers | None = None) -> None:
    from rich.text import Text

    from mindspeed_prof.views.counted import print_ledger, print_throughput

    console = console or Console()
    answers = answers or Answers(result)
    for i, line in enumerate(headline(result, console.width)):
        text = Text(printable(line))
        if i == 0:
            text.stylize("bold", 0, len(count(_captures(result), "capture")))
        console.print(text, soft_wrap=True, highlight=False)
    for w in result.clashes:  # before any number they bear on
        _wrapped(console, f"warning: {w}", lead="warning:")
    print_verdict(answers.verdict, console)
    print_findings(answers.findings, console)
    print_stage_rank(result.stage_rank(), console)
    steps = result.per_step()
    if steps:
        _print_per_step(steps, console)
    stragglers = result.stragglers()
    if stragglers:
        console.print(_stragglers(stragglers, "stage", result))
    else:
        console.print("No stragglers.")
    ops = result.top_ops(top)
    if ops:
        table = _table(f"Top {len(ops)} ops by self time")
        table.add_column("op", overflow="fold", max_width=56)
        _column(table, "calls")
        _column(table, "self ms")
        for op in ops:
            table.add_row(_name(op.op, 56), str(op.count), _ms(op.self_ms))
        console.print(table)
    print_throughput(result.throughput_stages(), result.model(), console)
    print_ledger(result.ledger(), console)
    print_details(result, console, top)
    for w in result.warnings():
        if w not in result.clashes:  # said at the top
            _wrapped(console, f"warning: {w}", lead="warning:")


def _stragglers(rows: list[Straggler], what: str, result: Analysis) -> Table:
    """Stage or range stragglers: each rank's ms against the median of the other ranks."""
    title = "Stragglers" if what == "stage" else "Range stragglers"
    table = _table(f"{title} (> the other ranks' median + {result.margin:.0%}, "
                   f"and by {result.noise_ms:g} ms or 1% of the step)")
    table.add_column(what, overflow="fold", max_width=26)
    for col in ("step", "rank", "ms", "others ms", "lost ms", "ratio"):
        _column(table, col)
    for row in rows:
        table.add_row(_name(row.name, 26), str(row.step), cell(rank_label(*_who(row))),
                      _ms(row.ms), _ms(row.median_ms), _ms(row.excess_ms), f"{row.ratio:.2f}x")
    return table


def print_compare(rows: list[Change], a: str, b: str,
                  console: Console | None = None) -> None:
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
        table.add_row(_name(r.name, 30), rank_label(r.rank), _ms(r.a_mean_ms),
                      _ms(r.b_mean_ms), _change(r),
                      "" if r.impact_ms is None else f"{r.impact_ms:+,.1f}")
    return table


def print_sweep(rows: list[dict[str, Any]], sweep_dir: Path,
                console: Console | None = None) -> None:
    """One row per job; below it, one line per job with its own overrides and notes."""
    console = console or Console()
    columns = [("job", "job"), ("stage", "stage"), ("status", "status"),
               ("captures", "captures"), ("ms/step", "ms_per_step"),
               ("ms/stage", "ms_per_stage")]
    columns = [(h, k) for h, k in columns if k in ("job", "status", "captures")
               or any(r.get(k) is not None for r in rows)]
    console.print(f"[bold]Sweep[/bold] {cell(sweep_dir)}", soft_wrap=True, highlight=False)
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
        failed = f"failed: {r['error']}" if r.get("error") else None
        line = "; ".join(filter(None, [" ".join(own), failed, r.get("note")]))
        if line:
            console.print(printable(f"job {r['job']}: {line}"), soft_wrap=True,
                          highlight=False, markup=False)


def _sweep_cell(value: Any, key: str) -> str:
    """A sweep row's value for a cell (from its manifest: escaped)."""
    if key.startswith("ms_"):
        return _ms(value)
    if isinstance(value, list):
        return cell(",".join(map(str, value)))
    return "-" if value is None else cell(value)


def print_presets(presets: list[tuple[str, str, dict[str, Any]]],
                  console: Console | None = None) -> None:
    """Each preset, the question it answers and the values it changes from the defaults."""
    console = console or Console()
    table = _table("profiler_config=<preset>: the question it answers, the values it changes",
                   show_lines=True)
    _column(table, "preset", right=False)
    _column(table, "question and values", right=False)
    for name, question, values in presets:
        changed = " ".join(f"{k}={v}" for k, v in values.items()) or "(no changes)"
        table.add_row(name, f"{question}\n[cyan]{changed}[/cyan]")
    console.print(table)


# -- ranges, device breakdown, top lists, memory, compare (issue 12) --------------------------


def _name(text: str, width: int = 60) -> str:
    """A trace name for a cell: escaped for rich markup, shortened in the middle."""
    from rich.markup import escape

    text = printable(text)
    if len(text) > width:
        text = text[: width // 2 - 1] + "..." + text[-(width // 2 - 2):]
    return escape(text)


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.1f}"


#: The narrowest the name column of the ranges table may get before its times lose decimals.
_NAME_MIN = 14


def _ms_whole(value: float | None) -> str:
    """Milliseconds at 1,000 and over without decimals (five digits say enough there)."""
    return _ms(value) if value is None or abs(value) < 1000 else f"{value:,.0f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value / 1000:,.1f}"


def print_ranges(rows: list[RangeRow], console: Console, top: int = 20) -> None:
    """Custom ranges per name and rank (``Analysis.range_table()``), the stage under the name.

    Times never wrap inside a number: when they and a name column of ``_NAME_MIN`` do not fit
    the console, times of a second and more drop their decimals.
    """
    if not rows:
        console.print("No custom ranges (mstx.range, record_function) in these captures.")
        return
    shown = rows[:top]
    headers = ("rank", "n", "total", "self", "mean", "p95", "max")

    def cells(fmt: Any) -> list[list[str]]:
        return [[rank_label(r.rank), str(r.count),
                 *[fmt(t) for t in (r.total_ms, r.self_ms, r.mean_ms, r.p95_ms, r.max_ms)]]
                for r in shown]

    def room(body: list[list[str]]) -> tuple[list[int], int]:
        """Each time column's width, and what is left of the line for the name column."""
        widths = [max(len(h), *(len(row[i]) for row in body)) for i, h in enumerate(headers)]
        return widths, console.width - sum(widths) - 3 * (len(headers) + 1) - 1

    unit = "ms"
    body = cells(_ms)
    widths, left = room(body)
    if left < _NAME_MIN:
        body = cells(_ms_whole)
        widths, left = room(body)
    if left < _NAME_MIN:  # ranges of an hour and more: seconds
        unit, body = "s", cells(_seconds)
        widths, left = room(body)
    name = max(8, min(28, left))
    table = _table(f"Custom ranges by total {unit} (top {len(shown)} of {len(rows)})")
    table.add_column("range (stage)", overflow="fold", max_width=name)
    for header, width in zip(headers, widths):
        table.add_column(header, justify="right", min_width=width, no_wrap=True)
    for r, row in zip(shown, body):
        label = _name(r.name, name) + (f"\n[dim]in {_name(r.stage, max(8, name - 3))}[/dim]"
                                       if r.stage else "")
        table.add_row(label, *row)
    console.print(table)


def no_device_text(unread: dict[str, int]) -> str:
    """Why there is no device table: CPU-only captures, or device events not read as time."""
    if not unread:
        return ("No device data: these are CPU-only captures (no kernels, copies or "
                "collectives were recorded).")
    what = ", ".join(f"{n:,} {UNREAD_DEVICE.get(cat, cat)} ({cat})"
                     for cat, n in sorted(unread.items()))
    return (f"No device breakdown: these captures hold {what}, which are not read as device "
            "time (kernels, copies and collectives of CUDA, ROCm and Ascend are).")


def print_device(rows: list[DeviceRow], console: Console,
                 unread: dict[str, int] | None = None) -> None:
    """Device time per rank and step (``Analysis.device()``, whole-step rows); without rows,
    why not (``unread``: device events recorded but not read as device time)."""
    steps = [r for r in rows if r.stage is None]
    if not steps:
        _wrapped(console, no_device_text(unread or {}), indent="")
        return
    table = _table("Device time per step (ms)",
                   caption="overlap: communication during compute; copy: memcpy/memset")
    for col in ("rank", "step", "compute", "comm", "overlap", "copy", "idle", "busy"):
        _column(table, col)
    for r in steps:
        step = WHOLE if r.whole else f"{step_label(r.step)}{' w' if r.warmup else ''}"
        share = ratio(r.busy_ms, r.span_ms, None) if r.busy_ms is not None and r.span_ms else None
        busy = "-" if share is None else f"{share:.0%}"
        table.add_row(cell(rank_label(*_who(r))), step, *[_ms(v) for v in (
            r.compute_ms, r.comm_ms, r.overlap_ms, r.memcpy_ms, r.idle_ms)], busy)
    console.print(table)


def print_top_lists(result: Analysis, console: Console, top: int = 10) -> None:
    """Device kernels by device time and runtime/launch calls by host time."""
    lists = (("device kernels (device ms)", [(r.name, r.count, r.device_ms)
                                             for r in result.top_kernels(top)]),
             ("runtime calls (host ms)", [(r.name, r.count, r.ms)
                                          for r in result.top_runtime(top)]))
    for title, rows in lists:
        if not rows:
            continue
        table = _table(f"Top {len(rows)} {title}")
        table.add_column("name", overflow="fold", max_width=56)
        _column(table, "calls")
        _column(table, "ms")
        for name, calls, ms in rows:
            table.add_row(_name(name, 56), str(calls), _ms(ms))
        console.print(table)


def print_memory(rows: list[MemoryRow], console: Console) -> None:
    """Peak memory per rank (and stage), and the top allocating operators."""
    if not rows:
        return
    table = _table("Memory peaks (MiB)")
    for col in ("rank", "stage", "allocated", "reserved", "source"):
        _column(table, col, right=col not in ("stage", "source"))
    for r in rows:
        table.add_row(rank_label(r.rank), cell(r.stage or "(all)"), _mb(r.peak_allocated_bytes),
                      _mb(r.peak_reserved_bytes), cell(r.source or "-"))
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
            table.add_row(_name(name, 56), str(t.count), _mb(t.total))
        console.print(table)


def print_details(result: Analysis, console: Console, top: int = 10) -> None:
    """The tables after the stage tables: ranges, device time, top lists, memory, problems."""
    print_ranges(result.range_table(), console, top=2 * top)
    stragglers = result.stragglers("range")
    if stragglers:
        console.print(_stragglers(stragglers[:top], "range", result))
    print_device(result.device(), console, result.unread_device())
    print_top_lists(result, console, top)
    print_memory(result.memory(), console)


def print_compare_details(result: Comparison, console: Console) -> None:
    """``compare_runs`` beyond stages: ranges, device ms per step and memory peaks, A -> B."""
    if result.ranges:
        console.print(_changes("Mean ms per custom range execution", "range", result.ranges))
    if result.device:
        per = result.device_per or {"a": "step", "b": "step"}
        table = _table(f"Device ms per {per['a']}, A -> B" if per["a"] == per["b"] else
                       f"Device ms, A per {per['a']} -> B per {per['b']}",
                       caption="per capture: a capture without steps is one whole"
                       if "capture" in per.values() else None)
        for col in ("rank", "compute", "comm", "overlap", "copy", "idle"):
            _column(table, col)
        for d in result.device:
            a, b = d.a.json(), d.b.json()
            table.add_row(rank_label(d.rank), *[f"{_ms(a[k])} -> {_ms(b[k])}" for k in a])
        console.print(table)
    if result.memory:
        table = _table("Peak memory MiB, A -> B")
        for col in ("rank", "allocated", "reserved"):
            _column(table, col)
        for m in result.memory:
            a, b = m.a.json(), m.b.json()
            table.add_row(rank_label(m.rank), *[f"{_mb(a[k])} -> {_mb(b[k])}" for k in a])
        console.print(table)


def _change(row: Change) -> str:
    """A compare row's change, coloured and worded when it is a regression or an improvement."""
    change = "-" if row.change is None else f"{row.change:+.1%}"
    if row.regression:
        return f"[red]{change} slower[/red]"
    if row.improvement:
        return f"[green]{change} faster[/green]"
    return change
