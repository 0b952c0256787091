"""The HTML report's structure: the verdict and findings on top, one colour per stage in every
chart, axis labels thinned, per-step charts of many ranks averaged, tables that drop empty
columns and wrap their names, ids unique, every name escaped. (How a browser lays it out:
``test_html_browser.py``.)"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.report.report import Report
from mindspeed_prof.analysis.report.report import report as make_report
from mindspeed_prof.analysis.rows import StepRow
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.views.html import MAX_BARS, write_report
from mindspeed_prof.views.html.charts import _per_step
from mindspeed_prof.views.palette import stage_colours
from mindspeed_prof.views.words import verdict_lines

CUSTOM = ["gen", "verl_update_actor", "奖励模型打分"]


def run(
    ranks: int = 2, steps: int = 3, names: list[str] | None = None, slow: float = 1.0
) -> Captures:
    """``ranks`` ranks of ``steps`` steps of the stages ``names`` (default: MindSpeed-RL's and
    three of a trainer's own), each 10 ms, rank 1's ``slow`` times that."""
    names = [*STAGES, *CUSTOM] if names is None else names
    traces = []
    for rank in range(ranks):
        t = TraceData(
            path=Path(f"integrated/rank{rank}.pt.trace.json"),
            kind="torch",
            rank=rank,
            group="integrated",
            size=1,
        )
        ts = 0.0
        for step in range(1, steps + 1):
            start = ts
            for name in names:
                dur = 10_000.0 * (slow if rank == 1 else 1.0)
                t.ranges.append(Range(rank, "stage", name, step, ts, dur))
                ts += dur
            t.ranges.append(Range(rank, "step", f"ProfilerStep#{step}", step, start, ts - start))
        traces.append(t)
    return Captures(root=Path("run"), traces=traces)


def report(tmp_path: Path, result: Captures, answers: Report | None = None) -> str:
    return write_report(answers or make_report(result), tmp_path / "r.html").read_text(
        encoding="utf-8"
    )


def section(page: str, sid: str) -> str:
    start = page.index(f"<section id='{sid}'")
    return page[start : page.index("</section>", start)]


def figure(page: str, fid: str) -> str:
    start = page.index(f"<figure id='{fid}'>")
    return page[start : page.index("</figure>", start)]


def named(svg: str, kind: str, chart: str) -> dict[str, str]:
    """Name -> the colour of the first element of ``kind`` drawn for it (``gid`` ids)."""
    out: dict[str, str] = {}
    for hexname, colour in re.findall(
        rf'<g id="{chart}-{kind}-([0-9a-f]+)-\d+">.*?(?:fill|stroke): (#[0-9a-f]{{6}})', svg, re.S
    ):
        out.setdefault(bytes.fromhex(hexname).decode(), colour.upper())
    return out


def test_one_colour_per_stage_in_every_chart(tmp_path: Path) -> None:
    page = report(tmp_path, run())
    expected = {k: v.upper() for k, v in stage_colours([*STAGES, *CUSTOM]).items()}
    steps = named(figure(page, "timeline"), "bar", "timeline")
    heat = named(figure(page, "heatmap"), "swatch", "heatmap")
    gantt = {
        html.unescape(name): colour.upper()
        for colour, name in re.findall(
            r'<rect class="stage" [^>]*fill="(#[0-9A-Fa-f]{6})"><title>([^,]*),',
            figure(page, "gantt"),
        )
    }
    assert steps == heat == gantt == expected
    assert list(expected)[: len(STAGES)] == list(STAGES)  # MindSpeed-RL's first, in step order


def test_the_verdict_and_findings_come_first(tmp_path: Path, run_dir: Path) -> None:
    result = analyse(run_dir)
    answers = make_report(result)
    answers.findings = [
        Finding(
            rule="npu.a",
            severity="high",
            impact_ms=12.5,
            title="<b>hot</b> op 40%",
            detail="first line\n<i>second</i> line",
            suggestion="fuse <it>",
            source="kernel_details.csv",
            ranks=[0, None],
        ),
        Finding(rule="rl.b", severity="low", title="plain"),
    ]
    page = report(tmp_path, result, answers)
    verdict = section(page, "verdict")
    pairs = re.findall(r"<dt>(.*?)</dt><dd( class=lead)?>(.*?)</dd>", verdict)
    assert [(html.unescape(k), html.unescape(v)) for k, _, v in pairs] == verdict_lines(
        answers.verdict
    )
    assert [lead for _, lead, _ in pairs] == [" class=lead"] + [""] * (len(pairs) - 1)
    assert answers.verdict.next and all(
        html.escape(n.command) in verdict for n in answers.verdict.next
    )
    found = section(page, "findings")
    items = re.findall(r"<li class='(\w+)'>(.*?)</li>", found, re.S)
    assert [sev for sev, _ in items] == ["high", "low"]
    hot, plain = (body for _, body in items)
    assert hot.startswith(
        "<details open><summary><span class='sev high'>high</span>"
        "<b>&lt;b&gt;hot&lt;/b&gt; op 40%</b>"
    )
    assert "(12.5 ms per step)" in hot and "first line<br>&lt;i&gt;second&lt;/i&gt; line" in hot
    assert (
        "<b>Suggestion:</b> fuse &lt;it&gt;" in hot and "from kernel_details.csv; ranks 0, ?" in hot
    )
    assert plain == "<span class='sev low'>low</span><b>plain</b>"  # nothing to fold
    assert page.index("id='verdict'") < page.index("id='findings'") < page.index("<figure")
    assert "<script" not in page and "<b>hot" not in page and "<i>second" not in page


def test_no_findings_and_a_failed_rule_are_said(tmp_path: Path) -> None:
    result = run(ranks=1, steps=1)
    answers = make_report(result)
    answers.findings, answers.rule_notes = [], ["finding rule npu.x failed: boom"]
    page = report(tmp_path, result, answers)
    assert "None: no rule found anything" in section(page, "findings")
    assert "<li>note: finding rule npu.x failed: boom</li>" in page
    empty = report(tmp_path, Captures(root=Path("nothing")))
    assert "No verdict: these captures hold no steps" in section(empty, "verdict")


def shown_ticks(svg: str, chart: str) -> list[int]:
    """Indexes of the x tick marks that carry a label."""
    axis = svg.split(f'id="{chart}-matplotlib.axis_1"', 1)[1].split(
        f'id="{chart}-matplotlib.axis_2"', 1
    )[0]
    ticks = re.split(rf'<g id="{chart}-xtick_\d+">', axis)[1:]
    return [
        i
        for i, t in enumerate(ticks)
        if re.match(
            rf'\s*<g id="{chart}-line2d_\d+">.*?</g>\s*</g>\s*<g id="{chart}-text_', t, re.S
        )
    ]


def test_axis_labels_are_every_kth_when_they_would_overlap(tmp_path: Path) -> None:
    few = figure(report(tmp_path, run(ranks=2, steps=3, names=["actor_update"])), "timeline")
    assert shown_ticks(few, "timeline") == list(range(6))
    bars = MAX_BARS  # 2 ranks x 24 steps: every bar drawn, too many labels for the axis
    many = figure(
        report(tmp_path, run(ranks=2, steps=bars // 2, names=["actor_update"])), "timeline"
    )
    shown = shown_ticks(many, "timeline")
    k = shown[1] - shown[0]
    assert k > 1 and shown == list(range(0, bars, k))


def test_many_ranks_chart_each_step_as_the_mean_over_ranks(tmp_path: Path) -> None:
    steps = MAX_BARS // 4 + 1
    page = report(tmp_path, run(ranks=4, steps=steps, names=["actor_update"]))
    assert "each the mean over 4 ranks" in page
    assert len(re.findall(r'id="timeline-bar-[0-9a-f]+-\d+"', page)) == steps
    rows = [
        StepRow(rank=r, step=s, stages={"a": 10.0 * (r + 1) + s})
        for r in range(4)
        for s in range(1, steps + 1)
    ]
    labels, values, what = _per_step(rows, [("a", lambda r: r.stages["a"])])
    assert labels == [str(s) for s in range(1, steps + 1)] and "mean over 4 ranks" in what
    assert values["a"] == pytest.approx([25.0 + s for s in range(1, steps + 1)])
    one_rank = [StepRow(rank=0, step=s, stages={"a": 1.0}) for s in range(1, 3 * MAX_BARS)]
    assert len(_per_step(one_rank, [("a", lambda r: 1.0)])[0]) == len(one_rank)


def test_heat_map_numbers_only_where_they_fit(tmp_path: Path) -> None:
    small = figure(report(tmp_path, run(ranks=2, steps=1)), "heatmap")
    assert len(re.findall(r'id="heatmap-cell-', small)) == 2 * (len(STAGES) + len(CUSTOM))
    wide = figure(report(tmp_path, run(ranks=40, steps=1)), "heatmap")
    assert "heatmap-cell-" not in wide and "heatmap-swatch-" in wide


def test_tables_drop_empty_columns_and_wrap_names(tmp_path: Path) -> None:
    page = report(tmp_path, run(ranks=2, steps=2, names=["actor_update", "a<b>_c"]))
    per_step = page.split("<h2>Per step (ms)</h2>", 1)[1].split("<h2>", 1)[0]
    m = re.search(r"<tr>(<th>.*?)</tr>", per_step)
    assert m is not None
    head = m.group(1)
    assert re.findall(r"<th>(.*?)</th>", head) == [
        "rank",
        "step",
        "total",
        "actor_<wbr>update",
        "a&lt;b&gt;_<wbr>c",
        "warmup",
    ]
    assert "source" not in per_step  # no two captures of one rank: no source to tell apart
    stages = page.split("<h2>Stage by rank</h2>", 1)[1].split("<h2>", 1)[0]
    assert stages.startswith("<div class='tbl w1'><table><tr><th>stage</th>")
    device = page.split("<h2>Device time (ms)</h2>", 1)[1].split("<h2>", 1)[0]
    assert "No device data" in device
    # an empty table is no section of "None.": its title is named once, at the end
    assert "<h2>Top host ops by self time</h2>" not in page and "None." not in page
    absent = re.search(r"<p class='empty'>Not in these captures: (.*?)\.</p>", page)
    assert absent is not None and "Top host ops by self time" in absent[1].split(", ")


def test_cells_read_as_people_write_them() -> None:
    """A column of counts read as floats prints integers (a column of times keeps its
    decimals); a name breaks only after ``_``, ``/`` or ``.``; a note the same on every row is
    said once, under the table."""
    from mindspeed_prof.views.html.tables import table as _table

    rows = [
        {"stage": "actor_generate", "count": 512.0, "ms": 1.5, "mfu_note": "no model"},
        {"stage": "a<b>", "count": 3.0, "ms": 2.0, "mfu_note": "no model"},
    ]
    out = _table(rows, ["stage", "count", "ms", "mfu_note"])
    assert re.findall(r"<th>(.*?)</th>", out) == ["stage", "count", "ms"]
    cells = re.findall(r"<td>(.*?)</td>", out)
    assert cells == ["actor_<wbr>generate", "512", "1.500", "a&lt;b&gt;", "3", "2.000"]
    assert _table([{"n": 2.0}, {"n": 2.5}], ["n"]).count("<td>2.000</td>") == 1
    assert out.endswith("<p class='empty'>mfu_note: no model</p>")
    varying = _table([{**rows[0], "mfu_note": "x"}, rows[1]], ["stage", "mfu_note"])
    assert re.findall(r"<th>(.*?)</th>", varying) == ["stage", "mfu_<wbr>note"]


def test_an_empty_column_is_named_under_its_table(tmp_path: Path) -> None:
    from mindspeed_prof.views.html.tables import table as _table

    rows = [
        {"name": "a", "stage": None, "ms": 1.0, "source": ""},
        {"name": "b", "stage": None, "ms": 2.0, "source": ""},
    ]
    out = _table(rows, ["name", "stage", "source", "ms"])
    assert re.findall(r"<th>(.*?)</th>", out) == ["name", "ms"]
    assert out.endswith("<p class='empty'>Empty in every row, left out: stage.</p>")
    assert out.count("<tr>") == 3 and "<td>2.000</td>" in out
    with pytest.raises(KeyError):
        _table(rows, ["name", "missing"])


def test_ids_are_unique_and_every_chart_scales(tmp_path: Path, run_dir: Path) -> None:
    page = report(tmp_path, analyse(run_dir))
    ids = re.findall(r'\bid=["\']([^"\']+)["\']', page)
    assert len(ids) == len(set(ids)) > 100
    refs = set(re.findall(r'(?:xlink:href="#|url\(#)([^")]+)', page))
    assert refs <= set(ids)  # every reference finds its own chart's definition
    svgs = re.findall(r"<svg [^>]*>", page)
    assert len(svgs) == 4 and all("viewBox=" in s for s in svgs)
    assert "max-width:100%" in page.split("</style>")[0]
