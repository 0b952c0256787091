"""The Gantt picture: a row per rank, stage bars placed inside each step, on any clocks."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.views.gantt import LABEL, gantt_svg

SVG = "{http://www.w3.org/2000/svg}"


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
        title = rect.find(f"{SVG}title")
        if title is not None:
            stage, rank, _ = title.text.split(", ")
            out.setdefault((rank, stage), []).append((float(rect.get("x")),
                                                      float(rect.get("width"))))
    return out


def test_stragglers_are_longer_bars_whatever_each_rank_clock() -> None:
    svg = gantt_svg(ranges(0, 0.0) + ranges(1, 3.6e9, slow=1.5), first=2, steps=2)
    found = bars(svg)
    assert set(found) == {(f"rank {r}", s) for r in (0, 1) for s in ("actor_generate",
                                                                     "actor_update")}
    for stage in ("actor_generate", "actor_update"):
        assert len(found[("rank 0", stage)]) == 2  # steps 2 and 3 only
        assert [x for x, _ in found[("rank 0", stage)]] == [x for x, _ in found[("rank 1", stage)]]
    fast, slow = found[("rank 0", "actor_update")][0][1], found[("rank 1", "actor_update")][0][1]
    assert slow == pytest.approx(1.5 * fast, rel=0.01)
    generate = found[("rank 0", "actor_generate")]
    assert generate[0][0] > LABEL and generate[1][0] > generate[0][0] + generate[0][1]
    assert "step 2" in svg and "step 4" not in svg


def test_names_are_escaped_and_no_steps_draws_nothing() -> None:
    evil = [Range(0, "stage", "<script>x</script>", 1, 10.0, 5.0)]
    svg = gantt_svg(evil)
    assert "<script>" not in svg and ET.fromstring(svg) is not None
    assert gantt_svg([Range(0, "range", "loss", None, 1.0, 1.0)]) == ""
