"""A Gantt picture as self-contained SVG: one row per rank, stages as coloured bars by step.

Ranks run on their own clocks, so each step is drawn from its start on every rank: step N is a
column as wide as its slowest rank, and a rank's stages sit where they ran inside its step.
A longer bar is a straggler, a gap between bars a bubble.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Optional

from mindspeed_prof.analysis.readers.model import Range, rank_label, rank_order
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.safe import printable

__all__ = ["gantt_svg"]

#: Colour per stage, in STAGES order (colour-blind safe, Okabe-Ito); other stages grey.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
ROW, LABEL, GAP = 16, 90, 6
_Key = tuple[Optional[int], str, Optional[int]]  # rank, source, step


def gantt_svg(ranges: Iterable[Range], first: int | None = None, steps: int = 4,
              width: int = 900) -> str:
    """``steps`` steps from ``first`` (default: the first step captured), one row per rank."""
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
    for r in stages:  # no step range (a stage-scoped capture): the stages span the step
        key = (r.rank, r.source, r.step)
        if key not in starts or key not in ends:
            starts[key] = min(starts.get(key, r.ts), r.ts)
            ends[key] = max(ends.get(key, r.ts + r.dur), r.ts + r.dur)
    all_steps = sorted({k[2] for k in starts if k[2] is not None})
    if not all_steps:
        return ""
    first = all_steps[0] if first is None else first
    shown = [s for s in all_steps if s >= first][:steps]
    rows = sorted({(k[0], k[1]) for k in starts if k[2] in shown},
                  key=lambda rs: (rank_order(rs[0]), rs[1]))
    longest = {s: max(ends[k] - starts[k] for k in starts if k[2] == s) or 1.0 for s in shown}
    scale = (width - LABEL - GAP * len(shown)) / sum(longest.values())
    left = {}
    x = float(LABEL)
    for s in shown:
        left[s] = x
        x += longest[s] * scale + GAP
    height = ROW * (len(rows) + 3)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">']
    for s in shown:
        out.append(f'<text x="{left[s]:.1f}" y="{ROW - 4}">step {s} '
                   f'({longest[s] / 1000:.1f} ms)</text>')
    row_of = {rs: i for i, rs in enumerate(rows)}
    for (rank, source), i in row_of.items():
        y = ROW * (i + 1)
        out.append(f'<text x="0" y="{y + ROW - 4}">rank {escape(rank_label(rank, source))}'
                   '</text>')
        for s in shown:
            key = (rank, source, s)
            if key in starts:
                w = (ends[key] - starts[key]) * scale
                out.append(f'<rect x="{left[s]:.1f}" y="{y + 2}" width="{w:.1f}" '
                           f'height="{ROW - 4}" fill="#eeeeee"/>')
    colours: dict[str, str] = {}
    for r in stages:
        if r.step not in left or (r.rank, r.source) not in row_of:
            continue
        key = (r.rank, r.source, r.step)
        colour = colours.setdefault(r.name, _colour(r.name))
        x0 = left[r.step] + (r.ts - starts[key]) * scale
        y = ROW * (row_of[(r.rank, r.source)] + 1)
        out.append(f'<rect x="{x0:.1f}" y="{y + 2}" width="{max(r.dur * scale, 0.5):.1f}" '
                   f'height="{ROW - 4}" fill="{colour}"><title>{escape(printable(r.name))}, rank '
                   f'{escape(rank_label(r.rank, r.source))}, step {r.step}: '
                   f'{r.dur / 1000:.2f} ms</title></rect>')
    x, y = float(LABEL), ROW * (len(rows) + 2)
    for name in sorted(colours, key=_order):
        out.append(f'<rect x="{x:.0f}" y="{y - 9}" width="10" height="10" '
                   f'fill="{colours[name]}"/><text x="{x + 14:.0f}" '
                   f'y="{y}">{escape(printable(name))}</text>')
        x += 24 + 7 * len(name)
    out.append("</svg>")
    return "\n".join(out)


def _order(name: str) -> tuple[int, str]:
    return (STAGES.index(name) if name in STAGES else len(STAGES), name)


def _colour(name: str) -> str:
    i = _order(name)[0]
    return PALETTE[i] if i < len(PALETTE) else "#999999"
