"""Our torch_npu findings against msprof-analyze's advisor (26.2.0) on every real torch_npu set
of ``tests/fixtures/corpus``: for each category the advisor reports on a set, we report a finding
of the matching rule (``RULE_OF``), and the numbers both give agree (the same unaligned
operators and abnormal durations, the same environment variables, the same vector operators and
their optimisation space, the same spread between ranks...).

Where the advisor says something that is no finding (its slow rank and slow link rows always
come, with or without an issue; its API comparison of two ranks), that is checked for what it
says. Where it is wrong or cannot read a set, that is asserted with the reason:

- ``npu_db_level0``: level0's analysis.db holds no communication tables, so its cluster step
  writes no ClusterCommunicationBandwidth and the advisor stops ("'NoneType' object has no
  attribute 'get_data'"): nothing written.
- ``npu_text_qwen3_4rank_pp2``: its folders hold analysis.db beside the text files, so the
  advisor reads them as a db cluster, whose recipes refuse its own default mode ("mode must be
  in ['concurrent']"): nothing written.
- ``npu_text_level0``: "RANK 0 operator dynamic shape issues" without evidence: level0's
  kernel_details.csv has no OP State column, and the advisor's text reader counts a missing
  column as "no operator is static" (we report nothing there).
- operator no bound (db sets): the advisor judges vector operators by AI Core (aic_) ratios
  they do not have, so operators bound on their vector unit's mte2 count as bound by nothing;
  ours reads each operator's own unit and leaves those out.
- packet analysis: the advisor counts communication.json's "Total Op Info" rows as operators;
  the small ones and their time agree, its total is ours plus those rows.

msprof-analyze writes into its input and exits 0 on errors: each run is on a copy and its
output is checked to exist. The eight runs take 5-30 s each: what the tests read of them is kept
in ``tests/fixtures/reference/msprof_advisor.json`` (``reference_store``: the tool runs live, the
eight side by side, where a set or the installed tool differs from the fixture's).
"""

from __future__ import annotations

import csv
import json
import re
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import answered
from msprof_advisor import Advice, advise, category, executable, from_json, to_json
from npu_fixtures import copied
from reference_store import Store

from mindspeed_prof.analysis.analyse import Captures, analyse
from mindspeed_prof.analysis.findings import Finding, find
from mindspeed_prof.analysis.findings.npu import env as env_rules
from mindspeed_prof.analysis.findings.npu import host as host_rules
from mindspeed_prof.analysis.findings.npu import layout as layout_rules
from mindspeed_prof.analysis.findings.npu import ops as ops_rules
from mindspeed_prof.analysis.findings.npu import ranks as ranks_rules
from mindspeed_prof.analysis.readers import read, survey
from mindspeed_prof.analysis.readers.model import TraceData

pytestmark = [
    pytest.mark.reference,
    pytest.mark.skipif(executable() is None, reason="msprof-analyze (test extra) is not installed"),
]

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
#: The torch_npu folders (the advisor reads a whole capture, not a file on its own).
SETS = [
    s["name"]
    for s in json.loads((CORPUS / "sets.json").read_text())
    if s["kind"] in ("npu_text", "npu_db")
]
#: Sets the advisor cannot read, and the ERROR it logs.
UNREADABLE = {
    "npu_db_level0": "'NoneType' object has no attribute 'get_data'",
    "npu_text_qwen3_4rank_pp2": "mode must be in ['concurrent']",
}
#: Advisor category (``category``: lower case, no "RANK n" prefix) -> our rule.
RULE_OF = {
    "environment variable issues": "npu.env_vars",
    "slow rank": "npu.slow_rank",
    "slow link": "npu.slow_link",
    "byte alignment analysis": "npu.byte_alignment",
    "vector operator perf analysis": "npu.vector_ops",
    "operator dynamic shape issues": "npu.dynamic_shape",
    "operator no bound issues": "npu.no_bound",
    "aicpu issues": "npu.aicpu",
    "affinity api issues": "npu.affinity_api",
    "packet analysis": "npu.packet",
    "synchronize stream issues": "npu.synchronize_stream",
}
#: Categories that are no finding: a comparison table of two ranks.
TABLES = (re.compile(r"^api compare of rank\d+ step\d+ and rank\d+ step\d+$"),)
#: (set, category) where the advisor reports what the capture holds no evidence of.
NO_EVIDENCE = {("npu_text_level0", "operator dynamic shape issues")}


def _unpack(name: str, dest: Path) -> Path:
    return copied(CORPUS / name, dest)


class Run:
    def __init__(self, name: str, folder: Path, advice: Advice, result: Captures) -> None:
        self.name, self.folder, self.advice, self.result = name, folder, advice, result
        self.findings: list[Finding] = find(*answered(result))[0]
        self._whole: list[TraceData] | None = None

    def rules(self) -> set[str]:
        return {f.rule for f in self.findings}

    def rule(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule == rule]

    def captures(self) -> list[TraceData]:
        """The torch_npu captures read whole (``analyse`` keeps each rank's answers, not its
        operators, which the per-rank checks here look at)."""
        if self._whole is None:
            whole = [read(p, self.folder) for p in survey(self.folder)[0]]
            self._whole = [t for t in whole if t.npu is not None]
        return self._whole

    def capture(self, rank: int | None) -> TraceData:
        return next(t for t in self.captures() if t.rank == rank)

    def problems(self) -> dict[str, dict[str, Any]]:
        """category -> (problem row, its rank prefix)."""
        out = {}
        for name, row in self.advice.problems.items():
            m = re.match(r"^rank (\d+) ", name.strip().lower())
            out[category(name)] = {**row, "rank": int(m.group(1)) if m else None, "sheet": name}
        return out


def _advise_live(folder: Path) -> dict[str, Any]:
    """``advisor all`` on ``folder`` (in a folder of its own), what the tests read of it: of its
    two long sheets, the columns read below."""
    with tempfile.TemporaryDirectory() as work:
        doc = to_json(advise(folder, Path(work)), Path(work))
    for name, rows in doc["sheets"].items():
        for part, keep in {
            "operator no bound": ("op_name", "input_shapes", "output_shapes"),
            "api compare": ("Diff Total Ratio",),
        }.items():
            if part in name.lower():
                doc["sheets"][name] = [{k: row.get(k) for k in keep} for row in rows]
    return doc


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    root = tmp_path_factory.mktemp("advisor")
    folders = {name: _unpack(name, root / "sets" / name) for name in SETS}
    store = Store("msprof_advisor", "msprof-analyze")

    def one(name: str) -> Run:
        advice = from_json(store.figures(_advise_live, folders[name], name, (name,)))
        return Run(name, folders[name], advice, analyse(folders[name], cache=False))

    with ThreadPoolExecutor(max_workers=4) as pool:
        return {run.name: run for run in pool.map(one, SETS)}


# ------------------------------------------------------------------------------ coverage


@pytest.mark.parametrize("name", SETS)
def test_the_advisor_reads_every_set_but_the_two_it_cannot(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    if name in UNREADABLE:
        assert run.advice.xlsx is None and not run.advice.problems
        assert any(UNREADABLE[name] in line for line in run.advice.errors), run.advice.errors
        # and we still answer there: the environment, the host's waits, the ranks' spread
        assert run.findings, name
    else:
        assert run.advice.xlsx is not None and run.advice.problems, run.advice.errors


@pytest.mark.parametrize("name", SETS)
def test_every_advisor_category_has_our_finding(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    for cat, row in run.problems().items():
        if any(t.match(cat) for t in TABLES):
            continue  # checked in test_api_comparison_finds_nothing
        assert cat in RULE_OF, f"{name}: advisor category {row['sheet']!r} has no rule of ours"
        rule = RULE_OF[cat]
        if cat == "slow rank" and "no slow rank" in (row["description"] or ""):
            assert rule not in run.rules()
            continue
        if cat == "slow link":
            continue  # always reported: test_slow_link_is_the_advisors_bandwidth
        if (name, cat) in NO_EVIDENCE:
            continue  # test_dynamic_shape_needs_an_op_state
        found = run.rule(rule)
        assert found, f"{name}: advisor reports {row['sheet']!r}, we have no {rule}"
        if row["rank"] is not None:
            assert row["rank"] in found[0].ranks


# ------------------------------------------------------------------------------ the numbers


def _with(runs: dict[str, Run], cat: str) -> list[Run]:
    out = [r for r in runs.values() if cat in r.problems()]
    return out


def test_environment_variables_are_the_advisors(runs: dict[str, Run]) -> None:
    checked = _with(runs, "environment variable issues")
    assert checked
    for run in checked:
        theirs = {
            r["Environment"]: r["Value"] or ""
            for r in run.advice.sheets["Environment Variable Issues"]
        }
        for t in run.captures():
            issue = env_rules.env_issues(t)
            assert issue is not None and issue.flagged == theirs, (run.name, t.rank)
        assert all(k in run.rule("npu.env_vars")[0].title for k in theirs)


def test_unaligned_operators_and_abnormal_durations_are_the_advisors(runs: dict[str, Run]) -> None:
    checked = _with(runs, "byte alignment analysis")
    assert checked
    for run in checked:
        theirs = run.advice.sheets["Byte Alignment Analysis"]
        assert theirs
        matches = []
        for t in run.captures():
            al = layout_rules.alignment(t)
            ours = {a.op: a for a in (al.ops if al else [])}
            if all(_same_alignment(ours.get(str(r["op name"])), r) for r in theirs) and (
                len(ours) == len(theirs)
            ):
                matches.append(t.rank)
        assert matches, (run.name, theirs)
        finding = run.rule("npu.byte_alignment")[0]
        assert all(str(r["op name"]) in finding.detail for r in theirs)


def _same_alignment(a: layout_rules.Aligned | None, row: dict[str, Any]) -> bool:
    return (
        a is not None
        and a.bytes == int(float(row["total size(Byte)"]))
        and (abs(a.us - float(row["duration(us)"])) < 1e-3)
        and (abs(a.unaligned_us - float(row["abnormal duration(us)"])) < 1e-3)
        and (abs(a.gbps - float(row["bandwidth(GB/s)"])) < 1e-3)
    )


_VECTOR = re.compile(
    r"^(\S+) Op shape: (\S*) dtype: \S* (?:suspect there is room for "
    r"performance optimization, refer to Performance Optimization Space: "
    r"([\d.]+)%|bound type: (\S+) bound)$"
)


def test_vector_operators_and_their_room_are_the_advisors(runs: dict[str, Run]) -> None:
    checked = _with(runs, "vector operator perf analysis")
    assert checked
    for run in checked:
        rooms: list[tuple[str, str, float]] = []
        bounds: list[tuple[str, str, str]] = []
        for row in run.advice.sheets["Vector Operator Perf Analysis"]:
            for line in str(row["Description"] or "").splitlines():
                m = _VECTOR.match(line.strip())
                assert m, line
                if m.group(3):
                    rooms.append((m.group(1), m.group(2), float(m.group(3))))
                else:
                    bounds.append((m.group(1), m.group(2), m.group(4)))
        assert rooms and bounds

        def agrees(t: TraceData) -> bool:
            every_room, every_bound = ops_rules.vector_ops(t, top=None)
            room = {(v.name, v.shape): v.room * 100 for v in every_room}
            bound = {(v.name, v.shape): v.bound for v in every_bound}
            top, top_bound = ops_rules.vector_ops(t)
            # the advisor's top five (its order of ties varies run to run): each one ours with
            # the same room, and the most room the same; its bound ones ours, as bound
            return (
                all(abs(room.get((n, s), -1) - v) < 0.006 for n, s, v in rooms)
                and abs(top[0].room * 100 - max(v for _, _, v in rooms)) < 0.006
                and all(bound.get((n, s)) == b for n, s, b in bounds)
                and {(v.name, v.shape) for v in top_bound} == {(n, s) for n, s, _ in bounds}
            )

        assert any(agrees(t) for t in run.captures()), (run.name, rooms, bounds)
        assert run.rule("npu.vector_ops")


def test_dynamic_shape_needs_an_op_state(runs: dict[str, Run]) -> None:
    checked = _with(runs, "operator dynamic shape issues")
    assert checked
    for run in checked:
        rank = run.problems()["operator dynamic shape issues"]["rank"]
        kernels = run.capture(rank).path / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
        with open(kernels, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f))
        if (run.name, "operator dynamic shape issues") in NO_EVIDENCE:
            # the advisor's claim has nothing under it: no state was recorded
            assert "OP State" not in header
            assert layout_rules.dynamic_shape(run.capture(rank)) is None
            assert not run.rule("npu.dynamic_shape")
        else:
            runs_, static = layout_rules.dynamic_shape(run.capture(rank)) or (0, -1)
            assert runs_ > 0 and static == 0
            assert rank in run.rule("npu.dynamic_shape")[0].ranks


def test_affinity_apis_are_the_advisors(runs: dict[str, Run]) -> None:
    checked = _with(runs, "affinity api issues")
    assert checked
    for run in checked:
        theirs = {str(r["Affinity API"]) for r in run.advice.sheets["Affinity API Issues"]}
        ours = {api for t in run.captures() for api, _, _ in ops_rules.affinity(t).values()}
        assert theirs == ours, run.name
        assert all(any(api in f.title for f in run.rule("npu.affinity_api")) for api in theirs)


_SLOW = re.compile(
    r"(Computing|Communication|Free)\s+has some issues in the cluster,\s+"
    r"because the max difference of \w+ time\s+has reached ([\d.]+)ms"
)


def test_slow_rank_is_the_advisors_spread(runs: dict[str, Run]) -> None:
    checked = _with(runs, "slow rank")
    assert {r.name for r in checked} >= {"npu_text_level0", "npu_db_level1"}
    for run in checked:
        theirs = {
            m.group(1): float(m.group(2))
            for m in _SLOW.finditer(run.problems()["slow rank"]["description"] or "")
        }
        (spread,) = ranks_rules.rank_spread(*answered(run.result))  # one step on these sets
        ours = {
            p: spread.gap(p)[0]
            for p in spread.parts
            if spread.gap(p)[0] / spread.mean_ms > ranks_rules.SPREAD
        }
        assert ours.keys() == theirs.keys(), run.name
        assert all(abs(ours[p] - theirs[p]) < 1e-3 for p in ours)
        assert bool(run.rule("npu.slow_rank")) == bool(theirs)
        # and the per-rank figures under it (us there)
        for row in run.advice.sheets["slow rank"]:
            r = int(float(row["rank_id"]))
            for part, col in (
                ("Computing", "compute(us)"),
                ("Communication", "communication(us)"),
                ("Free", "free(us)"),
            ):
                assert abs(spread.parts[part][r] - float(row[col]) / 1000) < 1e-6


_LINK = re.compile(
    r"(RDMA|SDMA) bandwidth\(GB/s\):\s+The average is ([\d.]+),\s+while the "
    r"maximum\s+is ([\d.]+)GB/s\s+and the minimum is ([\d.]+)GB/s"
)


def test_slow_link_is_the_advisors_bandwidth(runs: dict[str, Run]) -> None:
    checked = _with(runs, "slow link")
    assert len(checked) >= 4
    for run in checked:
        theirs = {
            m.group(1): tuple(map(float, m.group(2, 3, 4)))
            for m in _LINK.finditer(run.problems()["slow link"]["description"] or "")
        }
        assert theirs.keys() == {"RDMA", "SDMA"}
        ours = {s.link: s for s in ranks_rules.link_spread(*answered(run.result))}
        for link, (mean, most, least) in theirs.items():
            if link not in ours:
                assert mean == most == least == 0, (run.name, link)
                continue
            values = list(ours[link].gbps.values())
            assert abs(ours[link].mean - mean) < 2e-3, (run.name, link)
            assert abs(max(values) - most) < 2e-3 and abs(min(values) - least) < 2e-3
            spread = (most - least) / mean if mean else 0.0
            flagged = [f for f in run.rule("npu.slow_link") if f.title.startswith(link)]
            assert bool(flagged) == (spread > ranks_rules.SPREAD), (run.name, link, spread)


def test_no_bound_operators_are_the_advisors_less_the_vector_bound(runs: dict[str, Run]) -> None:
    checked = _with(runs, "operator no bound issues")
    assert {r.name for r in checked} == {"npu_db_level1", "npu_db_level2"}
    for run in checked:
        problem = run.problems()["operator no bound issues"]
        t = run.capture(problem["rank"])
        theirs = run.advice.sheets[
            str(problem["sheet"]).replace("RANK", "Rank {} RANK".format(problem["rank"]), 1)[:31]
        ]
        assert len(theirs) == int(float(problem["problem count"]))
        nb = ops_rules.no_bound(t)
        assert nb is not None
        key = _op_key
        their_runs = Counter(
            key(str(r["op_name"]), str(r["input_shapes"]), str(r["output_shapes"])) for r in theirs
        )
        ours = {key(o.name, o.input_shapes, o.output_shapes): o for o in nb.ops}
        every = {key(o.name, o.input_shapes, o.output_shapes): o for o in npu_ops(t)}
        assert all(their_runs[k] == o.count for k, o in ours.items())
        extra = [every[k] for k in their_runs if k not in ours]
        # every operator only they count is bound on its own unit (over 80%)
        assert extra and all(
            max(ops_rules.unit_ratios(o).values()) > ops_rules.BOUND_RATIO for o in extra
        )
        assert all(
            their_runs[key(o.name, o.input_shapes, o.output_shapes)] == o.count for o in extra
        )
        assert len(theirs) == nb.runs + sum(o.count for o in extra)
        assert problem["rank"] in run.rule("npu.no_bound")[0].ranks


def _op_key(name: str, ins: str, outs: str) -> tuple[str, str, str]:
    """An operator by name and shapes, as both sides write them (quoted or not)."""
    return name, ins.strip('"'), outs.strip('"')


def npu_ops(t: TraceData) -> list[Any]:
    assert t.npu is not None
    return t.npu.ops


_PACKET = re.compile(
    r"In the (SDMA|RDMA) communication, ([\d.]+)% of the communication data "
    r"volume is less than ([\d.]+) MB, and the total time is ([\d.]+) ms"
)


def test_small_packets_are_the_advisors_less_its_total_rows(runs: dict[str, Run]) -> None:
    checked = _with(runs, "packet analysis")
    assert checked
    for run in checked:
        row = run.advice.sheets["Packet Analysis"][0]
        for m in _PACKET.finditer(run.problems()["packet analysis"]["description"] or ""):
            link = m.group(1)
            small = int(float(row[f"Small {link} count"]))
            total = int(float(row[f"{link} total count"]))
            small_ms = float(m.group(4))
            matched = []
            for t in run.captures():
                p = next((p for p in ranks_rules.packets(t) if p.link == link), None)
                if p and p.small == small and abs(p.small_ms - small_ms) < 1e-4:
                    # the advisor also counts each "Total Op Info" row that moved data
                    totals = _total_rows(t, link)
                    if p.ops + totals == total:
                        matched.append(t.rank)
            assert matched, (run.name, link, small, total, small_ms)
            assert any(
                f.title.split(" ")[3] == link or link in f.title for f in run.rule("npu.packet")
            )


def _total_rows(t: TraceData, link: str) -> int:
    doc = json.loads((t.path / "ASCEND_PROFILER_OUTPUT" / "communication.json").read_text())
    return sum(
        1
        for kinds in doc.values()
        for ops in kinds.values()
        for op, info in ops.items()
        if op == "Total Op Info"
        and (
            info.get("Communication Bandwidth Info", {}).get(link, {}).get("Transit Size(MB)") or 0
        )
        > 0
    )


def test_api_comparison_finds_nothing(runs: dict[str, Run]) -> None:
    seen = 0
    for run in runs.values():
        for cat, row in run.problems().items():
            if any(t.match(cat) for t in TABLES):
                seen += 1
                assert not row.get("suggestion")
                sheet = next(
                    v for k, v in run.advice.sheets.items() if k.lower().startswith("api compare")
                )
                ratios = [
                    float(r["Diff Total Ratio"])
                    for r in sheet
                    if r.get("Diff Total Ratio") not in (None, "", "inf")
                ]
                # no API of one rank takes twice or half its time on the other: nothing to say
                assert ratios and all(0.5 <= x <= 2 for x in ratios)
    assert seen


def test_the_issues_host_figures(runs: dict[str, Run]) -> None:
    """Issue 24's figures on npu_text_level1: aclopCompileAndExecute 28.7 ms and
    aclrtSynchronizeStreamWithTimeout 191 ms over its two ranks, from api_statistic.csv."""
    run = runs["npu_text_level1"]
    waits = [host_rules.host_waits(t) for t in run.captures()]
    compiles = [host_rules.compile_calls(t) for t in run.captures()]
    with_stats = {}
    for t in run.captures():
        with open(t.path / "ASCEND_PROFILER_OUTPUT" / "api_statistic.csv", newline="") as f:
            for row in csv.DictReader(f):
                with_stats[(t.rank, row["API Name"])] = float(row["Time(us)"])
    for t, w, c in zip(run.captures(), waits, compiles):
        assert w is not None and c is not None
        assert w.us == pytest.approx(with_stats[(t.rank, "aclrtSynchronizeStreamWithTimeout")])
        assert c.apis["aclopCompileAndExecute"][1] == pytest.approx(
            with_stats[(t.rank, "aclopCompileAndExecute")]
        )
    wait = run.rule("npu.host_wait")[0]
    compile_ = run.rule("npu.runtime_compile")[0]
    total_wait = sum(w.us for w in waits if w) / 1000
    total_compile = sum(c.apis["aclopCompileAndExecute"][1] for c in compiles if c) / 1000
    assert round(total_wait) == 191 and round(total_compile, 1) == 28.7
    assert f"{total_wait:,.1f} ms" in wait.detail and f"{total_compile:,.1f} ms" in (
        compile_.detail
    )
