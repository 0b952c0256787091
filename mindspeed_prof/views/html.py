"""``--html``: a self-contained report (inline SVG charts; opens without network)."""

from __future__ import annotations

import html
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.readers.model import rank_label, rank_order, step_label
from mindspeed_prof.analysis.report import Answers
from mindspeed_prof.analysis.rows import DeviceRow, Row
from mindspeed_prof.views.safe import printable
from mindspeed_prof.views.text import no_device_text

__all__ = ["write_report"]

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;
text-align:right}th{background:#f3f3f3}td:first-child{text-align:left}.bad{color:#b00}
figure{margin:1em 0}svg{max-width:100%;height:auto}"""


def _esc(text: str) -> str:
    """Text for the page: HTML-escaped, control and direction characters written as escapes."""
    return html.escape(printable(text))


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: inline SVG in HTML
    # matplotlib repeats each label in an XML comment; a name holding "-->" could end it early.
    return _COMMENT.sub("", text)


def _charts(result: Analysis) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.fonttype"] = "path"  # text as paths: no fonts, nothing to inject
    charts = []
    rows = result.stage_rank()
    if rows:
        stages = list(dict.fromkeys(r.stage for r in rows))
        ranks = sorted({(r.rank, r.source) for r in rows},
                       key=lambda k: (rank_order(k[0]), k[1]))
        grid = [[0.0] * len(ranks) for _ in stages]
        for r in rows:
            grid[stages.index(r.stage)][ranks.index((r.rank, r.source))] = r.mean_ms
        fig, ax = plt.subplots(figsize=(2 + 1.2 * len(ranks), 1 + 0.5 * len(stages)))
        im = ax.imshow(grid, cmap="viridis", aspect="auto")
        ax.set_xticks(range(len(ranks)), [f"rank {rank_label(*k)}" for k in ranks])
        ax.set_yticks(range(len(stages)), [printable(st) for st in stages])
        top = max(max(r) for r in grid) or 1.0
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=8,
                        color="black" if v > 0.6 * top else "white")
        fig.colorbar(im, label="mean ms")
        ax.set_title("Stage x rank heat map (mean ms per execution)")
        charts.append(("heatmap", _svg(fig)))
    steps = result.per_step()
    stage_keys = list(dict.fromkeys(k for row in steps for k in row.stages))
    if steps and stage_keys:
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(steps)), 4))
        labels = [f"r{rank_label(r.rank, r.source)}/s{r.step}" for r in steps]
        bottom = [0.0] * len(steps)
        for s in stage_keys:
            vals = [r.stages.get(s, 0.0) for r in steps]
            ax.bar(labels, vals, bottom=bottom, label=printable(s))
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_ylabel("ms")
        ax.set_title("Per-step stage timeline (rank/step)")
        ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        charts.append(("timeline", _svg(fig)))
    ops = result.top_ops(15)
    if ops:
        fig, ax = plt.subplots(figsize=(8, 0.3 * len(ops) + 1))
        ax.barh([printable(o.op)[:60] for o in ops][::-1], [o.self_ms for o in ops][::-1])
        ax.set_xlabel("self ms")
        ax.set_title("Top ops by self time")
        charts.append(("top_ops", _svg(fig)))
    charts += _device_chart(result, plt) + _memory_chart(result, plt)
    return charts


def _device_chart(result: Analysis, plt: Any) -> list[tuple[str, str]]:
    """A stacked bar per rank and step: compute, overlap, communication, copy, idle."""
    rows = [r for r in result.device() if r.stage is None and r.step is not None]
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(rows)), 4))
    labels = [f"r{rank_label(r.rank, r.source)}/s{r.step}{'w' if r.warmup else ''}"
              for r in rows]
    parts: list[tuple[str, Callable[[DeviceRow], float]]] = [
        ("compute only", lambda r: r.compute_ms - r.overlap_ms),
        ("comm during compute", lambda r: r.overlap_ms),
        ("comm only", lambda r: r.comm_ms - r.overlap_ms),
        ("memcpy/memset", lambda r: r.memcpy_ms or 0.0),  # None where not split out
        ("idle", lambda r: r.idle_ms)]
    bottom = [0.0] * len(rows)
    for name, value in parts:
        vals = [max(value(r), 0.0) for r in rows]
        ax.bar(labels, vals, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("device ms")
    ax.set_title("Device time per step (rank/step; w = warmup)")
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    ax.tick_params(axis="x", labelrotation=60, labelsize=7)
    return [("device", _svg(fig))]


def _memory_chart(result: Analysis, plt: Any) -> list[tuple[str, str]]:
    """Allocated bytes over time, a line per capture (rank) that has a timeline."""
    lines = [r for r in result.memory() if r.stage is None and r.timeline]
    if not lines:
        return []
    fig, ax = plt.subplots(figsize=(8, 4))
    for r in lines:
        t0 = r.timeline[0][0]
        ax.plot([(p[0] - t0) / 1e3 for p in r.timeline], [p[1] / 2**20 for p in r.timeline],
                label=f"rank {rank_label(r.rank)} ({r.source})")
    ax.set_xlabel("ms from the first sample")
    ax.set_ylabel("allocated MiB")
    ax.set_title("Memory over time")
    ax.legend(fontsize=7)
    return [("memory", _svg(fig))]


def _table(rows: Sequence[Row | dict[str, Any]], columns: list[str]) -> str:
    """Rows as an HTML table of ``columns`` (their ``--json`` keys: a column a row does not have
    is a ``KeyError``, never an empty cell)."""
    if not rows:
        return "<p>None.</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for row in rows:
        r = row.json() if isinstance(row, Row) else row
        cells = []
        for c in columns:
            v = r[c]
            text = f"{v:,.3f}" if isinstance(v, float) else "" if v is None else str(v)
            cells.append(f"<td>{_esc(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _answers(answers: Answers) -> str:
    """The verdict, what to run next and the findings: the top of the report."""
    esc = _esc
    rows = "".join(f"<tr><th>{esc(label)}</th><td>{esc(text)}</td></tr>"
                   for label, text in answers.verdict.lines())
    out = f"<section id='verdict'><h2>Verdict</h2><table class='verdict'>{rows}</table>"
    for n in answers.verdict.next:
        out += (f"<p class='next'><b>Next ({esc(n.kind)})</b>: {esc(n.why)}<br>"
                f"<code>{esc(n.command)}</code></p>")
    out += "</section>"
    if answers.findings:
        items = "".join(
            f"<li class='{esc(f.severity)}'><b>[{esc(f.severity)}] {esc(f.title)}</b>"
            + (f"<br>{esc(f.detail)}" if f.detail else "")
            + (f"<br><i>{esc(f.suggestion)}</i>" if f.suggestion else "")
            + (f"<br><small>from {esc(f.source)}</small>" if f.source else "") + "</li>"
            for f in answers.findings)
        out += f"<section id='findings'><h2>Findings</h2><ul>{items}</ul></section>"
    return out


def write_report(result: Analysis, path: Path, answers: Answers | None = None) -> Path:
    """Write the HTML report for ``result`` to ``path``; every name from a trace is escaped."""
    esc = _esc
    parts = [f"<!doctype html><html><head><meta charset='utf-8'>"
             f"<title>mindspeed-prof: {esc(str(result.root))}</title><style>{_CSS}</style>"
             f"</head><body><h1>mindspeed-prof report</h1><p>{esc(str(result.root))}: "
             f"{len(result.traces)} captures, ranks {esc(str(result.ranks))}</p>",
             _answers(answers or Answers(result))]
    for name, svg in _charts(result):
        parts.append(f"<figure id='{name}'>{svg}</figure>")
    from mindspeed_prof.views.gantt import gantt_svg

    if gantt := gantt_svg(result.ranges):
        parts.append(f"<h2>Stages by rank and step (Gantt)</h2><figure id='gantt'>{gantt}</figure>")
    parts.append("<h2>Stage by rank</h2>" + _table(
        result.stage_rank(), ["stage", "rank", "count", "total_ms", "mean_ms", "max_ms"]))
    steps = result.per_step()
    stages = list(dict.fromkeys(k for r in steps for k in r.stages))
    total = ["total"] if any(r.total is not None for r in steps) else []
    parts.append("<h2>Per step (ms)</h2>" + _table(
        [{**r.json(), "total": r.total, **{s: r.stages.get(s) for s in stages}} for r in steps],
        ["rank", "step", *total, *stages, "warmup"]))
    parts.append(f"<h2>Stragglers (&gt; median + {result.margin:.0%})</h2>" + _table(
        result.stragglers(), ["stage", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"]))
    parts.append("<h2>Custom ranges</h2>" + _table(
        result.range_table(), ["name", "rank", "stage", "count", "total_ms", "self_ms",
                               "mean_ms", "p95_ms", "max_ms"]))
    parts.append(f"<h2>Range stragglers (&gt; median + {result.margin:.0%})</h2>" + _table(
        result.stragglers("range"),
        ["range", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"]))
    device = [{**msgspec.to_builtins(r), "step": step_label(r.step)} for r in result.device()]
    parts.append("<h2>Device time (ms)</h2>" + (_table(device, [
        "rank", *(["source"] if any(r["source"] for r in device) else []), "step", "stage",
        "warmup", "span_ms", "busy_ms", "compute_ms", "comm_ms", "overlap_ms", "memcpy_ms",
        "idle_ms"]) if device else f"<p>{esc(no_device_text(result.unread_device()))}</p>"))
    parts.append("<h2>Top host ops by self time</h2>" + _table(result.top_ops(25),
                                                               ["op", "count", "self_ms"]))
    parts.append("<h2>Top device kernels by device time</h2>" + _table(
        result.top_kernels(25), ["name", "count", "device_ms"]))
    parts.append("<h2>Top runtime/launch calls</h2>" + _table(result.top_runtime(25),
                                                              ["name", "count", "ms"]))
    memory = result.memory()
    parts.append("<h2>Memory peaks (bytes)</h2>" + _table(
        memory, ["rank", "stage", "source", "peak_allocated_bytes", "peak_reserved_bytes",
                 "file"]))
    allocs = [{"rank": m.rank, "op": o.op, "count": o.count, "bytes": o.bytes}
              for m in memory for o in m.top_ops]
    if allocs:
        parts.append("<h2>Top allocating operators</h2>" + _table(
            allocs, ["rank", "op", "count", "bytes"]))
    parts.append("<h2>Inventory</h2>" + _table(
        result.inventory(), ["file", "kind", "rank", "group", "bytes", "events", "steps", "level"]))
    notes = [f"<li>{esc(w)}</li>" for w in result.warnings()]
    notes += [f"<li class='bad'>skipped: {esc(result.shown(b))}</li>" for b in result.bad]
    notes += [f"<li>note: {esc(result.shown(n))}</li>" for n in result.notes()]
    if notes:
        parts.append("<h2>Warnings</h2><ul>" + "".join(notes) + "</ul>")
    parts.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
