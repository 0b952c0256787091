"""``doctor``: each kind of problem found once, a healthy run passes, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.cli import main


def capture(root: Path, ranks: tuple[int, ...] = (0, 1), steps: int = 3) -> list[Path]:
    files = []
    for rank in ranks:
        prof = Profiler.from_config(
            {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "backend": "none",
                "profile_step_end": steps + 1,
                "profile_save_path": str(root),
            },
            rank=rank,
        )
        for step in range(1, steps + 1):
            with prof.step(step), mstx.range("work"):
                pass
        prof.close()
        files += [Path(f) for c in prof.captures for f in c.files]
    return files


def test_healthy_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capture(tmp_path)
    health = doctor(tmp_path)
    assert health.healthy and health.ranks_found == [0, 1] and health.ranks_expected == [0, 1]
    assert set(health.disk_per_rank) == {0, 1}
    assert main(["doctor", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "healthy"
    assert main(["doctor", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["healthy"], data["root"], data["findings"]) == (True, str(tmp_path), [])


def test_every_problem_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = capture(tmp_path)
    b.write_bytes(b.read_bytes()[:-30])  # cut by SIGKILL mid-write
    (a.parent / "rank0_h_1_step9.pt.trace.json").write_bytes(b"")
    (a.parent / "rank0_h_1_step9.pt.trace.json.tmp").write_text("{")
    (tmp_path / "manifest.rank3.json").write_text(
        json.dumps(
            {
                "rank": 3,
                "status": "completed",
                "captures": [],
                "profiler_config": {
                    "integrated": {
                        "profile": True,
                        "profile_step_start": 50,
                        "profile_step_end": 51,
                    }
                },
            }
        )
    )
    skewed = json.loads(a.read_text())
    skewed["mindspeed_prof"]["host"] = "other"
    for event in skewed["traceEvents"]:
        event["ts"] += 2_000_000  # 2 s later than the same step on the first host
    (a.parent / "rank2_other_1_step1.mstx.trace.json").write_text(json.dumps(skewed))
    health = doctor(tmp_path)
    kinds = sorted(f.kind for f in health.findings)
    assert kinds == [
        "clock_skew",
        "empty",
        "missing_rank",
        "nothing_captured",
        "temp_file",
        "truncated",
    ]
    (missing,) = [f for f in health.findings if f.kind == "missing_rank"]
    assert missing.where == "rank 3"
    assert main(["doctor", str(tmp_path), "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["healthy"] is False and len(data["findings"]) == 6
    assert data["root"] == str(tmp_path) and data["ranks_expected"] == [0, 1, 2, 3]
    assert main(["doctor", str(tmp_path), "--skew-ms", "5000"]) == 3
    out = capsys.readouterr().out
    assert "clock" not in out and "truncated" in out and out.splitlines()[-1] == "5 finding(s)"


def test_missing_root_exits_1(tmp_path: Path) -> None:
    assert main(["doctor", str(tmp_path / "nope")]) == 1


def test_nothing_to_check_is_not_healthy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("no capture here")
    health = doctor(tmp_path)
    assert [f.kind for f in health.findings] == ["no_captures"]
    assert main(["doctor", str(tmp_path)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{tmp_path}: no captures found") and out[-1] == "1 finding(s)"
    assert "healthy" not in out


def test_another_tools_captures_are_read_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Kineto trace named by no rule of ours: its rank from distributedInfo, a part analyse
    skips is a finding, a note stays a note; no rank is expected without a manifest."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2},
        {"ph": "X", "cat": "cpu_op", "name": "bad", "ts": 5, "dur": -1},
    ]
    (tmp_path / "worker.json").write_text(
        json.dumps({"distributedInfo": {"rank": 5}, "traceEvents": events})
    )
    health = doctor(tmp_path)
    assert health.captures_per_rank == {"5": 1} and health.ranks_found == [5]
    assert health.ranks_expected == []  # rank 5 of a run we know nothing of: 0-4 not missing
    (finding,) = health.findings
    assert finding.kind == "partly_read" and finding.where == "worker.json"
    assert finding.message.startswith("worker.json: 1 events end before they start")
    assert main(["doctor", str(tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "captures: 1 (rank 5: 1)" in out and "expected unknown: no manifest names them" in out


def test_an_anomaly_is_named_at_the_step_it_was_seen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import time

    prof = Profiler.from_config(
        {
            "integrated": {
                "profile": True,
                "mstx": True,
                "profile_level": "level_none",
                "profile_step_start": 100,
                "profile_step_end": 101,
                "profile_save_path": str(tmp_path),
            },
            "extensions": {
                "backend": "none",
                "flight_recorder_steps": 3,
                "anomaly_factor": 3.0,
                "anomaly_window": 3,
                "anomaly_min_ms": 250.0,
            },
        },
        rank=0,
    )
    for step in range(1, 9):  # the floor keeps a loaded machine's jitter from triggering
        with prof.step(step), prof.stage("actor_generate"):
            time.sleep(0.4 if step == 8 else 0.005)
    prof.close()
    (dump,) = doctor(tmp_path).triggered
    assert (dump["trigger_step"], dump["steps"]) == (8, [6, 7, 8])
    assert main(["doctor", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "triggered: rank 0 step 8: flight (anomaly; holds steps 6-8)" in out


@pytest.mark.parametrize(
    "name, content, why",
    [
        (
            "rank0_h_1_step1.mstx.trace.json",  # a range file closed with no range in it
            {
                "mindspeed_prof": {"kind": "spans", "format": 2, "rank": 0},
                "traceEvents": [],
                "closed": True,
            },
            "no ranges recorded (did the window's steps run?)",
        ),
        (
            "rank0_x.pt.trace.json",
            {"traceEvents": []},  # a Kineto trace with no events
            "captured nothing (no ranges, no ops): analyse counts it but has nothing to show",
        ),
        (
            "rank0_x.pt.trace.json",
            {
                "distributedInfo": {"rank": 0},
                "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}],
            },
            "captured nothing (no ranges, no ops): analyse counts it but has nothing to show",
        ),
    ],
)
def test_a_capture_with_an_empty_event_list_is_a_finding(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: dict[str, object],
    why: str,
) -> None:
    (tmp_path / name).write_text(json.dumps(content))
    health = doctor(tmp_path)
    (finding,) = health.findings
    assert (finding.kind, finding.where, finding.message) == ("empty", name, f"{name}: {why}")
    assert main(["doctor", str(tmp_path)]) == 3
    assert capsys.readouterr().out.splitlines()[-1] == "1 finding(s)"


@pytest.mark.parametrize("status", ["completed", "exited"])
def test_a_job_that_ended_having_captured_nothing_is_named(tmp_path: Path, status: str) -> None:
    capture(tmp_path, ranks=(0,))
    (tmp_path / "manifest.rank1.json").write_text(
        json.dumps(
            {
                "rank": 1,
                "status": status,
                "captures": [],
                "profiler_config": {
                    "integrated": {"profile": True, "profile_step_start": 5, "profile_step_end": 7}
                },
            }
        )
    )
    by_kind = {f.kind: f for f in doctor(tmp_path).findings}
    assert set(by_kind) == {"nothing_captured", "missing_rank"}
    assert by_kind["nothing_captured"].message == (
        f"rank 1: the job {status} but captured nothing (window [5, 7): did the run reach "
        "step 5? were the hooks called?)"
    )


@pytest.mark.parametrize("status, captures", [("running", []), ("exited", [{"step": 5}])])
def test_a_job_still_running_or_that_captured_is_not_blamed(
    tmp_path: Path, status: str, captures: list[dict[str, int]]
) -> None:
    capture(tmp_path, ranks=(0,))
    (tmp_path / "manifest.rank1.json").write_text(
        json.dumps(
            {
                "rank": 1,
                "status": status,
                "captures": captures,
                "profiler_config": {"integrated": {"profile": True}},
            }
        )
    )
    assert [f.kind for f in doctor(tmp_path).findings] == ["missing_rank"]


def ranges(
    path: Path, starts: dict[int, float | None], host: str | None = "h", **meta: object
) -> Path:
    """A closed range file written by hand: one step range per entry of ``starts`` (its start
    in us; None: an event with no ``ts``), header fields from ``meta`` over the defaults."""
    header: dict[str, object] = {"kind": "spans", "format": 2, "stage": "all", "step": 1}
    if host is not None:
        header["host"] = host
    header.update(meta)
    events = []
    for step, ts in starts.items():
        event: dict[str, object] = {
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "cat": "step",
            "name": f"ProfilerStep#{step}",
            "dur": 10.0,
            "args": {"step": step},
        }
        if ts is not None:
            event["ts"] = ts
        events.append(event)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mindspeed_prof": header, "traceEvents": events, "closed": True}))
    return path


def test_disk_per_rank_sums_every_file_named_for_the_rank(tmp_path: Path) -> None:
    a = ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    b = tmp_path / "rank0_h_1_step1.summary.json"
    b.write_text('{"steps": []}')
    c = ranges(tmp_path / "sub" / "rank1_h_2_step1.mstx.trace.json", {1: 100.0}, rank=1)
    health = doctor(tmp_path)
    assert health.disk_per_rank == {0: a.stat().st_size + 13, 1: c.stat().st_size}


def test_the_cheap_checks_say_what_they_saw(tmp_path: Path) -> None:
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "rank0_h_1_step2.mstx.trace.json").write_bytes(b"")
    (tmp_path / "rank0_h_1_step3.mstx.trace.json.tmp").write_text("{")
    found = {(f.kind, f.where, f.message) for f in doctor(tmp_path).findings}
    assert found == {
        ("empty", "rank0_h_1_step2.mstx.trace.json", "rank0_h_1_step2.mstx.trace.json: empty file"),
        (
            "temp_file",
            "rank0_h_1_step3.mstx.trace.json.tmp",
            "rank0_h_1_step3.mstx.trace.json.tmp: temporary file left behind by an interrupted "
            "write",
        ),
    }


def test_a_rank_whose_only_capture_is_cut_still_counts_towards_the_ranks_expected(
    tmp_path: Path,
) -> None:
    """Rank 1's file, cut mid-write, is never read, yet its name says rank 1 ran: ranks 0-1
    are expected and rank 1 is not called missing (its file has its own finding)."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    cut = ranges(tmp_path / "rank1_h_2_step1.mstx.trace.json", {1: 100.0}, rank=1)
    cut.write_bytes(cut.read_bytes()[:-20])
    health = doctor(tmp_path)
    assert health.ranks_expected == [0, 1] and health.ranks_found == [0, 1]
    assert [(f.kind, f.where) for f in health.findings] == [
        ("truncated", "rank1_h_2_step1.mstx.trace.json")
    ]


def test_a_job_that_captured_nothing_is_not_also_told_there_are_no_captures(tmp_path: Path) -> None:
    (tmp_path / "manifest.rank0.json").write_text(
        json.dumps(
            {
                "rank": 0,
                "status": "completed",
                "captures": [],
                "profiler_config": {
                    "integrated": {"profile": True, "profile_step_start": 5, "profile_step_end": 7}
                },
            }
        )
    )
    assert sorted(f.kind for f in doctor(tmp_path).findings) == ["missing_rank", "nothing_captured"]


def test_no_captures_names_the_root(tmp_path: Path) -> None:
    (finding,) = doctor(tmp_path).findings
    assert (finding.kind, finding.where, finding.message) == (
        "no_captures",
        ".",
        f"{tmp_path}: no captures found (no trace, range file or torch_npu "
        "folder that analyse reads)",
    )


@pytest.mark.parametrize(
    ("world", "expected", "missing"),
    [
        (4, [0, 2, 3], ["rank 3"]),  # the job has a rank 3: it is missing
        (3, [0, 2], []),  # profile_ranks names a rank 3 the job of three ranks does not have
        (None, [0, 2], []),  # the job's size unknown: a rank named only by the list is not expected
    ],
)
def test_profile_ranks_name_the_ranks_expected(
    tmp_path: Path, world: int | None, expected: list[int], missing: list[str]
) -> None:
    """A manifest's ``profile_ranks`` is the list: no rank below the highest seen is assumed,
    and none is expected only because the list names it."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    ranges(tmp_path / "rank2_h_2_step1.mstx.trace.json", {1: 100.0}, rank=2)
    (tmp_path / "manifest.rank0.json").write_text(
        json.dumps(
            {
                "rank": 0,
                "status": "running",
                "captures": [],
                "job": {"world_size": world},
                "profiler_config": {"integrated": {"profile": True, "profile_ranks": [0, 2, 3]}},
            }
        )
    )
    health = doctor(tmp_path)
    assert health.ranks_expected == expected
    assert [f.where for f in health.findings if f.kind == "missing_rank"] == missing


def test_profile_ranks_naming_no_rank_of_the_job_expects_none_of_them(tmp_path: Path) -> None:
    """``profile_ranks: [7]`` in a job of two ranks: both ranks' manifests, no capture. Doctor
    said ``rank 7: expected, but no capture file found``; the job has no rank 7."""
    for rank in (0, 1):
        (tmp_path / f"manifest.rank{rank}.json").write_text(
            json.dumps(
                {
                    "rank": rank,
                    "status": "completed",
                    "captures": [],
                    "job": {"world_size": 2},
                    "profiler_config": {"integrated": {"profile": True, "profile_ranks": [7]}},
                }
            )
        )
    health = doctor(tmp_path)
    assert health.ranks_expected == []
    assert not [f for f in health.findings if "rank 7" in f.message]


def test_a_manifest_without_a_profiler_config_is_read(tmp_path: Path) -> None:
    """A manifest that records no ``profiler_config`` (nor its ``integrated`` section): its rank
    is expected, but nothing says it meant to profile, so it is not blamed for no capture."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "manifest.rank1.json").write_text(
        json.dumps({"rank": 1, "status": "completed", "captures": []})
    )
    (tmp_path / "manifest.rank2.json").write_text(
        json.dumps(
            {"rank": 2, "status": "completed", "captures": [], "profiler_config": {"other": {}}}
        )
    )
    health = doctor(tmp_path)
    assert health.ranks_expected == [0, 1, 2]
    assert [(f.kind, f.where) for f in health.findings] == [
        ("missing_rank", "rank 1"),
        ("missing_rank", "rank 2"),
    ]


def test_a_malformed_manifest_is_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    """A manifest with a field of the wrong type is not read: one ``unreadable`` finding naming
    it and the field; one with an odd capture entry is read, that entry named."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "manifest.rank1.json").write_text(
        json.dumps({"rank": 1, "status": "completed", "job": {"num": "one"}})
    )
    (tmp_path / "manifest.rank2.json").write_text(
        json.dumps({"rank": 2, "status": "completed", "captures": ["odd"]})
    )
    health = doctor(tmp_path)
    said = [(f.kind, f.message) for f in health.findings if f.kind == "unreadable"]
    assert said == [
        (
            "unreadable",
            "manifest.rank1.json: not read: not a manifest: job.num: expected int | null, got str",
        ),
        (
            "unreadable",
            "manifest.rank2.json: not read: its captures[0] of the wrong shape; the rest read",
        ),
    ]
    assert health.ranks_expected == [0, 2]  # rank 1's manifest is not read


def test_the_cluster_summary_names_ranks_and_triggered_captures(tmp_path: Path) -> None:
    """Each enabled worker of ``cluster_summary.json`` is expected (a disabled one is not), and
    its triggered captures are listed with the fields the manifest records."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    triggered = {
        "stage": "all",
        "step": 4,
        "index": 0,
        "rank": 0,
        "role": "integrated",
        "backend": "none",
        "steps": [4, 5],
        "reason": "trigger_end",
        "files": ["rank0_h_1_step4.mstx.trace.json"],
        "trigger": "anomaly",
    }
    planned = {**triggered, "step": 1, "steps": [1], "reason": "window_end", "trigger": ""}
    (tmp_path / "cluster_summary.json").write_text(
        json.dumps(
            {
                "workers": [
                    {"rank": 0, "enabled": True, "captures": [planned, triggered]},
                    {"rank": 3, "enabled": True, "captures": []},
                    {"rank": 5, "enabled": False, "captures": []},
                ]
            }
        )
    )
    health = doctor(tmp_path)
    assert health.ranks_expected == [0, 3]
    assert [(f.kind, f.where) for f in health.findings] == [("missing_rank", "rank 3")]
    assert health.triggered == [
        {
            "rank": 0,
            "step": 4,
            "steps": [4, 5],
            "trigger_step": None,
            "stage": "all",
            "trigger": "anomaly",
            "reason": "trigger_end",
            "files": ["rank0_h_1_step4.mstx.trace.json"],
        }
    ]


def test_a_cluster_summary_row_of_the_wrong_shape_is_named_and_the_rest_read(
    tmp_path: Path,
) -> None:
    """A worker row whose rank is not a number is left out, named in one finding with its
    field; the other rows still say which ranks are expected."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "cluster_summary.json").write_text(
        json.dumps({"workers": [{"rank": "two", "enabled": True}, {"rank": 3, "enabled": True}]})
    )
    health = doctor(tmp_path)
    assert health.ranks_expected == [0, 3]
    assert [(f.kind, f.where, f.message) for f in health.findings] == [
        (
            "unreadable",
            "cluster_summary.json",
            "cluster_summary.json: not read: left out "
            "workers[0].rank: expected int | null, got str; the rest read",
        ),
        ("missing_rank", "rank 3", "rank 3: expected, but no capture file found"),
    ]


def flight_dump(root: Path) -> str:
    """A flight dump of steps 6-8 asked for by an anomaly at step 8; its path under root."""
    rel = "flight/rank0_h_1_step6.mstx.trace.json"
    ranges(
        root / rel,
        {6: 100.0, 7: 200.0, 8: 300.0},
        rank=0,
        stage="flight",
        step=6,
        reason="anomaly",
        steps=[6, 7, 8],
        trigger_step=8,
    )
    return rel


def test_a_capture_no_manifest_lists_is_named_from_its_own_metadata(tmp_path: Path) -> None:
    rel = flight_dump(tmp_path)
    assert doctor(tmp_path).triggered == [
        {
            "rank": 0,
            "step": 8,
            "steps": [6, 7, 8],
            "trigger_step": 8,
            "stage": None,
            "trigger": "flight",
            "reason": "anomaly",
            "files": [rel],
        }
    ]


def test_a_flight_dump_the_manifest_lists_is_named_once(tmp_path: Path) -> None:
    """The manifest names the dump by its first step and the step that asked for it; the file
    by the latter: the two are one capture."""
    rel = flight_dump(tmp_path)
    listed = {
        "stage": "all",
        "step": 6,
        "index": 0,
        "rank": 0,
        "role": "integrated",
        "backend": "flight",
        "steps": [6, 7, 8],
        "reason": "anomaly",
        "files": [rel],
        "trigger": "flight",
        "trigger_step": 8,
    }
    (tmp_path / "manifest.rank0.json").write_text(
        json.dumps({"rank": 0, "status": "running", "captures": [listed]})
    )
    assert doctor(tmp_path).triggered == [
        {
            "rank": 0,
            "step": 6,
            "steps": [6, 7, 8],
            "trigger_step": 8,
            "stage": "all",
            "trigger": "flight",
            "reason": "anomaly",
            "files": [rel],
        }
    ]


def test_an_on_demand_capture_the_manifest_lists_is_named_once(tmp_path: Path) -> None:
    """No ``trigger_step``: the manifest's entry and the file's metadata meet on ``step``."""
    rel = "rank0_h_1_step5.mstx.trace.json"
    ranges(tmp_path / rel, {5: 100.0}, rank=0, step=5, trigger="on_demand")
    listed = {
        "stage": "all",
        "step": 5,
        "index": 0,
        "rank": 0,
        "role": "integrated",
        "backend": "none",
        "steps": [5],
        "reason": "trigger_end",
        "files": [rel],
        "trigger": "on_demand",
    }
    (tmp_path / "manifest.rank0.json").write_text(
        json.dumps({"rank": 0, "status": "running", "captures": [listed]})
    )
    assert doctor(tmp_path).triggered == [
        {
            "rank": 0,
            "step": 5,
            "steps": [5],
            "trigger_step": None,
            "stage": "all",
            "trigger": "on_demand",
            "reason": "trigger_end",
            "files": [rel],
        }
    ]


def test_captures_are_counted_per_rank_by_stem_in_rank_order(tmp_path: Path) -> None:
    """A trace and a range file of one step are one capture; ranks go in numeric order, a
    capture that names no rank ("?") last."""
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "rank0_h_1_step1.pt.trace.json").write_text(
        json.dumps(
            {
                "distributedInfo": {"rank": 0},
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}
                ],
            }
        )
    )
    ranges(tmp_path / "rank0_h_1_step2.mstx.trace.json", {2: 100.0}, rank=0, step=2)
    ranges(tmp_path / "rank10_h_3_step1.mstx.trace.json", {1: 100.0}, rank=10)
    ranges(tmp_path / "rank2_h_2_step1.mstx.trace.json", {1: 100.0}, rank=2)
    (tmp_path / "other.json").write_text(
        json.dumps(
            {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}]}
        )
    )
    health = doctor(tmp_path)
    assert list(health.captures_per_rank.items()) == [("0", 2), ("2", 1), ("10", 1), ("?", 1)]


def test_a_range_file_of_4_kib_is_left_to_the_reader(tmp_path: Path) -> None:
    """The cheap check reads only range files under 4096 bytes; one of exactly 4096 bytes that
    holds no range is named by the reader's check instead."""
    path = tmp_path / "rank0_h_1_step1.mstx.trace.json"
    ranges(path, {}, rank=0, pad="")
    pad = 4096 - path.stat().st_size
    ranges(path, {}, rank=0, pad="x" * pad)
    assert path.stat().st_size == 4096
    (finding,) = doctor(tmp_path).findings
    assert (finding.kind, finding.message) == (
        "empty",
        f"{path.name}: captured nothing (no ranges, no ops): analyse counts it but has "
        "nothing to show",
    )


def skew(
    root: Path,
    first: dict[int, float | None],
    second: dict[int, float | None],
    first_host: str | None = "a",
    skew_ms: float = 500.0,
) -> list[tuple[str, str]]:
    """The clock_skew findings (where, message) of two hosts' range files."""
    ranges(root / "rank0_a_1_step1.mstx.trace.json", first, host=first_host, rank=0)
    ranges(root / "rank1_b_2_step1.mstx.trace.json", second, host="b", rank=1)
    return [
        (f.where, f.message)
        for f in doctor(root, skew_ms=skew_ms).findings
        if f.kind == "clock_skew"
    ]


@pytest.mark.parametrize("late, found", [(1_500_000.0, False), (1_500_001.0, True)])
def test_clock_skew_is_a_gap_over_the_limit(tmp_path: Path, late: float, found: bool) -> None:
    """Step 1 starts 500 ms apart on the two hosts (not over 500 ms), then 500.001 ms."""
    assert bool(skew(tmp_path, {1: 1_000_000.0}, {1: late})) is found


def test_clock_skew_of_a_host_that_names_itself_not(tmp_path: Path) -> None:
    """The first steps seen on both hosts are compared (step 2: step 1 is on one host only)."""
    assert skew(tmp_path, {2: 100.0}, {1: 0.0, 2: 2_000_100.0}, first_host=None) == [
        (
            "?, b",
            "hosts ? and b: step 2 starts 2000 ms apart (over 500 ms): clocks out of sync, "
            "so cross-host timelines are shifted",
        )
    ]


def test_clock_skew_of_a_step_range_without_a_start(tmp_path: Path) -> None:
    """A step range with no ``ts`` starts at 0: 0.001 ms before the other host's, over 0.0005."""
    assert [where for where, _ in skew(tmp_path, {1: None}, {1: 1.0}, skew_ms=0.0005)] == ["a, b"]


def test_doctor_reads_with_as_many_processes_as_analyse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mindspeed_prof.analysis import analyse as analyse_module
    from mindspeed_prof.analysis import parallel

    calls: list[object] = []
    real = analyse_module.analyse_runs

    def spy(root: Path, **kwargs: Any) -> Any:
        calls.append((kwargs.get("jobs"), kwargs.get("run")))
        return real(root, **kwargs)

    monkeypatch.setattr(analyse_module, "analyse_runs", spy)
    monkeypatch.setattr(parallel, "default_jobs", lambda: 3)
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    assert doctor(tmp_path).healthy and calls == [(3, "all")]  # every run, as analyse reads


def test_a_temporary_name_with_a_suffix_after_tmp_is_a_temp_file(tmp_path: Path) -> None:
    ranges(tmp_path / "rank0_h_1_step1.mstx.trace.json", {1: 100.0}, rank=0)
    (tmp_path / "rank0_h_1_step1.pt.trace.tmp.json").write_text("{")
    assert [(f.kind, f.where) for f in doctor(tmp_path).findings] == [
        ("temp_file", "rank0_h_1_step1.pt.trace.tmp.json")
    ]


def test_a_job_whose_rank_another_tools_trace_holds_captured_something(tmp_path: Path) -> None:
    """The job ended with no capture of its own listed, but a Kineto trace (no name of ours)
    says rank 1: it did capture; and a manifest without a ``captures`` list is read."""
    (tmp_path / "worker.json").write_text(
        json.dumps(
            {
                "distributedInfo": {"rank": 1},
                "traceEvents": [
                    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}
                ],
            }
        )
    )
    (tmp_path / "manifest.rank1.json").write_text(
        json.dumps(
            {
                "rank": 1,
                "status": "completed",
                "captures": [],
                "profiler_config": {
                    "integrated": {"profile": True, "profile_step_start": 5, "profile_step_end": 7}
                },
            }
        )
    )
    (tmp_path / "manifest.rank2.json").write_text(json.dumps({"rank": 2, "status": "running"}))
    (tmp_path / "cluster_summary.json").write_text(json.dumps({"stage_rank": []}))
    health = doctor(tmp_path)
    assert [(f.kind, f.where) for f in health.findings] == [("missing_rank", "rank 2")]
    assert health.disk_per_rank == {1: (tmp_path / "worker.json").stat().st_size}
    assert health.triggered == []


def test_each_capture_analyse_cannot_read_is_named_after_one_already_named(tmp_path: Path) -> None:
    """An empty file analyse also skips has its one finding; an unreadable compressed trace
    after it (its tail not checked: binary) is still named."""
    (tmp_path / "rank0_h_1_step1.pt.trace.json").write_bytes(b"")
    (tmp_path / "rank1_h_2_step1.pt.trace.json.gz").write_bytes(b"not gzip")
    ranges(tmp_path / "rank2_h_3_step1.mstx.trace.json", {1: 100.0}, rank=2)
    found = [(f.kind, f.where) for f in doctor(tmp_path).findings]
    assert found == [
        ("empty", "rank0_h_1_step1.pt.trace.json"),
        ("unreadable", "rank1_h_2_step1.pt.trace.json.gz"),
    ]


def test_a_compressed_trace_is_not_checked_for_a_json_tail(tmp_path: Path) -> None:
    import gzip

    (tmp_path / "rank0_h_1_step1.pt.trace.json.gz").write_bytes(
        gzip.compress(
            json.dumps(
                {
                    "distributedInfo": {"rank": 0},
                    "traceEvents": [
                        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2}
                    ],
                }
            ).encode()
        )
    )
    health = doctor(tmp_path)
    assert health.findings == [] and health.captures_per_rank == {"0": 1}


def test_a_range_file_still_open_is_interrupted_not_empty(tmp_path: Path) -> None:
    """A small range file of the current format, never closed and with no event list yet: the
    reader names it interrupted (and, holding nothing, empty); the cheap check, which would
    have named it empty alone, leaves it to the reader."""
    path = tmp_path / "rank0_h_1_step1.mstx.trace.json"
    path.write_text(
        json.dumps(
            {"mindspeed_prof": {"kind": "spans", "format": 2, "rank": 0, "host": "h", "step": 1}}
        )
    )
    assert [(f.kind, f.where) for f in doctor(tmp_path).findings] == [
        ("interrupted", path.name),
        ("empty", path.name),
    ]


def test_clock_skew_takes_each_hosts_earliest_start(tmp_path: Path) -> None:
    """Host a's step 1 is in two files (starts 0 and 2 s), host b's starts at 1 s: a is early;
    a step range without args is no step."""
    ranges(tmp_path / "rank0_a_1_step1.mstx.trace.json", {1: 0.0}, host="a", rank=0)
    ranges(tmp_path / "rank1_b_2_step1.mstx.trace.json", {1: 1_000_000.0}, host="b", rank=1)
    late = ranges(tmp_path / "rank2_a_3_step1.mstx.trace.json", {1: 2_000_000.0}, host="a", rank=2)
    data = json.loads(late.read_text())
    data["traceEvents"].append(
        {
            "ph": "X",
            "pid": 1,
            "tid": 1,
            "cat": "step",
            "name": "ProfilerStep#0",
            "ts": 5.0,
            "dur": 1.0,
        }
    )
    late.write_text(json.dumps(data))
    assert [f.where for f in doctor(tmp_path).findings if f.kind == "clock_skew"] == ["a, b"]


def test_a_note_on_how_a_capture_was_read_is_a_note_not_a_finding(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 10, "dur": 2},
        {"ph": "X", "cat": "cuda_profiler_range", "name": "r", "ts": 1, "dur": 2},
    ]
    (tmp_path / "worker.json").write_text(
        json.dumps({"distributedInfo": {"rank": 1}, "traceEvents": events})
    )
    health = doctor(tmp_path)
    assert health.healthy
    assert health.notes == ["worker.json: 1 CUDA range-profiler records, not read as device time"]


def test_a_rank_its_own_profile_ranks_leaves_out_is_not_expected(tmp_path: Path) -> None:
    """A Ray driver's manifest (rank 0) of a job that captures on rank 1 only, as the
    verdict's relaunch line asks: healthy, neither missing nor blamed for capturing nothing."""
    (written,) = capture(tmp_path, ranks=(1,))
    run = json.loads(written.read_text())["mindspeed_prof"]["run"]  # the driver's run
    (tmp_path / f"manifest-{run}.json").write_text(
        json.dumps(
            {
                "run": run,
                "rank": 0,
                "status": "completed",
                "captures": [],
                "profiler_config": {"integrated": {"profile": True, "profile_ranks": [1]}},
            }
        )
    )
    health = doctor(tmp_path)
    assert health.ranks_expected == [1] and health.findings == []
