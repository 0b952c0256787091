"""The HTML report as a browser lays it out, at 1280 and 800 pixels wide: nothing overlaps and
nothing overflows.

Each report (the demo-like run the tests make, a real torch_npu set and a real CUDA set of the
corpus, and a made-up run of 32 ranks with long and CJK stage names and findings) is written by
``write_report``; a copy of it gets a small script that opens every ``<details>``, measures the
page with ``getBoundingClientRect`` and writes the boxes into the DOM, and headless Chromium
(``scripts/report_screenshots.py`` finds and drives it) dumps that DOM. From the browser's own
boxes:

- the page is no wider than the window, and no element outside a table's scroll wrapper or a
  chart reaches past it;
- every chart lies inside the window and its figure, draws nothing outside its ``viewBox``
  (no cut legend, no lost Gantt step), keeps every label and legend inside its box, has no two
  labels overlapping, and shows its smallest font at 8 px or more;
- every table fits its column at 1280 px (no sideways scroll) and at 800 px scrolls inside its
  wrapper if anywhere, in a font of at least 12 px, and no cell's text runs past its cell.

Chromium missing is a failure naming the install, not a skip: CI installs it (``.ci/run``).
"""

from __future__ import annotations

import html
import importlib.util
import json
import lzma
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.model import Range, Tally, TraceData
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.gantt import FONT
from mindspeed_prof.views.html import FONT_PT, write_report

pytestmark = pytest.mark.reference  # headless Chromium lays the report out

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
SETS = {"npu": "npu_text_qwen3_4rank_pp2", "cuda": "kineto_trace_compare"}
WIDTHS = (1280, 800)
#: The smallest font a chart may show, in CSS pixels, and a table's.
CHART_PX, TABLE_PX = 8.0, 12.0

_spec = importlib.util.spec_from_file_location(
    "report_screenshots", ROOT / "scripts" / "report_screenshots.py"
)
assert _spec and _spec.loader
shots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shots)

#: Added to the test's copy of a report only: the report itself runs no script.
MEASURE = r"""<script>(function () {
  var vw = document.documentElement.clientWidth;
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  function box(el) {
    var b = el.getBoundingClientRect();
    return [b.left, b.top, b.right, b.bottom];
  }
  function ids(svg, pattern) {
    return Array.from(svg.querySelectorAll('g[id]')).filter(function (g) {
      return pattern.test(g.id);
    });
  }
  var out = {viewport: vw, page: document.documentElement.scrollWidth, charts: [],
             tables: [], wide: []};
  document.querySelectorAll('figure').forEach(function (fig) {
    var svg = fig.querySelector('svg');
    if (!svg) { return; }
    var vb = svg.viewBox.baseVal, c = svg.getBBox();
    var texts = fig.id === 'gantt' ? Array.from(svg.querySelectorAll('text'))
                                   : ids(svg, /-text_\d+$/);
    out.charts.push({
      id: fig.id, box: box(svg), figure: box(fig),
      viewBox: [vb.x, vb.y, vb.x + vb.width, vb.y + vb.height],
      content: [c.x, c.y, c.x + c.width, c.y + c.height],
      texts: texts.map(function (el) {
        return {id: el.id || el.textContent.slice(0, 60), box: box(el)};
      }),
      legends: ids(svg, /-legend_\d+$/).map(box),
      steps: Array.from(svg.querySelectorAll('[data-step]')).map(function (el) {
        return {step: el.getAttribute('data-step'), box: box(el)};
      })});
  });
  document.querySelectorAll('.tbl').forEach(function (w) {
    var t = w.querySelector('table');
    var cells = Array.from(t.querySelectorAll('td, th'));
    var head = w.previousElementSibling;
    out.tables.push({
      title: head ? head.textContent : '', inner: w.clientWidth, box: box(w),
      table: t.getBoundingClientRect().width,
      scrolls: ['auto', 'scroll'].indexOf(getComputedStyle(w).overflowX) >= 0,
      font: Math.min.apply(null, cells.map(function (c) {
        return parseFloat(getComputedStyle(c).fontSize);
      })),
      overflowing: cells.filter(function (c) {
        return c.scrollWidth > c.clientWidth + 1;
      }).map(function (c) { return c.textContent.slice(0, 60); }),
      midword: [].concat.apply([], cells.map(function (c) {
        return Array.from(c.childNodes).filter(function (n) {
          if (n.nodeType !== 3 || /\s/.test(n.textContent.trim())) { return false; }
          var r = document.createRange();
          r.selectNodeContents(n);
          return r.getClientRects().length > 1;
        }).map(function (n) { return n.textContent.slice(0, 60); });
      }))});
  });
  document.querySelectorAll('body *').forEach(function (el) {
    var up = el.parentElement;
    if (up && up.closest('svg, .tbl')) { return; }
    var b = el.getBoundingClientRect();
    if ((b.width || b.height) && (b.right > vw + 0.5 || b.left < -0.5)) {
      out.wide.push(el.tagName + '#' + el.id + '.' + el.className + ' ' + b.left + '..' +
                    b.right);
    }
  });
  var pre = document.createElement('pre');
  pre.id = 'layout';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();</script>"""
_LAYOUT = re.compile(r'<pre id="layout">(.*?)</pre>', re.S)


# -- the reports --------------------------------------------------------------------------------


def unpack(name: str, dest: Path) -> Path:
    """A corpus set copied under ``dest`` with its ``*.xz`` files expanded."""
    root = dest / name
    shutil.copytree(CORPUS / name, root)
    for packed in root.rglob("*.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    return root


def many_ranks(ranks: int = 32, steps: int = 12) -> Captures:
    """A made-up run: ``ranks`` ranks, ``steps`` steps (step 3 far shorter than the others),
    MindSpeed-RL's stages and three of a trainer's own (one long, one in Chinese), and
    host ops with long names."""
    rng = random.Random(3)
    names = [*STAGES, "verl_update_actor_with_a_rather_long_name", "奖励模型打分", "gen"]
    traces = []
    for rank in range(ranks):
        t = TraceData(
            path=Path(f"integrated/rank{rank}_host_{rank}.pt.trace.json"),
            kind="torch",
            rank=rank,
            group="integrated",
            size=1000,
        )
        ts = rank * 1e9
        for step in range(1, steps + 1):
            start = ts
            for n in names:
                dur = rng.uniform(1e3, 1e4 if step == 3 else 3e5)
                t.ranges.append(Range(rank, "stage", n, step, ts, dur))
                ts += dur + 100
            t.ranges.append(Range(rank, "step", f"ProfilerStep#{step}", step, start, ts - start))
        t.ops = {
            f"aten::a_rather_long_operator_name_number_{i}_with_a_suffix": Tally(
                count=3, total=1e5 / (i + 1)
            )
            for i in range(30)
        }
        traces.append(t)
    return Captures(root=Path("many"), traces=traces)


def findings() -> list[Finding]:
    return [
        Finding(
            rule="npu.example",
            severity="high",
            impact_ms=123.4,
            title="hcom_allReduce_ waits 35% of the step on rank 3 for the slowest rank",
            detail="12.3 ms a step in hcom_allReduce_ on rank 3\n" + "x" * 300,
            suggestion="Balance the micro-batches across ranks.",
            source="kernel_details",
            ranks=[3, 5],
        ),
        Finding(rule="rl.example", title="a medium finding with nothing to expand"),
        Finding(rule="rl.other", severity="low", title="a low one", suggestion="do this"),
    ]


@pytest.fixture(scope="module")
def browser() -> str:
    found = shots.find_chromium()
    if found is None:
        pytest.fail(shots.missing(), pytrace=False)
    return str(found)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from capture_fixtures import make_run

    tmp = tmp_path_factory.mktemp("reports")
    out = {}
    demo = make_run(tmp / "demo", slow={(1, "actor_update"): 3})
    out["demo"] = write_report(report(analyse(demo)), tmp / "demo.html")
    for key, name in SETS.items():
        out[key] = write_report(report(analyse(unpack(name, tmp))), tmp / f"{key}.html")
    many = many_ranks()
    answers = report(many)
    answers.findings = findings()
    out["many"] = write_report(answers, tmp / "many.html")
    return out


def layout(browser: str, report: Path, width: int) -> dict[str, Any]:
    """The boxes ``MEASURE`` took of ``report`` in a window ``width`` wide."""
    copy = report.with_name(f"{report.stem}-measured-{width}.html")
    page = report.read_text(encoding="utf-8")
    assert "<script" not in page  # the report itself runs nothing
    copy.write_text(page.replace("</body>", MEASURE + "</body>", 1), encoding="utf-8")
    found = _LAYOUT.search(shots.dump_dom(browser, copy, width))
    assert found, f"{copy}: the measuring script wrote nothing"
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return result


# -- what the boxes must be ---------------------------------------------------------------------


def inside(inner: list[float], outer: list[float], tol: float = 1.0) -> bool:
    return (
        inner[0] >= outer[0] - tol
        and inner[1] >= outer[1] - tol
        and inner[2] <= outer[2] + tol
        and inner[3] <= outer[3] + tol
    )


def overlap(a: list[float], b: list[float], tol: float = 0.5) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > tol and min(a[3], b[3]) - max(a[1], b[1]) > tol


def overlapping(texts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    boxes = [t for t in texts if t["box"][2] > t["box"][0]]
    return [
        (a["id"], b["id"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if overlap(a["box"], b["box"])
    ]


def check_chart(chart: dict[str, Any], viewport: float) -> None:
    name, svg = chart["id"], chart["box"]
    assert svg[0] >= -0.5 and svg[2] <= viewport + 0.5, (name, svg, viewport)
    assert inside(svg, chart["figure"]), (name, svg, chart["figure"])
    assert inside(chart["content"], chart["viewBox"]), (
        name,
        "draws outside its viewBox",
        chart["content"],
        chart["viewBox"],
    )
    for t in chart["texts"]:
        assert inside(t["box"], svg), (name, t)
    for legend in chart["legends"]:
        assert inside(legend, svg), (name, "legend cut", legend, svg)
    assert overlapping(chart["texts"]) == [], name
    for s in chart["steps"]:
        assert inside(s["box"], svg) and s["box"][2] <= viewport, (name, "step lost", s)
    px_per_unit = (svg[2] - svg[0]) / (chart["viewBox"][2] - chart["viewBox"][0])
    smallest = (FONT if name == "gantt" else FONT_PT) * px_per_unit
    assert smallest >= CHART_PX, (name, f"smallest font {smallest:.1f} px")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("report", ["demo", "npu", "cuda", "many"])
def test_nothing_overlaps_or_overflows(
    browser: str, reports: dict[str, Path], report: str, width: int
) -> None:
    got = layout(browser, reports[report], width)
    viewport = got["viewport"]
    assert viewport <= width and viewport > 0.9 * width
    assert got["page"] <= viewport, f"the page is {got['page']} px wide in {viewport}"
    assert got["wide"] == []
    charts = {c["id"]: c for c in got["charts"]}
    assert charts, "no chart measured"
    for chart in charts.values():
        check_chart(chart, viewport)
    assert got["tables"], "no table measured"
    for t in got["tables"]:
        assert t["scrolls"] and inside(t["box"], [0, t["box"][1], viewport, t["box"][3]]), t
        assert t["font"] >= TABLE_PX, (t["title"], t["font"])
        assert t["overflowing"] == [], t["title"]
        assert t["midword"] == [], (t["title"], "a name broken inside a word")
        if width >= 1280:
            assert t["table"] <= t["inner"] + 1, (
                t["title"],
                "does not fit",
                t["table"],
                t["inner"],
            )


def test_every_gantt_step_is_on_the_page_at_800(browser: str, reports: dict[str, Path]) -> None:
    """The Gantt shows its four steps whole at 800 px (a fixed-width picture lost one)."""
    got = layout(browser, reports["demo"], 800)
    (gantt,) = [c for c in got["charts"] if c["id"] == "gantt"]
    assert [s["step"] for s in gantt["steps"]] == ["1", "2", "3"]
    assert all(s["box"][2] <= got["viewport"] for s in gantt["steps"])


def test_the_measuring_catches_an_overflow_and_an_overlap(browser: str, tmp_path: Path) -> None:
    """The checks can fail: a table wider than the window outside any wrapper, a name broken
    inside a word, and two labels drawn on one spot, are seen."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!doctype html><html><body><table><tr>"
        + "<td>wide_cell_text</td>" * 80
        + "</tr></table><div class='tbl'><table style='width:60px'><tr><td style='white-space:"
        "normal;overflow-wrap:anywhere'>reference_compute_log_prob</td></tr></table></div>"
        "<figure id='gantt'><svg xmlns='http://www.w3.org/2000/svg' "
        "viewBox='0 0 200 50' width='200' height='50'><text x='0' y='20'>step 1</text>"
        "<text x='5' y='22'>step 2</text><rect x='150' y='0' width='100' height='10' "
        "data-step='3'/></svg></figure></body></html>",
        encoding="utf-8",
    )
    got = layout(browser, page, 800)
    assert got["page"] > got["viewport"] and got["wide"]
    assert got["tables"][0]["midword"] == ["reference_compute_log_prob"]
    (chart,) = got["charts"]
    assert overlapping(chart["texts"]) and not inside(chart["content"], chart["viewBox"])
    with pytest.raises(AssertionError):
        check_chart(chart, got["viewport"])
