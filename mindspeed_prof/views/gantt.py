"""A Gantt picture as self-contained SVG: one row per rank, stages as coloured bars by step.

Ranks run on their own clocks, so each step is drawn from its start on every rank: step N is a
column as wide as its slowest rank, and a rank's stages sit where they ran inside its step.
A longer bar is a straggler, a gap between bars a bubble.

The picture scales to its container (``viewBox``) and never draws text over text: a step's
label is the longest of ``step N (X ms)``, ``step N`` and ``N`` that fits its column, none where
nothing fits (every column says it in a tooltip); rank names and legend entries too long for
their place are cut with an ellipsis (the whole name in a tooltip), and the legend wraps onto
as many lines as it needs.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Iterable, Mapping
from html import escape
from typing import NamedTuple, Optional

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.views.palette import stage_colours, stage_order
from mindspeed_prof.views.safe import printable

__all__ = ["FONT", "ROW", "gantt_svg", "text_width"]

#: Font size, row height, the gap between step columns and around the legend (SVG units).
FONT, ROW, GAP = 12, 20, 6
_Key = tuple[Optional[int], str, Optional[int]]  # rank, source, step
_Row = tuple[Optional[int], str]  # rank, source
_NARROW = set("fijlrt.,:;'|!()[] -/\\")  # at most 0.42 em
_WIDE = set("mwMW@%#&+<=>^~…")  # up to 1 em


def text_width(text: str, size: float = FONT) -> float:
    """An upper bound of ``text``'s width at ``size`` in the wide sans-serif fonts browsers
    fall back to (DejaVu Sans: digits 0.64 em, ``m`` 0.97 em, ``W`` 0.99 em; East Asian wide
    characters 1 em)."""
    em = 0.0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        if unicodedata.east_asian_width(ch) in "WF" or ch in _WIDE:
            em += 1.0
        elif ch in _NARROW:
            em += 0.42
        elif ch.isupper():
            em += 0.8
        else:
            em += 0.66
    return em * size


def _fit(text: str, room: float, size: float = FONT) -> str:
    """``text``, or as much of it as fits ``room`` followed by an ellipsis."""
    if text_width(text, size) <= room:
        return text
    while text and text_width(text + "…", size) > room:
        text = text[:-1]
    return text + "…" if text else ""


def _label(text: str, room: float, x: float, y: float, anchor: str = "start") -> str:
    """A ``<text>`` of ``text`` cut to ``room``; a tooltip holds the whole of it when cut."""
    shown = _fit(text, room)
    tip = f"<title>{escape(text)}</title>" if shown != text else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{tip}{escape(shown)}</text>'


class _Spans(NamedTuple):
    """Each (rank, source, step)'s start and end, and the stage ranges of a step."""

    starts: dict[_Key, float]
    ends: dict[_Key, float]
    stages: list[Range]


class _Layout(NamedTuple):
    """Where things go: the steps shown, the rows (rank, source) and their names, the width
    of the name column, each step's longest span and its column's left edge, us -> units."""

    shown: list[int]
    rows: list[_Row]
    names: dict[_Row, str]
    label: float
    longest: dict[int, float]
    left: dict[int, float]
    scale: float


def _spans(ranges: Iterable[Range]) -> _Spans:
    """The step spans; where a step has no step range (a stage-scoped capture), its stages'."""
    starts: dict[_Key, float] = {}
    ends: dict[_Key, float] = {}
    stages = []
    for r in ranges:
        if r.step is None:
            continue
        key: _Key = (r.rank, r.source, r.step)
        if r.kind == "step":
            starts[key], ends[key] = r.ts, r.ts + r.dur
        elif r.kind == "stage":
            stages.append(r)
    for r in stages:
        key = (r.rank, r.source, r.step)
        if key not in starts or key not in ends:
            starts[key] = min(starts.get(key, r.ts), r.ts)
            ends[key] = max(ends.get(key, r.ts + r.dur), r.ts + r.dur)
    return _Spans(starts, ends, stages)


def _shown_steps(spans: _Spans, first: int | None, steps: int) -> list[int]:
    """``steps`` steps from ``first`` (default: the first captured)."""
    all_steps = sorted({k[2] for k in spans.starts if k[2] is not None})
    if not all_steps:
        return []
    first = all_steps[0] if first is None else first
    return [s for s in all_steps if s >= first][:steps]


def _layout(spans: _Spans, shown: list[int], width: int) -> _Layout:
    """Step ``N`` is a column as wide as its slowest rank, after a column of rank names."""
    starts, ends = spans.starts, spans.ends
    rows = sorted(
        {(k[0], k[1]) for k in starts if k[2] in shown}, key=lambda rs: (rank_order(rs[0]), rs[1])
    )
    names = {(rank, source): f"rank {printable(rank_label(rank, source))}" for rank, source in rows}
    label = min(max(text_width(n) for n in names.values()) + 2 * GAP, 0.3 * width)
    longest = {s: max(ends[k] - starts[k] for k in starts if k[2] == s) or 1.0 for s in shown}
    scale = ratio(width - label - GAP * len(shown), sum(longest.values()), 1.0)
    left = {}
    x = label
    for s in shown:
        left[s] = x
        x += longest[s] * scale + GAP
    return _Layout(shown, rows, names, label, longest, left, scale)


def _step_heads(lay: _Layout) -> list[str]:
    """Each step's label, the longest form that fits its column, and its tooltip."""
    out = []
    for s in lay.shown:
        room = math.floor((lay.longest[s] * lay.scale + GAP - 2) * 10) / 10  # as the SVG says
        ms = lay.longest[s] / 1000
        text = next(
            (t for t in (f"step {s} ({ms:,.1f} ms)", f"step {s}", f"{s}") if text_width(t) <= room),
            "",
        )
        out.append(
            f'<rect x="{lay.left[s]:.1f}" y="0" width="{room:.1f}" height="{ROW}" '
            f'fill="#fff" fill-opacity="0" data-step="{s}"><title>step {s}: '
            f"{ms:,.1f} ms on its slowest rank</title></rect>"
        )
        if text:
            out.append(f'<text x="{lay.left[s]:.1f}" y="{ROW - 6}">{escape(text)}</text>')
    return out


def _rank_rows(lay: _Layout, spans: _Spans) -> list[str]:
    """Each rank's name and a grey bar per step it ran."""
    out = []
    for i, rs in enumerate(lay.rows):
        y = ROW * (i + 1)
        out.append(_label(lay.names[rs], lay.label - GAP, 0, y + ROW - 6))
        for s in lay.shown:
            key = (rs[0], rs[1], s)
            if key in spans.starts:
                w = (spans.ends[key] - spans.starts[key]) * lay.scale
                out.append(
                    f'<rect x="{lay.left[s]:.1f}" y="{y + 3}" width="{w:.1f}" '
                    f'height="{ROW - 6}" fill="#eeeeee"/>'
                )
    return out


def _stage_bars(
    drawn: list[tuple[Range, int]], lay: _Layout, spans: _Spans, colours: Mapping[str, str]
) -> list[str]:
    """A bar per stage where it ran inside its step, with a tooltip."""
    row_of = {rs: i for i, rs in enumerate(lay.rows)}
    out = []
    for r, step in drawn:
        colour = colours[r.name] or stage_colours([r.name])[r.name]
        x0 = lay.left[step] + (r.ts - spans.starts[(r.rank, r.source, step)]) * lay.scale
        y = ROW * (row_of[(r.rank, r.source)] + 1)
        out.append(
            f'<rect class="stage" x="{x0:.1f}" y="{y + 3}" '
            f'width="{max(r.dur * lay.scale, 0.5):.1f}" height="{ROW - 6}" '
            f'fill="{colour}"><title>{escape(printable(r.name))}, '
            f"{escape(lay.names[(r.rank, r.source)])}, step {step}: "
            f"{r.dur / 1000:.2f} ms</title></rect>"
        )
    return out


def _legend(
    names: list[str], colours: Mapping[str, str], width: int, y: float
) -> tuple[list[str], float]:
    """The legend from ``y`` down, wrapped at ``width``; and the top of its last line."""
    out = []
    x = 0.0
    for name in names:
        text = _fit(printable(name), width / 2)
        item = 14 + text_width(text)
        if x and x + item > width:
            x, y = 0.0, y + ROW
        out.append(f'<rect x="{x:.1f}" y="{y + 4}" width="10" height="10" fill="{colours[name]}"/>')
        out.append(_label(printable(name), width / 2, x + 14, y + ROW - 6))
        x += item + 2 * GAP
    return out, y


def _all_colours(given: Mapping[str, str] | None, names: list[str]) -> dict[str, str]:
    """``given`` (default: ``palette.stage_colours`` of ``names``), completed for ``names``."""
    colours = dict(given) if given is not None else stage_colours(names)
    for name in names:
        colours.setdefault(name, stage_colours([name])[name])
    return colours


def gantt_svg(
    ranges: Iterable[Range],
    first: int | None = None,
    steps: int = 4,
    width: int = 960,
    colours: Mapping[str, str] | None = None,
) -> str:
    """``steps`` steps from ``first`` (default: the first step captured), one row per rank;
    ``colours``: stage name -> colour (default: ``palette.stage_colours`` of the stages
    drawn; the report passes its own so that every chart agrees)."""
    spans = _spans(ranges)
    shown = _shown_steps(spans, first, steps)
    if not shown:
        return ""
    lay = _layout(spans, shown, width)
    drawn = [
        (r, r.step)
        for r in spans.stages
        if r.step is not None and r.step in lay.left and (r.rank, r.source) in lay.names
    ]
    stage_names = [r.name for r, _ in drawn]
    full = _all_colours(colours, stage_names)
    legend, y = _legend(stage_order(stage_names), full, width, ROW * (len(lay.rows) + 1) + GAP)
    height = y + ROW + GAP if drawn else y
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height:.0f}" '
        f'width="{width}" height="{height:.0f}" font-family="sans-serif" '
        f'font-size="{FONT}">'
    )
    return "\n".join(
        [
            head,
            *_step_heads(lay),
            *_rank_rows(lay, spans),
            *_stage_bars(drawn, lay, spans, full),
            *legend,
            "</svg>",
        ]
    )
