"""Runs under one save root: each answer is one run's, the newest by default and said first;
two runs' ranks are never added up nor compared; captures from before run ids grouped by the
folder they came with."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run
from helpers import answered
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from mindspeed_prof.analysis.analyse import Captures, analyse, analyse_runs, runs_of
from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.analysis.readers import Range, TraceData
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.analysis.runs import UnknownRun
from mindspeed_prof.analysis.verdict import verdict
from mindspeed_prof.capture import run as run_id
from mindspeed_prof.cli import main
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.formats.header import CaptureHeader
from mindspeed_prof.formats.manifest import Manifest, manifest_name, write_manifest
from mindspeed_prof.formats.record import CaptureRecord


def _runs_of(root: Path) -> list[str]:
    return [
        json.loads(p.read_text())["mindspeed_prof"]["run"]
        for p in sorted(root.rglob("*.mstx.trace.json"))
    ]


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, str, str]:
    """The same app run twice into ``./profiler_data``: the first with rank 1 slow in
    actor_update, the second without (ranks 0 and 1 both times)."""
    root = tmp_path / "profiler_data"
    make_run(root, slow={(1, "actor_update"): 3}, profile_level="level_none")
    first = run_id.resolve()[0]
    run_id.new_job()
    make_run(root, profile_level="level_none")
    second = run_id.resolve()[0]
    assert first != second and sorted(set(_runs_of(root))) == sorted({first, second})
    return root, first, second


def test_the_newest_run_is_the_answer_and_its_first_line_says_so(
    two_runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, second = two_runs
    result = analyse(root)
    assert result.run is not None and result.run.id == second
    assert [r.id for r in result.runs] == [second, first]
    assert {t.meta.run for t in result.traces} == {second}
    assert [(r.stage, r.rank, r.count) for r in tables(result).stage_rank] == [
        (s, rank, 3) for s in STAGES for rank in (0, 1)
    ]  # three steps each, not six
    v = verdict(*answered(result))
    assert v.straggler is None and v.one_off is None  # run 1's slow rank is not run 2's
    assert main(["analyse", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert re.fullmatch(
        rf"2 runs under {re.escape(str(root))}; this is the newest, "
        rf"{second} \(started \d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d UTC, ranks 0, "
        r"1\); --run ID\|all",
        out[0],
    ), out[0]


def test_another_run_by_its_id_or_its_first_characters(
    two_runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, second = two_runs
    old = analyse(root, run=first)
    assert old.run is not None and old.run.id == first
    v = verdict(*answered(old))
    assert v.straggler is not None and (v.straggler.rank, v.straggler.name) == (1, "actor_update")
    assert v.behind is not None and (v.behind.behind, v.behind.compared) == (3, 3)
    unique = next(first[:n] for n in range(1, len(first) + 1) if not second.startswith(first[:n]))
    assert analyse(root, run=unique).run == old.run
    assert main(["analyse", str(root), "--run", first]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(f"2 runs under {root}; this is not the newest ({second}), {first}")


def test_an_unknown_run_names_those_there_are(
    two_runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, second = two_runs
    with pytest.raises(UnknownRun):
        analyse(root, run="nope")
    assert main(["analyse", str(root), "--run", "nope"]) == 2
    assert capsys.readouterr().err == (
        f"mindspeed-prof: --run nope: is no run here; runs here, newest first: {second}, "
        f"{first} (or --run all)\n"
    )


def test_all_runs_each_apart(
    two_runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, second = two_runs
    results = analyse_runs(root, run="all")
    assert [r.run.id for r in results if r.run] == [second, first]
    assert all(len({t.meta.run for t in r.traces}) == 1 for r in results)
    assert main(["analyse", str(root), "--run", "all"]) == 0
    heads = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run ")]
    assert [h.split()[1] for h in heads] == [second, first]
    assert main(["analyse", str(root), "--run", "all", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in doc["runs"]] == [second, first]
    assert [d["run"]["id"] for d in doc["results"]] == [second, first]
    assert doc["results"][1]["verdict"]["straggler"]["rank"] == 1


def test_json_names_the_run_and_the_line_goes_to_stderr(
    two_runs: tuple[Path, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, _, second = two_runs
    assert main(["analyse", str(root), "--json"]) == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["run"]["id"] == second and len(doc["runs"]) == 2
    assert err.startswith(f"mindspeed-prof: 2 runs under {root}; this is the newest, {second}")


def test_one_rank_run_twice_is_never_its_own_straggler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: an app run twice on one rank wrote both runs into one root; rank 0
    was called a straggler against itself and the slowest stage took 152% of the step."""
    root = tmp_path / "profiler_data"
    make_run(root, ranks=(0,), profile_level="level_none")
    run_id.new_job()
    make_run(root, ranks=(0,), profile_level="level_none", slow={(0, "actor_generate"): 20})
    for result in analyse_runs(root, run="all"):
        v = verdict(*answered(result))
        assert v.straggler is None and v.one_off is None and not result.clashes
        assert v.slowest is not None and v.slowest.share is not None
        assert 0.0 < v.slowest.share <= 1.0
    assert main(["analyse", str(root), "--run", "all"]) == 0
    out = capsys.readouterr().out
    assert "straggler " not in out and "claimed by" not in out  # no verdict line names one


def test_a_manifests_captures_join_its_run(tmp_path: Path) -> None:
    """A capture whose header names no run (another tool's trace, a torch_npu folder) is
    the run of the manifest that records it among its captures."""
    root = tmp_path / "profiler_data"
    make_run(root, ranks=(0,), profile_level="level_none")
    ours = run_id.resolve()[0]
    other = root / "integrated" / "rank0_worker.pt.trace.json"
    other.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "aten::mm",
                        "ts": 1,
                        "dur": 2,
                        "pid": 1,
                        "tid": 1,
                    }
                ]
            }
        )
    )
    write_manifest(
        root / manifest_name(ours, 0),
        Manifest(run=ours, rank=0, captures=[CaptureRecord(files=[str(other)])]),
    )
    result = analyse(root)
    assert result.runs and len(result.runs) == 1 and other in {t.path for t in result.traces}


def _old_range_file(path: Path, rank: int, ms: float) -> None:
    """A range file as mindspeed-prof wrote it before run ids (no ``run`` in its header)."""
    events = [
        {
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "cat": "step",
            "name": "ProfilerStep#1",
            "ts": 0,
            "dur": ms * 1000 + 10,
            "args": {"step": 1},
        },
        {
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "cat": "stage",
            "name": "actor_update",
            "ts": 5,
            "dur": ms * 1000,
            "args": {"step": 1},
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "mindspeed_prof": {"kind": "spans", "format": 2, "rank": rank},
                "traceEvents": events,
                "closed": True,
            }
        )
    )


def test_captures_from_before_run_ids_are_grouped_by_their_manifests_folder(tmp_path: Path) -> None:
    """An old multirun's save root: a folder per job, each with its old manifest; a capture
    in no such folder is of the run ``legacy``."""
    root = tmp_path / "profiler_data"
    for job, ms in (("0", 10.0), ("1", 30.0)):
        _old_range_file(root / job / "integrated" / "rank0_h_1_step1.mstx.trace.json", 0, ms)
        (root / job / f"manifest.job{job}.json").write_text(
            json.dumps({"status": "completed", "rank": 0, "start_time": float(job)})
        )
    _old_range_file(root / "elsewhere" / "rank0_h_9_step1.mstx.trace.json", 0, 20.0)
    results = analyse_runs(root, run="all")
    assert {r.run.id: [s.mean_ms for s in tables(r).stage_rank] for r in results if r.run} == {
        "legacy:0": [10.0],
        "legacy:1": [30.0],
        "legacy": [20.0],
    }
    assert all(r.run and r.run.legacy and not r.clashes for r in results)


def test_doctor_reads_every_run_and_expects_ranks_run_by_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "profiler_data"
    make_run(root, ranks=(0, 1), profile_level="level_none")
    first = run_id.resolve()[0]
    run_id.new_job()
    make_run(root, ranks=(1,), profile_level="level_none")  # the restart lost rank 0
    second = run_id.resolve()[0]
    health = doctor(root)
    assert [r["id"] for r in health.runs] == [second, first]
    assert [(f.kind, f.message) for f in health.findings] == [
        ("missing_rank", f"rank 0: expected in run {second}, but no capture file found")
    ]
    assert main(["doctor", str(root)]) == 3
    out = capsys.readouterr().out
    assert f"runs: 2, newest first: {second} (started " in out


# -- every view's shares, on random roots of several runs --------------------------------------


def _trace(
    run: str, rank: int, steps: dict[int, list[tuple[str, float, float, str]]], gap: float
) -> TraceData:
    """A range file of ``run`` on ``rank``: per step, its stages (name, start offset, ms,
    thread); the step lasts ``gap`` ms past its last stage's end."""
    t = TraceData(
        Path(f"r/{run}/rank{rank}.mstx.trace.json"),
        "spans",
        rank,
        "integrated",
        1,
        meta=CaptureHeader(run=run, kind="spans", rank=rank),
    )
    base = 0.0
    for step, stages in steps.items():
        end = max((off + ms for _, off, ms, _ in stages), default=0.0)
        t.ranges.append(
            Range(rank, "step", f"ProfilerStep#{step}", step, base * 1000, (end + gap) * 1000)
        )
        t.ranges += [
            Range(
                rank,
                "stage",
                name,
                step,
                (base + off) * 1000,
                ms * 1000,
                tid=tid,
                bare=ms * 1000 * 0.3,
            )
            for name, off, ms, tid in stages
        ]
        base += end + gap + 1.0
    return t


stage = st.tuples(
    st.sampled_from(STAGES[:3]),
    st.floats(0.0, 50.0),
    st.floats(0.1, 80.0),
    st.sampled_from(["1", "2"]),
)  # two threads: stages may overlap
step_stages = st.lists(stage, min_size=1, max_size=4)
run_plan = st.dictionaries(
    st.integers(0, 2),  # rank -> steps (4 or more: trends are fitted)
    st.dictionaries(st.integers(1, 6), step_stages, min_size=1, max_size=5),
    min_size=1,
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(run_plan, min_size=1, max_size=3), st.floats(0.0, 20.0))
def test_no_share_is_over_100_percent_and_no_run_is_mixed(
    plans: list[dict[int, Any]], gap: float
) -> None:
    traces = [
        _trace(f"run{i}", rank, steps, gap)
        for i, plan in enumerate(plans)
        for rank, steps in plan.items()
    ]
    results = runs_of(Captures(root=Path("/no/such/root"), traces=traces), "all")
    assert sorted(r.run.id for r in results if r.run) == [f"run{i}" for i in range(len(plans))]
    for result in results:
        assert result.run is not None
        runs = {t.meta.run for t in result.traces}
        assert runs == {result.run.id} and not result.clashes  # each rank once per run
        v = verdict(*answered(result))
        if v.slowest is not None and v.slowest.share is not None:
            assert 0.0 <= v.slowest.share <= 1.0 + 1e-9
        for row in tables(result).no_op:
            assert 0.0 <= row.share <= 1.0
        for g in (v.straggler, v.one_off):
            assert g is None or g.rank in {t.rank for t in result.traces}
        buf = StringIO()
        from mindspeed_prof.views.text import print_analysis

        print_analysis(report(result), Console(file=buf, width=100))
        text = " ".join(buf.getvalue().split())
        assert not re.search(r"-\d+%", text)  # no share below 0
        shares = re.findall(
            r"(\d+)% of (?:the|its|a) step|grew from (\d+)% to (\d+)%"
            r"|│ (\d+)% │",
            text,
        )
        assert all(int(p) <= 100 for found in shares for p in found if p)


def test_two_old_captures_of_one_rank_are_warned_of_before_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Captures from before run ids, no manifest: one group, so two that claim rank 0 step 1
    clash; the warning comes before any number it bears on, not under the tables."""
    _old_range_file(tmp_path / "a" / "rank0_h_1_step1.mstx.trace.json", 0, 10.0)
    _old_range_file(tmp_path / "b" / "rank0_h_1_step1.mstx.trace.json", 0, 30.0)
    assert main(["analyse", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    warning = out.index("warning: rank 0, step 1: claimed by 2 captures")
    assert warning < out.index("Verdict") and out.count("claimed by 2 captures") == 1


def test_the_default_run_is_the_newest_with_an_id_where_any_has_one() -> None:
    """A foreign trace (or an older tool's) dropped into a save root later than our run does
    not hide it: the answer is for the newest run with an id, and the first line says so;
    with only captures without an id, the newest of those."""
    from mindspeed_prof.analysis.runs import RunInfo, choose, runs_line

    foreign = RunInfo(id="legacy", started=200.0, ranks=[None], captures=1, legacy=True)
    ours = RunInfo(id="20261130-100000-3f9a2c", started=100.0, ranks=[0, 1], captures=2)
    older = RunInfo(id="20261129-100000-000001", started=50.0, ranks=[0], captures=1)
    runs = [foreign, ours, older]
    assert choose(runs, None) == [ours]
    assert choose(runs, "all") == runs and choose(runs, "legacy") == [foreign]
    line = runs_line(Path("root"), runs, ours)
    assert line is not None and "this is the newest with a run id, 20261130-100000-3f9a2c" in line
    other = runs_line(Path("root"), runs, older)
    assert other is not None and "not the newest (20261130-100000-3f9a2c)" in other
    assert choose([foreign], None) == [foreign]
