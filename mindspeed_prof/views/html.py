"""``--html``: a self-contained report (inline SVG charts; opens without network, runs nothing).

What a person reads first is on top: the verdict's sentences, what to run next and the findings
(one line each, the detail and the suggestion folded in a ``<details>``). Then the charts and
the tables. Every chart draws a stage in the one colour ``palette.stage_colours`` gives it; an
axis shows every k-th label, the smallest k under which no two labels overlap; legends sit
outside the plot and inside the picture. Charts scale down to the page (``viewBox``, at most
their natural size); tables sit in wrappers that scroll sideways when a narrow window cannot
hold them, and long names wrap.
"""

from __future__ import annotations

import html
import io
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from mindspeed_prof.analysis.analyse import Analysis
from mindspeed_prof.analysis.device_scope import parts as device_parts
from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.model import WHOLE, rank_label, rank_order, step_label
from mindspeed_prof.analysis.report import Answers
from mindspeed_prof.analysis.rows import DeviceRow, Row, StepRow
from mindspeed_prof.views.palette import DEVICE_COLOURS, stage_colours, stage_order
from mindspeed_prof.views.safe import printable
from mindspeed_prof.views.text import no_device_text

__all__ = ["FONT_PT", "MAX_BARS", "WRAP", "gid", "write_report"]

#: The smallest font in a chart (points, at the chart's natural size).
FONT_PT = 9
#: Table columns whose cells may wrap (names, files); every other cell stays on one line.
WRAP = frozenset({"stage", "name", "op", "file", "range", "source", "group", "steps"})
_MAX_COLUMNS = 16
#: Fonts for names in Chinese or Japanese, where one is installed (matplotlib falls back on
#: them glyph by glyph).
_CJK = ("Noto Sans CJK SC", "Noto Sans CJK JP", "Noto Sans SC", "Source Han Sans SC",
        "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback", "AR PL UMing CN",
        "Microsoft YaHei", "SimHei", "PingFang SC")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ID = re.compile(r"""(\bid=["']|xlink:href=["']#|\bhref=["']#|url\(#)""")
#: More bars than this (rank/step pairs) and a per-step chart shows each step's mean over ranks.
MAX_BARS = 48
_NAME_CHARS = 48  # longest name on a chart's axis or legend; the tables hold the whole name

_CSS = """*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0 auto;padding:1em 1.5em;max-width:1240px;
color:#222;line-height:1.4}
h1{margin:.2em 0;font-size:1.6em}h2{margin:1.4em 0 .4em;font-size:1.25em}
.root{color:#555;overflow-wrap:anywhere;margin:.2em 0 1em}
.headline{border-left:6px solid #0072B2;background:#f4f7fb;padding:.6em 1.2em .8em;margin:0}
.headline h2{margin:.2em 0 .5em}
.verdict{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25em 1em;margin:0}
.verdict dt{font-weight:600;color:#555;font-size:.85em;text-transform:uppercase;
padding-top:.15em}
.verdict dd{margin:0;overflow-wrap:anywhere}
.verdict dd.lead{font-size:1.3em;font-weight:600;line-height:1.25}
.next{margin:.7em 0 0}.next p{margin:.3em 0}
code{font-size:.9em;background:#eaeef3;padding:.1em .3em;white-space:pre-wrap;
overflow-wrap:anywhere}
ul.findings{list-style:none;padding:0;margin:.3em 0}
.findings li{border-left:4px solid #999;padding:.25em .7em;margin:.35em 0;background:#fafafa;
overflow-wrap:anywhere}
.findings li.high{border-color:#b00020}.findings li.medium{border-color:#c77700}
.findings li.low{border-color:#777}
.sev{display:inline-block;min-width:4.8em;text-align:center;border-radius:3px;color:#fff;
font-size:.8em;font-weight:600;padding:0 .4em;margin-right:.5em;background:#777}
.sev.high{background:#b00020}.sev.medium{background:#b36b00}
.findings summary{cursor:pointer}.findings li>.sev{margin-left:1.2em}
.findings .more{margin:.3em 0 .2em 1.2em}
.findings .more p{margin:.25em 0}.impact{color:#555;white-space:nowrap}
figure{margin:1em 0;max-width:100%}
figcaption{font-weight:600;margin-bottom:.3em}
svg{display:block;max-width:100%;height:auto}
.tbl{max-width:100%;overflow-x:auto;margin:.6em 0}
table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap;
vertical-align:top}
th{background:#f3f3f3;white-space:normal;min-width:3em}
td:first-child,th:first-child{text-align:left}
.bad{color:#b00}.empty{color:#555;font-size:.9em;margin-top:-.3em}
li{overflow-wrap:anywhere}
@media (max-width:960px){body{padding:.6em .8em}
td,th{padding:3px 5px;font-size:.9em}.verdict dd.lead{font-size:1.15em}}
@media (max-width:640px){.verdict{grid-template-columns:minmax(0,1fr)}}
""" + "\n".join(f".w{i} td:nth-child({i}){{white-space:normal;overflow-wrap:anywhere;"
                f"min-width:7em}}.w{i} td:nth-child({i}),.w{i} th:nth-child({i}){{"
                "text-align:left}" for i in range(1, _MAX_COLUMNS + 1))


def _esc(text: str) -> str:
    """Text for the page: HTML-escaped, control and direction characters written as escapes."""
    return html.escape(printable(text))


def _short(text: str, n: int = _NAME_CHARS) -> str:
    """A name as a chart shows it: printable, at most ``n`` characters."""
    text = printable(text)
    return text if len(text) <= n else text[:n - 1] + "…"


def gid(kind: str, name: str, i: int = 0) -> str:
    """The id of the ``i``-th element of ``kind`` drawn for ``name`` (a stage, a part): the
    name in hex, so any name makes a safe id and the id gives the name back."""
    return f"{kind}-{name.encode('utf-8', 'replace').hex()}-{i}"


def _svg(fig: Any, name: str) -> str:
    """``fig`` as inline SVG, its ids prefixed with ``name`` (one page holds several charts)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: inline SVG in HTML
    # matplotlib repeats each label in an XML comment; a name holding "-->" could end it early.
    text = _COMMENT.sub("", text)
    return _ID.sub(lambda m: f"{m.group(1)}{name}-", text)


def _thin(fig: Any, labels: Sequence[Any], pad: float = 2.0) -> int:
    """Hide all but every k-th of ``labels`` (an axis's tick labels, in order along it), the
    smallest k under which no two shown labels overlap; return k."""
    shown = [t for t in labels if t.get_text()]
    if len(shown) < 2:
        return 1
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in shown]

    def apart(a: Any, b: Any) -> bool:
        return (a.x1 + pad <= b.x0 or b.x1 + pad <= a.x0 or a.y1 + pad <= b.y0
                or b.y1 + pad <= a.y0)

    k = next((k for k in range(1, len(boxes)) if all(
        apart(a, b) for a, b in zip(boxes[::k], boxes[k::k]))), len(boxes))
    for i, t in enumerate(shown):
        t.set_visible(i % k == 0)
    return k


def _legend(ax: Any, handles: list[Any], labels: list[str]) -> None:
    """A legend right of the plot (inside the picture: the SVG's box is fitted to it)."""
    ax.legend(handles, labels, fontsize=FONT_PT, loc="upper left", bbox_to_anchor=(1.01, 1),
              borderaxespad=0, frameon=False, ncol=1 if len(labels) <= 16 else 2)


def _bar_labels(fig: Any, ax: Any, labels: list[str]) -> None:
    """Bar labels along x: upright when short, else turned a quarter; then thinned."""
    turn = any(len(t) > 4 for t in labels)
    ax.set_xticks(range(len(labels)), labels, fontsize=FONT_PT,
                  rotation=90 if turn else 0)
    fig.draw_without_rendering()
    _thin(fig, ax.get_xticklabels())


def _width(n: int, per: float = 0.32, least: float = 5.0, most: float = 8.5) -> float:
    return min(max(least, 1.5 + per * n), most)


def _charts(result: Analysis, colours: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(id, caption, SVG) of each chart that has something to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    rc: Any = {"svg.fonttype": "path",  # text as paths: no fonts, nothing to inject
               "svg.hashsalt": "mindspeed-prof",  # the same ids on every run
               "font.size": FONT_PT + 1,
               "font.sans-serif": ["DejaVu Sans", *(f for f in _CJK if f in installed),
                                   *matplotlib.rcParams["font.sans-serif"]]}
    with matplotlib.rc_context(rc), warnings.catch_warnings():
        # a name in a script no installed font holds is drawn as boxes (the tables have it)
        warnings.filterwarnings("ignore", "Glyph .* missing from font")
        return _draw(result, colours, plt)


def _draw(result: Analysis, colours: Mapping[str, str], plt: Any) -> list[tuple[str, str, str]]:
    charts = []
    if heat := _heatmap(result, colours, plt):
        charts.append(("heatmap", "Stage by rank: mean ms per execution", heat))
    steps, what = _timeline(result, colours, plt)
    if steps:
        charts.append(("timeline", f"Stages per step (ms; {what})", steps))
    ops = result.top_ops(15)
    if ops:
        fig, ax = plt.subplots(figsize=(7.5, 0.3 * len(ops) + 0.8))
        ax.barh([_short(o.op, 60) for o in ops][::-1], [o.self_ms for o in ops][::-1],
                color="#4B5D9C")
        ax.tick_params(axis="y", labelsize=FONT_PT)
        ax.set_xlabel("self ms")
        charts.append(("top_ops", "Top host ops by self time (ms)", _svg(fig, "top_ops")))
    device, what = _device_chart(result, plt)
    if device:
        charts.append(("device", f"Device time per step (ms; {what})", device))
    if memory := _memory_chart(result, plt):
        charts.append(("memory", "Memory over time (allocated MiB)", memory))
    return charts


def _heatmap(result: Analysis, colours: Mapping[str, str], plt: Any) -> str:
    """Mean ms per stage (row) and rank (column); each row's tick in its stage's colour."""
    rows = result.stage_rank()
    if not rows:
        return ""
    stages = stage_order(r.stage for r in rows)
    ranks = sorted({(r.rank, r.source) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    grid = [[0.0] * len(ranks) for _ in stages]
    for r in rows:
        grid[stages.index(r.stage)][ranks.index((r.rank, r.source))] = r.mean_ms
    fig, ax = plt.subplots(figsize=(_width(len(ranks), 0.9, 4.0, 8.0), 0.9 + 0.42 * len(stages)))
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(ranks)), [_short(f"rank {rank_label(*k)}", 24) for k in ranks],
                  fontsize=FONT_PT)
    ax.set_yticks(range(len(stages)), [_short(s) for s in stages], fontsize=FONT_PT)
    ax.tick_params(axis="y", length=9, width=7)
    for tick, s in zip(ax.yaxis.get_major_ticks(), stages):
        tick.tick1line.set_markeredgecolor(colours[s])
        tick.tick1line.set_gid(gid("swatch", s))
    top = max(max(r) for r in grid) or 1.0
    notes = [ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=FONT_PT,
                     color="black" if v > 0.6 * top else "white", gid=gid("cell", stages[i], j))
             for i, row in enumerate(grid) for j, v in enumerate(row)]
    fig.colorbar(im, label="mean ms")
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    cell = ax.get_window_extent(renderer)
    w, h = cell.width / len(ranks), cell.height / len(stages)
    if any(t.get_window_extent(renderer).width > 0.9 * w
           or t.get_window_extent(renderer).height > 0.9 * h for t in notes):
        for t in notes:  # the cells are too small for their numbers: the table has them
            t.remove()
    _thin(fig, ax.get_xticklabels())
    return _svg(fig, "heatmap")


def _per_step(rows: Sequence[Any], parts: Sequence[tuple[str, Callable[[Any], float]]]
              ) -> tuple[list[str], dict[str, list[float]], str]:
    """The bars of a stacked chart of ``rows`` (rank/step rows): one per rank and step, or,
    when that makes more than ``MAX_BARS`` bars and there are several ranks, one per step with
    the mean over ranks. Returns the bar labels, each part's values and what a bar is."""
    ranks = {(r.rank, r.source) for r in rows}
    if len(rows) <= MAX_BARS or len(ranks) < 2:
        labels = [_short(f"r{rank_label(r.rank, r.source)}", 24)
                  + f"/s{r.step}{'w' if r.warmup else ''}" for r in rows]
        return labels, {name: [max(f(r), 0.0) for r in rows] for name, f in parts}, (
            "bars: rank/step, w = warmup")
    by_step: dict[int, list[Any]] = {}
    for r in rows:
        by_step.setdefault(r.step, []).append(r)
    steps = sorted(by_step)
    values = {name: [sum(max(f(r), 0.0) for r in by_step[s]) / len(by_step[s]) for s in steps]
              for name, f in parts}
    labels = [f"{s}{'w' if all(r.warmup for r in by_step[s]) else ''}" for s in steps]
    return labels, values, f"bars: steps, each the mean over {len(ranks)} ranks; w = warmup"


def _stacked(plt: Any, name: str, labels: list[str], values: dict[str, list[float]],
             colours: Mapping[str, str], ylabel: str) -> str:
    """Stacked bars, a part a colour, each bar's id naming its part (``gid``)."""
    fig, ax = plt.subplots(figsize=(_width(len(labels)), 3.6))
    bottom = [0.0] * len(labels)
    handles = []
    for part, vals in values.items():
        bars = ax.bar(range(len(labels)), vals, bottom=bottom, color=colours[part], width=0.8)
        for i, patch in enumerate(bars.patches):
            patch.set_gid(gid("bar", part, i))
        handles.append(bars)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel(ylabel)
    _legend(ax, handles, [_short(p) for p in values])
    _bar_labels(fig, ax, labels)
    return _svg(fig, name)


def _timeline(result: Analysis, colours: Mapping[str, str], plt: Any) -> tuple[str, str]:
    """A stacked bar per rank and step, a stage a colour; and what a bar is."""
    steps = result.per_step()
    stage_keys = stage_order(k for row in steps for k in row.stages)
    if not steps or not stage_keys:
        return "", ""
    def part(stage: str) -> Callable[[StepRow], float]:
        return lambda r: r.stages.get(stage, 0.0)

    labels, values, what = _per_step(steps, [(s, part(s)) for s in stage_keys])
    return _stacked(plt, "timeline", labels, values, colours, "ms"), what


def _device_chart(result: Analysis, plt: Any) -> tuple[str, str]:
    """A stacked bar per rank and step: compute, overlap, communication, copy, idle (a CUDA
    bar is its step's span: ``device_scope.parts``)."""
    rows = [r for r in result.device() if r.stage is None and r.step is not None]
    if not rows:
        return "", ""
    parts: list[tuple[str, Callable[[DeviceRow], float]]] = [
        ("compute only", lambda r: r.compute_ms - r.overlap_ms),
        ("comm during compute", lambda r: r.overlap_ms),
        ("comm only", lambda r: device_parts(r)["communication"]),
        ("copy only", lambda r: device_parts(r)["copy"]),  # none where not split out
        ("idle", lambda r: r.idle_ms)]
    labels, values, what = _per_step(rows, parts)
    return _stacked(plt, "device", labels, values, DEVICE_COLOURS, "device ms"), what


def _memory_chart(result: Analysis, plt: Any) -> str:
    """Allocated bytes over time, a line per capture (rank) that has a timeline."""
    lines = [r for r in result.memory() if r.stage is None and r.timeline]
    if not lines:
        return ""
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    handles = []
    for r in lines:
        t0 = r.timeline[0][0]
        handles += ax.plot([(p[0] - t0) / 1e3 for p in r.timeline],
                           [p[1] / 2**20 for p in r.timeline])
    ax.set_xlabel("ms from the first sample")
    ax.set_ylabel("allocated MiB")
    ax.tick_params(labelsize=FONT_PT)
    _legend(ax, handles, [_short(f"rank {rank_label(r.rank)} ({r.source})") for r in lines])
    return _svg(fig, "memory")


def _header(column: str) -> str:
    """A column's name, breakable after its underscores."""
    return _esc(column).replace("_", "_<wbr>")


def _cell(v: Any) -> str:
    return f"{v:,.3f}" if isinstance(v, float) else "" if v is None else str(v)


def _table(rows: Sequence[Row | dict[str, Any]], columns: list[str],
           quiet: Iterable[str] = ("source",)) -> str:
    """Rows as an HTML table of ``columns`` (their ``--json`` keys: a column a row does not have
    is a ``KeyError``, never an empty cell), in a wrapper that scrolls when the page is too
    narrow; name columns (``WRAP``) wrap. A column empty in every row is left out, and named
    under the table unless it is ``quiet``."""
    if not rows:
        return "<p>None.</p>"
    dicts = [row.json() if isinstance(row, Row) else row for row in rows]
    cells = {c: [_cell(r[c]) for r in dicts] for c in columns}
    empty = [c for c in columns if not any(cells[c])]
    shown = [c for c in columns if c not in empty] or columns
    head = "".join(f"<th>{_header(c)}</th>" for c in shown)
    body = "".join("<tr>" + "".join(f"<td>{_esc(cells[c][i])}</td>" for c in shown) + "</tr>"
                   for i in range(len(dicts)))
    wrap = "".join(f" w{i}" for i, c in enumerate(shown, 1) if c in WRAP and i <= _MAX_COLUMNS)
    said = [c for c in empty if c not in set(quiet) and c not in shown]
    note = (f"<p class='empty'>Empty in every row, left out: {_esc(', '.join(said))}.</p>"
            if said else "")
    return f"<div class='tbl{wrap}'><table><tr>{head}</tr>{body}</table></div>{note}"


def _lines(text: str) -> str:
    """A text of several lines, each escaped, kept apart."""
    return "<br>".join(_esc(line) for line in text.splitlines())


def _finding(f: Finding) -> str:
    """One line: the severity, the title and the time at stake; the detail, the suggestion and
    where the numbers came from folded under it."""
    sev = _esc(f.severity)
    impact = (f" <span class='impact'>({f.impact_ms:,.1f} ms per step)</span>"
              if f.impact_ms else "")
    line = f"<span class='sev {sev}'>{sev}</span><b>{_esc(f.title)}</b>{impact}"
    more = []
    if f.detail:
        more.append(f"<p>{_lines(f.detail)}</p>")
    if f.suggestion:
        more.append(f"<p><b>Suggestion:</b> {_lines(f.suggestion)}</p>")
    seen = ", ".join(rank_label(r) for r in f.ranks)
    where = "; ".join(p for p in (f"from {f.source}" if f.source else "",
                                  f"ranks {seen}" if seen else "") if p)
    if where:
        more.append(f"<p><small>{_esc(where)}</small></p>")
    if not more:
        return f"<li class='{sev}'>{line}</li>"
    return (f"<li class='{sev}'><details><summary>{line}</summary>"
            f"<div class='more'>{''.join(more)}</div></details></li>")


def _answers(answers: Answers) -> str:
    """The verdict, what to run next and the findings: the top of the report."""
    esc = _esc
    lines = answers.verdict.lines()
    items = "".join(f"<dt>{esc(label)}</dt><dd{' class=lead' if i == 0 else ''}>{esc(text)}</dd>"
                    for i, (label, text) in enumerate(lines))
    out = ("<section id='verdict' class='headline'><h2>Verdict</h2>"
           + (f"<dl class='verdict'>{items}</dl>" if items else
              "<p>No verdict: these captures hold no steps, stages or device time.</p>"))
    if answers.verdict.next:
        out += "<div class='next'><b>Next</b>" + "".join(
            f"<p>{esc(n.kind)}: {esc(n.why)}<br><code>{esc(n.command)}</code></p>"
            for n in answers.verdict.next) + "</div>"
    out += "</section>"
    items = "".join(_finding(f) for f in answers.findings)
    out += ("<section id='findings'><h2>Findings</h2>"
            + (f"<ul class='findings'>{items}</ul>" if items else
               "<p>None: no rule found anything to say about these captures.</p>")
            + "</section>")
    return out


def _stage_names(result: Analysis) -> Iterable[str]:
    return (r.name for r in result.ranges if r.kind == "stage")


def write_report(result: Analysis, path: Path, answers: Answers | None = None) -> Path:
    """Write the HTML report for ``result`` to ``path``; every name from a trace is escaped."""
    esc = _esc
    answers = answers or Answers(result)
    colours = stage_colours(_stage_names(result))
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width,initial-scale=1'>"
             f"<title>mindspeed-prof: {esc(str(result.root))}</title><style>{_CSS}</style>"
             f"</head><body><h1>mindspeed-prof report</h1><p class='root'>"
             f"{esc(str(result.root))}: {len(result.traces)} captures, ranks "
             f"{esc(str(result.ranks))}</p>", _answers(answers)]
    for name, caption, svg in _charts(result, colours):
        parts.append(f"<figure id='{name}'><figcaption>{esc(caption)}</figcaption>{svg}"
                     "</figure>")
    from mindspeed_prof.views.gantt import gantt_svg

    if gantt := gantt_svg(result.ranges, colours=colours):
        parts.append(f"<h2>Stages by rank and step (Gantt)</h2><figure id='gantt'>{gantt}</figure>")
    parts.append("<h2>Stage by rank</h2>" + _table(
        result.stage_rank(), ["stage", "rank", "source", "count", "total_ms", "mean_ms",
                              "max_ms"]))
    steps = result.per_step()
    stages = stage_order(k for r in steps for k in r.stages)
    parts.append("<h2>Per step (ms)</h2>" + _table(
        [{**r.json(), "total": r.total, **{s: r.stages.get(s) for s in stages}} for r in steps],
        ["rank", "source", "step", "total", *stages, "warmup"], quiet=("source", "total")))
    parts.append(f"<h2>Stragglers (&gt; median + {result.margin:.0%})</h2>" + _table(
        result.stragglers(), ["stage", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"]))
    from mindspeed_prof.views.counted_html import counted_sections

    parts.extend(counted_sections(result, _table, _esc))
    parts.append("<h2>Custom ranges</h2>" + _table(
        result.range_table(), ["name", "rank", "stage", "count", "total_ms", "self_ms",
                               "mean_ms", "p95_ms", "max_ms"]))
    parts.append(f"<h2>Range stragglers (&gt; median + {result.margin:.0%})</h2>" + _table(
        result.stragglers("range"),
        ["range", "step", "rank", "ms", "median_ms", "excess_ms", "ratio"]))
    device = [{**msgspec.to_builtins(r), "step": WHOLE if r.whole else step_label(r.step)}
              for r in result.device()]
    parts.append("<h2>Device time (ms)</h2>" + (_table(device, [
        "rank", "source", "step", "stage",
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
    notes += [f"<li>note: {esc(result.shown(n))}</li>" for n in [*result.notes(), *answers.notes]]
    if notes:
        parts.append("<h2>Warnings</h2><ul>" + "".join(notes) + "</ul>")
    parts.append("</body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
