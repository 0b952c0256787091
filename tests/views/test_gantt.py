"""The Gantt picture: a row per rank, stage bars placed inside each step, on any clocks; labels
that fit their place (never over each other), a legend that wraps, a picture that scales."""

from __future__ import annotations

import os
import string
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.gantt import FONT, ROW, gantt_svg, text_width
from mindspeed_prof.views.palette import stage_colours

SVG = "{http://www.w3.org/2000/svg}"


def attr(el: ET.Element, name: str) -> str:
    """An attribute ``el`` must have."""
    value = el.get(name)
    assert value is not None, (el, name)
    return value


def title(el: ET.Element) -> str:
    """The text of the tooltip (the ``<title>`` child) ``el`` must have."""
    tip = el.find(f"{SVG}title")
    assert tip is not None and tip.text is not None, el
    return tip.text


def ranges(rank: int, clock: float, slow: float = 1.0, steps: int = 3) -> list[Range]:
    out = []
    for step in range(1, steps + 1):
        t = clock + step * 100_000.0
        out.append(Range(rank, "step", f"ProfilerStep#{step}", step, t, 90_000.0))
        out.append(Range(rank, "stage", "actor_generate", step, t + 1_000, 40_000.0))
        out.append(Range(rank, "stage", "actor_update", step, t + 42_000, 40_000.0 * slow))
        out.append(Range(rank, "range", "loss", step, t + 43_000, 10.0))
    return out


def bars(svg: str) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(rank label, stage) -> [(x, width)] of the stage bars, read back from the SVG."""
    out: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
        if rect.get("class") == "stage":
            stage, rank, _ = title(rect).split(", ")
            out.setdefault((rank, stage), []).append(
                (float(attr(rect, "x")), float(attr(rect, "width")))
            )
    return out


def texts(svg: str) -> list[tuple[float, float, str, ET.Element]]:
    """(x, baseline y, shown text, element) of every label."""
    out = []
    for t in ET.fromstring(svg).iter(f"{SVG}text"):
        shown = (t.text or "") + "".join(c.tail or "" for c in t)  # less the tooltip
        out.append((float(attr(t, "x")), float(attr(t, "y")), shown, t))
    return out


def size(svg: str) -> tuple[float, float]:
    root = ET.fromstring(svg)
    x, y, w, h = map(float, attr(root, "viewBox").split())
    assert (x, y) == (0, 0) and (w, h) == (float(attr(root, "width")), float(attr(root, "height")))
    return w, h


def test_stragglers_are_longer_bars_whatever_each_rank_clock() -> None:
    svg = gantt_svg(ranges(0, 0.0) + ranges(1, 3.6e9, slow=1.5), first=2, steps=2)
    found = bars(svg)
    assert set(found) == {
        (f"rank {r}", s) for r in (0, 1) for s in ("actor_generate", "actor_update")
    }
    for stage in ("actor_generate", "actor_update"):
        assert len(found[("rank 0", stage)]) == 2  # steps 2 and 3 only
        assert [x for x, _ in found[("rank 0", stage)]] == [x for x, _ in found[("rank 1", stage)]]
    fast, slow = found[("rank 0", "actor_update")][0][1], found[("rank 1", "actor_update")][0][1]
    assert slow == pytest.approx(1.5 * fast, rel=0.01)
    generate = found[("rank 0", "actor_generate")]
    assert generate[0][0] > text_width("rank 0") and generate[1][0] > sum(generate[0])
    assert "step 2" in svg and "step 4" not in svg


def test_names_are_escaped_and_no_steps_draws_nothing() -> None:
    evil = [Range(0, "stage", "<script>x</script>", 1, 10.0, 5.0)]
    svg = gantt_svg(evil)
    assert "<script>" not in svg and ET.fromstring(svg) is not None
    assert gantt_svg([Range(0, "range", "loss", None, 1.0, 1.0)]) == ""
    assert gantt_svg(ranges(0, 0.0), first=9) == ""  # no step from there on


def test_every_step_has_a_tooltip_and_the_picture_scales() -> None:
    svg = gantt_svg(ranges(0, 0.0) + ranges(1, 5e6), steps=3, width=640)
    w, h = size(svg)
    assert w == 640 and h >= ROW * 4  # the header, two ranks, the legend
    steps = [r for r in ET.fromstring(svg).iter(f"{SVG}rect") if r.get("data-step")]
    assert [r.get("data-step") for r in steps] == ["1", "2", "3"]
    assert all(title(r).startswith(f"step {r.get('data-step')}: 90.0 ms") for r in steps)


@settings(max_examples=60, deadline=None)
@given(
    durations=st.lists(st.floats(1.0, 1e7), min_size=1, max_size=8), width=st.integers(200, 1400)
)
def test_step_labels_fit_their_columns(durations: list[float], width: int) -> None:
    """Whatever the steps' lengths: each label lies within its own column (so none overlaps
    another), the longest form that fits is chosen, and a step too narrow for any has none."""
    rs, t = [], 0.0
    for step, dur in enumerate(durations, 1):
        rs += [
            Range(0, "step", f"ProfilerStep#{step}", step, t, dur),
            Range(0, "stage", "actor_update", step, t, dur / 2),
        ]
        t += dur
    svg = gantt_svg(rs, steps=len(durations), width=width)
    columns = {
        int(attr(r, "data-step")): (float(attr(r, "x")), float(attr(r, "width")))
        for r in ET.fromstring(svg).iter(f"{SVG}rect")
        if r.get("data-step")
    }
    assert sorted(columns) == list(range(1, len(durations) + 1))
    heads = {}
    for x, y, shown, _ in texts(svg):
        if y < ROW:
            (step,) = [s for s, (cx, _) in columns.items() if cx == x]
            heads[step] = shown
    starts = sorted(x for x, _ in columns.values()) + [float(width)]
    for step, (x, room) in columns.items():
        forms = [
            f
            for f in (
                f"step {step} ({durations[step - 1] / 1000:,.1f} ms)",
                f"step {step}",
                f"{step}",
            )
            if text_width(f) <= room
        ]
        assert heads.get(step) == (forms[0] if forms else None), (step, room)
        if step in heads:
            assert x + text_width(heads[step]) <= starts[starts.index(x) + 1]


def test_legend_wraps_inside_the_picture_and_long_names_are_cut() -> None:
    names = [*STAGES, *(f"custom_stage_with_a_long_name_{i}" for i in range(8)), "x" * 400]
    rs = [Range(0, "step", "ProfilerStep#1", 1, 0.0, 1e6)]
    rs += [Range(0, "stage", n, 1, i * 1e4, 1e4) for i, n in enumerate(names)]
    long_rank = "h" * 300  # a source naming a long path: its label is cut too
    rs += [
        Range(1, "step", "ProfilerStep#1", 1, 0.0, 1e6, source=long_rank),
        Range(1, "stage", "actor_update", 1, 0.0, 1e5, source=long_rank),
    ]
    width = 700
    svg = gantt_svg(rs, width=width)
    w, h = size(svg)
    legend = [(x, y, shown, el) for x, y, shown, el in texts(svg) if y > 3 * ROW]
    assert {
        title(el) if el.find(f"{SVG}title") is not None else shown for *_, shown, el in legend
    } == set(names)
    assert len({y for _, y, *_ in legend}) > 1  # wrapped
    for x, y, shown, _ in legend:
        assert x + text_width(shown) <= width and y <= h
    cut = [shown for *_, shown, _ in legend if shown.endswith("…")]
    assert cut == ["x" * len(cut[0][:-1]) + "…"] and text_width(cut[0]) <= width / 2
    (rank1,) = [(x, shown, el) for x, y, shown, el in texts(svg) if shown.startswith("rank 1")]
    assert rank1[1].endswith("…") and title(rank1[2]) == (f"rank 1 ({long_rank})")
    first_bar = min(x for (rank, _), xs in bars(svg).items() for x, _ in xs)
    assert text_width(rank1[1]) < first_bar


def test_colours_come_from_the_mapping_given() -> None:
    rs = ranges(0, 0.0)
    mine = {"actor_generate": "#111111", "actor_update": "#222222"}
    fills = {
        title(rect).split(",")[0]: rect.get("fill")
        for rect in ET.fromstring(gantt_svg(rs, colours=mine)).iter(f"{SVG}rect")
        if rect.get("class") == "stage"
    }
    assert fills == mine
    default = {
        title(rect).split(",")[0]: rect.get("fill")
        for rect in ET.fromstring(gantt_svg(rs)).iter(f"{SVG}rect")
        if rect.get("class") == "stage"
    }
    assert default == stage_colours(["actor_generate", "actor_update"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable.strip() + "äöüßéèñçÅØ", min_size=1, max_size=60))
def test_text_width_is_an_upper_bound_of_the_wide_fallback_font(text: str) -> None:
    """``text_width`` is never narrower than DejaVu Sans (the widest common sans-serif, the
    one Debian's browsers fall back on) draws the text."""
    from matplotlib.font_manager import FontProperties, findfont
    from matplotlib.ft2font import FT2Font

    font = FT2Font(findfont(FontProperties(family="DejaVu Sans")))
    font.set_size(FONT, 72)  # 72 dpi: one point is one unit
    drawn = sum(font.load_char(ord(c)).linearHoriAdvance / 65536 for c in text)  # unhinted
    assert text_width(text) >= drawn


def _golden_ranges() -> list[Range]:
    """Two ranks on their own clocks (one a straggler, one with a source), a rank whose stages
    span its step (no step range), a rank the capture did not name, a long rank label, a name
    to escape and enough stages for the legend to wrap."""
    rs = ranges(0, 0.0, steps=4) + ranges(1, 3.6e9, slow=1.5, steps=4)
    rs += [r._replace(source="host-b") for r in ranges(1, 7e6, steps=2)]
    rs += [r for r in ranges(2, 5e5) if r.kind != "step"]
    rs += [
        Range(None, "step", "ProfilerStep#2", 2, 0.0, 1e5, source="h" * 80),
        Range(None, "stage", '<b>&"odd"</b>', 2, 10.0, 2e4, source="h" * 80),
    ]
    rs += [Range(0, "stage", f"custom_stage_{i}", 3, 300_000.0 + 1e3 * i, 900.0) for i in range(12)]
    return rs


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    ("name", "first", "steps", "width", "colours"),
    [
        ("gantt_default.svg", None, 4, 960, None),
        ("gantt_narrow.svg", 2, 3, 200, {"actor_generate": "#111111"}),
        ("gantt_tiny.svg", 1, 4, 150, None),
    ],
)
def test_the_picture_is_pinned(
    name: str, first: int | None, steps: int, width: int, colours: dict[str, str] | None
) -> None:
    """The SVG byte for byte on a fixture that takes every branch (rewrite the files with
    ``PIN=1`` only for a change meant to alter the picture)."""
    svg = gantt_svg(_golden_ranges(), first=first, steps=steps, width=width, colours=colours)
    path = GOLDEN / name
    if os.environ.get("PIN"):
        path.write_text(svg + "\n", encoding="utf-8")
    assert svg + "\n" == path.read_text(encoding="utf-8")
