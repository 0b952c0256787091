"""``analyse`` in the terminal: the headline, the verdict, the findings, then every table."""

from __future__ import annotations

import textwrap

from rich.console import Console

from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.labels import ranks_text
from mindspeed_prof.analysis.report.report import Report
from mindspeed_prof.analysis.verdict import Verdict
from mindspeed_prof.views.safe import printable
from mindspeed_prof.views.tables import column as _column
from mindspeed_prof.views.tables import table as _table
from mindspeed_prof.views.text.cells import (
    capture_total,
    count,
    left_out,
    limited,
    ms_cell,
    name_cell,
    print_wrapped,
)
from mindspeed_prof.views.text.details import print_details
from mindspeed_prof.views.text.stages import print_per_step, print_stage_rank, print_stragglers
from mindspeed_prof.views.words import verdict_lines

__all__ = ["headline", "print_analysis", "print_findings", "print_verdict"]


def headline(rep: Report, width: int) -> list[str]:
    """``2 captures under ROOT: 2 ranks 0, 1, 4,096 bytes``; the counts on a line of their own
    when a long root would push the line past ``width``."""
    result, ranks = rep.captures, rep.tables.ranks
    size = sum(t.size for t in result.traces)
    where = f"{count(capture_total(result), 'capture')} under {result.root}"
    what = f"{count(len(ranks), 'rank')} {ranks_text(ranks) or '-'}, {count(size, 'byte')}"
    return [f"{where}: {what}"] if len(where) + 2 + len(what) <= width else [f"{where}:", what]


def print_verdict(v: Verdict, console: Console) -> None:
    """The verdict's lines, a label then a sentence wrapped under itself; then what to run."""
    lines = verdict_lines(v)
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
        console.print(
            f"  {'':<{lead}}{command}", highlight=False, markup=False, soft_wrap=True
        )  # one line, whatever its length: it is copied


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
        console.print(f"  ... {len(findings) - most} more in --json and --html", highlight=False)


def print_analysis(rep: Report, console: Console | None = None) -> None:
    """``analyse`` in the terminal: what ``rep`` holds, each list of top rows cut to its
    settings' ``top``."""
    from rich.text import Text

    from mindspeed_prof.views.counted import print_ledger, print_throughput

    console = console or Console()
    result, t, top = rep.captures, rep.tables, rep.settings.top
    for i, line in enumerate(headline(rep, console.width)):
        text = Text(printable(line))
        if i == 0:
            text.stylize("bold", 0, len(count(capture_total(result), "capture")))
        console.print(text, soft_wrap=True, highlight=False)
    for w in result.clashes:  # before any number they bear on
        print_wrapped(console, f"warning: {w}", lead="warning:")
    print_verdict(rep.verdict, console)
    print_findings(rep.findings, console)
    print_stage_rank(t.stage_rank, console)
    if t.per_step:
        print_per_step(t.per_step, console)
    if t.stragglers:  # the most time lost first
        shown, left = limited(t.stragglers, ends=False)
        print_stragglers(shown, "stage", rep.settings, console)
        left_out(console, left, len(t.stragglers), "straggler", ends=False)
    else:
        console.print("No stragglers.")
    ops = t.top_ops[:top]
    if ops:
        table = _table(f"Top {len(ops)} ops by self time")
        table.add_column("op", overflow="fold", max_width=56)
        _column(table, "calls")
        _column(table, "self ms")
        for op in ops:
            table.add_row(name_cell(op.op, 56), str(op.count), ms_cell(op.self_ms))
        console.print(table)
    print_throughput(t.throughput.stages, t.throughput.model, console)
    print_ledger(t.ledger, console)
    print_details(rep, console, top)
    for w in t.warnings:
        if w not in result.clashes:  # said at the top
            print_wrapped(console, f"warning: {w}", lead="warning:")
