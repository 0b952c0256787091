"""The report page: the verdict, what to run next and the findings on top (one line each, the
detail and the suggestion under it in an open ``<details>``), then the charts and the tables;
tables with no rows are named once at the end, not shown empty."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.labels import WHOLE, rank_label, step_label
from mindspeed_prof.analysis.report.report import Report
from mindspeed_prof.analysis.report.tables import Tables
from mindspeed_prof.views.html.charts import charts as _charts
from mindspeed_prof.views.html.style import CSS as _CSS
from mindspeed_prof.views.html.tables import NONE
from mindspeed_prof.views.html.tables import esc as _esc
from mindspeed_prof.views.html.tables import lines as _lines
from mindspeed_prof.views.html.tables import table as _table
from mindspeed_prof.views.palette import stage_colours, stage_order
from mindspeed_prof.views.words import no_device_text, verdict_lines

__all__ = ["write_report"]

#: A section's title, where the section starts with it.
_TITLE = re.compile(r"<h2>(.*?)</h2>")


def _finding(f: Finding) -> str:
    """One line: the severity, the title and the time at stake; the detail, the suggestion and
    where the numbers came from under it, open (the why and what to do are the point)."""
    sev = _esc(f.severity)
    impact = f" <span class='impact'>({f.impact_ms:,.1f} ms per step)</span>" if f.impact_ms else ""
    line = f"<span class='sev {sev}'>{sev}</span><b>{_esc(f.title)}</b>{impact}"
    more = []
    if f.detail:
        more.append(f"<p>{_lines(f.detail)}</p>")
    if f.suggestion:
        more.append(f"<p><b>Suggestion:</b> {_lines(f.suggestion)}</p>")
    seen = ", ".join(rank_label(r) for r in f.ranks)
    where = "; ".join(
        p for p in (f"from {f.source}" if f.source else "", f"ranks {seen}" if seen else "") if p
    )
    if where:
        more.append(f"<p><small>{_esc(where)}</small></p>")
    if not more:
        return f"<li class='{sev}'>{line}</li>"
    return (
        f"<li class='{sev}'><details open><summary>{line}</summary>"
        f"<div class='more'>{''.join(more)}</div></details></li>"
    )


def _answers(answers: Report) -> str:
    """The verdict, what to run next and the findings: the top of the report."""
    esc = _esc
    lines = verdict_lines(answers.verdict)
    items = "".join(
        f"<dt>{esc(label)}</dt><dd{' class=lead' if i == 0 else ''}>{esc(text)}</dd>"
        for i, (label, text) in enumerate(lines)
    )
    out = "<section id='verdict' class='headline'><h2>Verdict</h2>" + (
        f"<dl class='verdict'>{items}</dl>"
        if items
        else "<p>No verdict: these captures hold no steps, stages or device time.</p>"
    )
    if answers.verdict.next:
        out += (
            "<div class='next'><b>Next</b>"
            + "".join(
                f"<p>{esc(n.kind)}: {esc(n.why)}<br><code>{esc(n.command)}</code></p>"
                for n in answers.verdict.next
            )
            + "</div>"
        )
    out += "</section>"
    items = "".join(_finding(f) for f in answers.findings)
    out += (
        "<section id='findings'><h2>Findings</h2>"
        + (
            f"<ul class='findings'>{items}</ul>"
            if items
            else "<p>None: no rule found anything to say about these captures.</p>"
        )
        + "</section>"
    )
    return out


def _stage_names(tables: Tables) -> Iterable[str]:
    return (r.name for r in tables.ranges if r.kind == "stage")


def write_report(answers: Report, path: Path) -> Path:
    """Write the HTML report of ``answers`` to ``path``; every name from a trace is
    escaped."""
    esc = _esc
    result, t = answers.captures, answers.tables
    colours = stage_colours(_stage_names(t))
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>mindspeed-prof: {esc(str(result.root))}</title><style>{_CSS}</style>"
        f"</head><body><h1>mindspeed-prof report</h1><p class='root'>"
        f"{esc(str(result.root))}: {len(result.traces)} captures, ranks "
        f"{esc(str(t.ranks))}</p>",
        _answers(answers),
    ]
    for name, caption, svg in _charts(t, colours):
        parts.append(f"<figure id='{name}'><figcaption>{esc(caption)}</figcaption>{svg}</figure>")
    from mindspeed_prof.views.gantt import gantt_svg

    if gantt := gantt_svg(t.ranges, colours=colours):
        parts.append(f"<h2>Stages by rank and step (Gantt)</h2><figure id='gantt'>{gantt}</figure>")
    parts.append(
        "<h2>Stage by rank</h2>"
        + _table(
            t.stage_rank, ["stage", "rank", "source", "count", "total_ms", "mean_ms", "max_ms"]
        )
    )
    steps = t.per_step
    stages = stage_order(k for r in steps for k in r.stages)
    parts.append(
        "<h2>Per step (ms)</h2>"
        + _table(
            [{**r.json(), "total": r.total, **{s: r.stages.get(s) for s in stages}} for r in steps],
            ["rank", "source", "step", "total", *stages, "warmup"],
            quiet=("source", "total"),
        )
    )
    parts.append(
        f"<h2>Stragglers (&gt; median + {answers.settings.margin:.0%})</h2>"
        + _table(t.stragglers, ["stage", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"])
    )
    from mindspeed_prof.views.counted_html import counted_sections

    parts.extend(counted_sections(t, _table, _esc))
    parts.append(
        "<h2>Custom ranges</h2>"
        + _table(
            t.range_table,
            [
                "name",
                "rank",
                "stage",
                "count",
                "total_ms",
                "self_ms",
                "mean_ms",
                "p95_ms",
                "max_ms",
            ],
        )
    )
    parts.append(
        f"<h2>Range stragglers (&gt; median + {answers.settings.margin:.0%})</h2>"
        + _table(
            t.range_stragglers, ["range", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"]
        )
    )
    device = [
        {**msgspec.to_builtins(r), "step": WHOLE if r.whole else step_label(r.step)}
        for r in t.device
    ]
    parts.append(
        "<h2>Device time (ms)</h2>"
        + (
            _table(
                device,
                [
                    "rank",
                    "source",
                    "step",
                    "stage",
                    "warmup",
                    "span_ms",
                    "busy_ms",
                    "compute_ms",
                    "comm_ms",
                    "overlap_ms",
                    "memcpy_ms",
                    "idle_ms",
                ],
            )
            if device
            else f"<p>{esc(no_device_text(t.unread_device, [m.source for m in t.memory]))}</p>"
        )
    )
    parts.append(
        "<h2>Top host ops by self time</h2>" + _table(t.top_ops[:25], ["op", "count", "self_ms"])
    )
    parts.append(
        "<h2>Top device kernels by device time</h2>"
        + _table(t.top_kernels[:25], ["name", "count", "device_ms"])
    )
    parts.append(
        "<h2>Top runtime/launch calls</h2>" + _table(t.top_runtime[:25], ["name", "count", "ms"])
    )
    memory = t.memory
    parts.append(
        "<h2>Memory peaks (bytes)</h2>"
        + _table(
            memory,
            ["rank", "stage", "source", "peak_allocated_bytes", "peak_reserved_bytes", "file"],
        )
    )
    allocs = [
        {"rank": m.rank, "op": o.op, "count": o.count, "bytes": o.bytes}
        for m in memory
        for o in m.top_ops
    ]
    if allocs:
        parts.append(
            "<h2>Top allocating operators</h2>" + _table(allocs, ["rank", "op", "count", "bytes"])
        )
    parts.append(
        "<h2>Inventory</h2>"
        + _table(
            t.inventory, ["file", "kind", "rank", "group", "bytes", "events", "steps", "level"]
        )
    )
    notes = [f"<li>{esc(w)}</li>" for w in t.warnings]
    notes += [f"<li class='bad'>skipped: {esc(result.shown(b))}</li>" for b in result.bad]
    notes += [f"<li>note: {esc(result.shown(n))}</li>" for n in [*t.notes, *answers.rule_notes]]
    if notes:
        parts.append("<h2>Warnings</h2><ul>" + "".join(notes) + "</ul>")
    absent = [m[1] for part in parts if part.endswith(NONE) and (m := _TITLE.match(part))]
    parts = [part for part in parts if not part.endswith(NONE)]
    if absent:  # a light capture's empty tables, named once rather than each a "None."
        parts.append(f"<p class='empty'>Not in these captures: {', '.join(absent)}.</p>")
    parts.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
