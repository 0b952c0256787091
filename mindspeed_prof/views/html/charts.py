"""The report's charts as inline SVG (matplotlib, fonts as paths, stable ids): the stage heatmap,
stages per step, top ops, device time per step and memory over time.

Every chart draws a stage in the one colour ``palette.stage_colours`` gives it; an axis shows
every k-th label, the smallest k under which no two labels overlap; legends sit outside the plot
and inside the picture."""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from mindspeed_prof.analysis.device_scope import parts as device_parts
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.report.tables import Tables
from mindspeed_prof.analysis.rows import DeviceRow, StepRow
from mindspeed_prof.views.palette import DEVICE_COLOURS, stage_order
from mindspeed_prof.views.safe import printable

if TYPE_CHECKING:  # matplotlib is imported when a chart is drawn
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

__all__ = ["FONT_PT", "MAX_BARS", "charts", "gid"]


#: The smallest font in a chart (points, at the chart's natural size).
FONT_PT = 9


#: Fonts for names in Chinese or Japanese, where one is installed (matplotlib falls back on
#: them glyph by glyph).
_CJK = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Noto Sans SC",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "AR PL UMing CN",
    "Microsoft YaHei",
    "SimHei",
    "PingFang SC",
)


_COMMENT = re.compile(r"<!--.*?-->", re.S)


_ID = re.compile(r"""(\bid=["']|xlink:href=["']#|\bhref=["']#|url\(#)""")


#: More bars than this (rank/step pairs) and a per-step chart shows each step's mean over ranks.
MAX_BARS = 48


_NAME_CHARS = 48  # longest name on a chart's axis or legend; the tables hold the whole name


def _short(text: str, n: int = _NAME_CHARS) -> str:
    """A name as a chart shows it: printable, at most ``n`` characters."""
    text = printable(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def gid(kind: str, name: str, i: int = 0) -> str:
    """The id of the ``i``-th element of ``kind`` drawn for ``name`` (a stage, a part): the
    name in hex, so any name makes a safe id and the id gives the name back."""
    return f"{kind}-{name.encode('utf-8', 'replace').hex()}-{i}"


class _RankStep(Protocol):
    """A row of one rank's step (``StepRow``, ``DeviceRow``)."""

    @property
    def rank(self) -> int | None: ...
    @property
    def source(self) -> str: ...
    @property
    def step(self) -> int | None: ...
    @property
    def warmup(self) -> bool: ...


_R = TypeVar("_R", bound=_RankStep)


def _subplots(figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """A figure of one plot (``charts`` has chosen the backend)."""
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


class _AggCanvas(Protocol):
    """An Agg canvas (``charts`` chooses Agg; matplotlib's Agg backend has no types)."""

    def get_renderer(self) -> RendererBase: ...


def _renderer(fig: Figure) -> RendererBase:
    """The renderer that measures ``fig``'s text."""
    return cast("_AggCanvas", fig.canvas).get_renderer()


def _svg(fig: Figure, name: str) -> str:
    """``fig`` as inline SVG, its ids prefixed with ``name`` (one page holds several charts)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML prolog and DOCTYPE: inline SVG in HTML
    # matplotlib repeats each label in an XML comment; a name holding "-->" could end it early.
    text = _COMMENT.sub("", text)
    return _ID.sub(lambda m: f"{m.group(1)}{name}-", text)


def _thin(fig: Figure, labels: Sequence[Text], pad: float = 2.0) -> int:
    """Hide all but every k-th of ``labels`` (an axis's tick labels, in order along it), the
    smallest k under which no two shown labels overlap; return k."""
    shown = [t for t in labels if t.get_text()]
    if len(shown) < 2:
        return 1
    renderer = _renderer(fig)
    boxes = [t.get_window_extent(renderer) for t in shown]

    def apart(a: Bbox, b: Bbox) -> bool:
        return bool(
            a.x1 + pad <= b.x0 or b.x1 + pad <= a.x0 or a.y1 + pad <= b.y0 or b.y1 + pad <= a.y0
        )

    k = next(
        (
            k
            for k in range(1, len(boxes))
            if all(apart(a, b) for a, b in zip(boxes[::k], boxes[k::k]))
        ),
        len(boxes),
    )
    for i, t in enumerate(shown):
        t.set_visible(i % k == 0)
    return k


def _legend(ax: Axes, handles: Sequence[Artist | tuple[Artist, ...]], labels: list[str]) -> None:
    """A legend right of the plot (inside the picture: the SVG's box is fitted to it)."""
    ax.legend(
        handles,
        labels,
        fontsize=FONT_PT,
        loc="upper left",
        bbox_to_anchor=(1.01, 1),
        borderaxespad=0,
        frameon=False,
        ncol=1 if len(labels) <= 16 else 2,
    )


def _bar_labels(fig: Figure, ax: Axes, labels: list[str]) -> None:
    """Bar labels along x: upright when short, else turned a quarter; then thinned."""
    turn = any(len(t) > 4 for t in labels)
    ax.set_xticks(range(len(labels)), labels, fontsize=FONT_PT, rotation=90 if turn else 0)
    fig.draw_without_rendering()
    _thin(fig, ax.get_xticklabels())


def _width(n: int, per: float = 0.32, least: float = 5.0, most: float = 8.5) -> float:
    return min(max(least, 1.5 + per * n), most)


def charts(tables: Tables, colours: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(id, caption, SVG) of each chart that has something to draw."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    sans = [
        "DejaVu Sans",
        *(f for f in _CJK if f in installed),
        *matplotlib.rcParams["font.sans-serif"],
    ]
    with (
        matplotlib.rc_context(
            {
                "svg.fonttype": "path",  # text as paths: nothing to inject
                "svg.hashsalt": "mindspeed-prof",  # the same ids on every run
                "font.size": FONT_PT + 1,
                "font.sans-serif": sans,
            }
        ),
        warnings.catch_warnings(),
    ):
        # a name in a script no installed font holds is drawn as boxes (the tables have it)
        warnings.filterwarnings("ignore", "Glyph .* missing from font")
        return _draw(tables, colours)


def _draw(tables: Tables, colours: Mapping[str, str]) -> list[tuple[str, str, str]]:
    charts = []
    if heat := _heatmap(tables, colours):
        charts.append(("heatmap", "Stage by rank: mean ms per execution", heat))
    steps, what = _timeline(tables, colours)
    if steps:
        charts.append(("timeline", f"Stages per step (ms; {what})", steps))
    ops = tables.top_ops[:15]
    if ops:
        fig, ax = _subplots((7.5, 0.3 * len(ops) + 0.8))
        ax.barh(
            [_short(o.op, 60) for o in ops][::-1], [o.self_ms for o in ops][::-1], color="#4B5D9C"
        )
        ax.tick_params(axis="y", labelsize=FONT_PT)
        ax.set_xlabel("self ms")
        charts.append(("top_ops", "Top host ops by self time (ms)", _svg(fig, "top_ops")))
    device, what = _device_chart(tables)
    if device:
        charts.append(("device", f"Device time per step (ms; {what})", device))
    if memory := _memory_chart(tables):
        charts.append(("memory", "Memory over time (allocated MiB)", memory))
    return charts


def _heatmap(tables: Tables, colours: Mapping[str, str]) -> str:
    """Mean ms per stage (row) and rank (column); each row's tick in its stage's colour."""
    rows = tables.stage_rank
    if not rows:
        return ""
    stages = stage_order(r.stage for r in rows)
    ranks = sorted({(r.rank, r.source) for r in rows}, key=lambda k: (rank_order(k[0]), k[1]))
    grid = [[0.0] * len(ranks) for _ in stages]
    for r in rows:
        grid[stages.index(r.stage)][ranks.index((r.rank, r.source))] = r.mean_ms
    fig, ax = _subplots((_width(len(ranks), 0.9, 4.0, 8.0), 0.9 + 0.42 * len(stages)))
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    ax.set_xticks(
        range(len(ranks)), [_short(f"rank {rank_label(*k)}", 24) for k in ranks], fontsize=FONT_PT
    )
    ax.set_yticks(range(len(stages)), [_short(s) for s in stages], fontsize=FONT_PT)
    ax.tick_params(axis="y", length=9, width=7)
    for tick, s in zip(ax.yaxis.get_major_ticks(), stages):
        tick.tick1line.set_markeredgecolor(colours[s])
        tick.tick1line.set_gid(gid("swatch", s))
    top = max(max(r) for r in grid) or 1.0
    notes = [
        ax.text(
            j,
            i,
            f"{v:.1f}",
            ha="center",
            va="center",
            fontsize=FONT_PT,
            color="black" if v > 0.6 * top else "white",
            gid=gid("cell", stages[i], j),
        )
        for i, row in enumerate(grid)
        for j, v in enumerate(row)
    ]
    fig.colorbar(im, label="mean ms")
    fig.draw_without_rendering()
    renderer = _renderer(fig)
    cell = ax.get_window_extent(renderer)
    w, h = cell.width / len(ranks), cell.height / len(stages)
    if any(
        t.get_window_extent(renderer).width > 0.9 * w
        or t.get_window_extent(renderer).height > 0.9 * h
        for t in notes
    ):
        for t in notes:  # the cells are too small for their numbers: the table has them
            t.remove()
    _thin(fig, ax.get_xticklabels())
    return _svg(fig, "heatmap")


def _per_step(
    rows: Sequence[_R], parts: Sequence[tuple[str, Callable[[_R], float]]]
) -> tuple[list[str], dict[str, list[float]], str]:
    """The bars of a stacked chart of ``rows`` (rank/step rows): one per rank and step, or,
    when that makes more than ``MAX_BARS`` bars and there are several ranks, one per step with
    the mean over ranks. Returns the bar labels, each part's values and what a bar is."""
    ranks = {(r.rank, r.source) for r in rows}
    if len(rows) <= MAX_BARS or len(ranks) < 2:
        labels = [
            _short(f"r{rank_label(r.rank, r.source)}", 24) + f"/s{r.step}{'w' if r.warmup else ''}"
            for r in rows
        ]
        return (
            labels,
            {name: [max(f(r), 0.0) for r in rows] for name, f in parts},
            ("bars: rank/step, w = warmup"),
        )
    by_step: dict[int | None, list[_R]] = {}
    for r in rows:
        by_step.setdefault(r.step, []).append(r)
    steps = sorted(by_step, key=lambda s: -1 if s is None else s)  # a row has a step
    values = {
        name: [sum(max(f(r), 0.0) for r in by_step[s]) / len(by_step[s]) for s in steps]
        for name, f in parts
    }
    labels = [f"{s}{'w' if all(r.warmup for r in by_step[s]) else ''}" for s in steps]
    return labels, values, f"bars: steps, each the mean over {len(ranks)} ranks; w = warmup"


def _stacked(
    name: str,
    labels: list[str],
    values: dict[str, list[float]],
    colours: Mapping[str, str],
    ylabel: str,
) -> str:
    """Stacked bars, a part a colour, each bar's id naming its part (``gid``)."""
    fig, ax = _subplots((_width(len(labels)), 3.6))
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


def _timeline(tables: Tables, colours: Mapping[str, str]) -> tuple[str, str]:
    """A stacked bar per rank and step, a stage a colour; and what a bar is."""
    steps = tables.per_step
    stage_keys = stage_order(k for row in steps for k in row.stages)
    if not steps or not stage_keys:
        return "", ""

    def part(stage: str) -> Callable[[StepRow], float]:
        return lambda r: r.stages.get(stage, 0.0)

    labels, values, what = _per_step(steps, [(s, part(s)) for s in stage_keys])
    return _stacked("timeline", labels, values, colours, "ms"), what


def _device_chart(tables: Tables) -> tuple[str, str]:
    """A stacked bar per rank and step: compute, overlap, communication, copy, idle (a CUDA
    bar is its step's span: ``device_scope.parts``)."""
    rows = [r for r in tables.device if r.stage is None and r.step is not None]
    if not rows:
        return "", ""
    parts: list[tuple[str, Callable[[DeviceRow], float]]] = [
        ("compute only", lambda r: r.compute_ms - r.overlap_ms),
        ("comm during compute", lambda r: r.overlap_ms),
        ("comm only", lambda r: device_parts(r)["communication"]),
        ("copy only", lambda r: device_parts(r)["copy"]),  # none where not split out
        ("idle", lambda r: r.idle_ms),
    ]
    labels, values, what = _per_step(rows, parts)
    return _stacked("device", labels, values, DEVICE_COLOURS, "device ms"), what


def _memory_chart(tables: Tables) -> str:
    """Allocated bytes over time, a line per capture (rank) that has a timeline."""
    lines = [r for r in tables.memory if r.stage is None and r.timeline]
    if not lines:
        return ""
    fig, ax = _subplots((7.0, 3.4))
    handles = []
    for r in lines:
        t0 = r.timeline[0][0]
        handles += ax.plot(
            [(p[0] - t0) / 1e3 for p in r.timeline], [p[1] / 2**20 for p in r.timeline]
        )
    ax.set_xlabel("ms from the first sample")
    ax.set_ylabel("allocated MiB")
    ax.tick_params(labelsize=FONT_PT)
    _legend(ax, handles, [_short(f"rank {rank_label(r.rank)} ({r.source})") for r in lines])
    return _svg(fig, "memory")
