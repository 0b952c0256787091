"""``doctor``: each kind of problem found once, a healthy run passes, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mindspeed_prof import Profiler, mstx
from mindspeed_prof.analysis.doctor import doctor
from mindspeed_prof.cli import main


def capture(root: Path, ranks: tuple[int, ...] = (0, 1), steps: int = 3) -> list[Path]:
    files = []
    for rank in ranks:
        prof = Profiler.from_config({
            "profile": True, "mstx": True, "profile_level": "level_none", "backend": "none",
            "profile_step_end": steps + 1, "profile_save_path": str(root)}, rank=rank)
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
    (tmp_path / "manifest.rank3.json").write_text(json.dumps({
        "rank": 3, "status": "completed", "captures": [],
        "profiler_config": {"integrated": {"profile": True, "profile_step_start": 50,
                                           "profile_step_end": 51}}}))
    skewed = json.loads(a.read_text())
    skewed["mindspeed_prof"]["host"] = "other"
    for event in skewed["traceEvents"]:
        event["ts"] += 2_000_000  # 2 s later than the same step on the first host
    (a.parent / "rank2_other_1_step1.mstx.trace.json").write_text(json.dumps(skewed))
    health = doctor(tmp_path)
    kinds = sorted(f.kind for f in health.findings)
    assert kinds == ["clock_skew", "empty", "missing_rank", "nothing_captured", "temp_file",
                     "truncated"]
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


def test_nothing_to_check_is_not_healthy(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("no capture here")
    health = doctor(tmp_path)
    assert [f.kind for f in health.findings] == ["no_captures"]
    assert main(["doctor", str(tmp_path)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{tmp_path}: no captures found") and out[-1] == "1 finding(s)"
    assert "healthy" not in out


def test_another_tools_captures_are_read_and_counted(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A Kineto trace named by no rule of ours: its rank from distributedInfo, a part analyse
    skips is a finding, a note stays a note; no rank is expected without a manifest."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2},
              {"ph": "X", "cat": "cpu_op", "name": "bad", "ts": 5, "dur": -1}]
    (tmp_path / "worker.json").write_text(json.dumps(
        {"distributedInfo": {"rank": 5}, "traceEvents": events}))
    health = doctor(tmp_path)
    assert health.captures_per_rank == {"5": 1} and health.ranks_found == [5]
    assert health.ranks_expected == []  # rank 5 of a run we know nothing of: 0-4 not missing
    (finding,) = health.findings
    assert finding.kind == "partly_read" and finding.where == "worker.json"
    assert finding.message.startswith("worker.json: 1 events end before they start")
    assert main(["doctor", str(tmp_path)]) == 3
    out = capsys.readouterr().out
    assert "captures: 1 (rank 5: 1)" in out and "expected unknown: no manifest names them" in out


def test_an_anomaly_is_named_at_the_step_it_was_seen(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import time

    prof = Profiler.from_config({"integrated": {
        "profile": True, "mstx": True, "profile_level": "level_none",
        "profile_step_start": 100, "profile_step_end": 101, "profile_save_path": str(tmp_path)},
        "extensions": {"backend": "none", "flight_recorder_steps": 3, "anomaly_factor": 3.0,
                       "anomaly_window": 3, "anomaly_min_ms": 250.0}}, rank=0)
    for step in range(1, 9):  # the floor keeps a loaded machine's jitter from triggering
        with prof.step(step), prof.stage("actor_generate"):
            time.sleep(0.4 if step == 8 else 0.005)
    prof.close()
    (dump,) = doctor(tmp_path).triggered
    assert (dump["trigger_step"], dump["steps"]) == (8, [6, 7, 8])
    assert main(["doctor", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "triggered: rank 0 step 8: flight (anomaly; holds steps 6-8)" in out


@pytest.mark.parametrize("name, content, why", [
    ("rank0_h_1_step1.mstx.trace.json",  # a range file closed with no range in it
     {"mindspeed_prof": {"kind": "spans", "format": 2, "rank": 0}, "traceEvents": [],
      "closed": True}, "no ranges recorded (did the window's steps run?)"),
    ("rank0_x.pt.trace.json", {"traceEvents": []},  # a Kineto trace with no events
     "captured nothing (no ranges, no ops): analyse counts it but has nothing to show"),
    ("rank0_x.pt.trace.json", {"distributedInfo": {"rank": 0},
                               "traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]},
     "captured nothing (no ranges, no ops): analyse counts it but has nothing to show"),
])
def test_a_capture_with_an_empty_event_list_is_a_finding(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
        content: dict[str, object], why: str) -> None:
    (tmp_path / name).write_text(json.dumps(content))
    health = doctor(tmp_path)
    (finding,) = health.findings
    assert (finding.kind, finding.where, finding.message) == ("empty", name, f"{name}: {why}")
    assert main(["doctor", str(tmp_path)]) == 3
    assert capsys.readouterr().out.splitlines()[-1] == "1 finding(s)"


@pytest.mark.parametrize("status", ["completed", "exited"])
def test_a_job_that_ended_having_captured_nothing_is_named(tmp_path: Path, status: str) -> None:
    capture(tmp_path, ranks=(0,))
    (tmp_path / "manifest.rank1.json").write_text(json.dumps({
        "rank": 1, "status": status, "captures": [],
        "profiler_config": {"integrated": {"profile": True, "profile_step_start": 5,
                                           "profile_step_end": 7}}}))
    by_kind = {f.kind: f for f in doctor(tmp_path).findings}
    assert set(by_kind) == {"nothing_captured", "missing_rank"}
    assert by_kind["nothing_captured"].message == (
        f"rank 1: the job {status} but captured nothing (window [5, 7): did the run reach "
        "step 5? were the hooks called?)")


@pytest.mark.parametrize("status, captures", [("running", []), ("exited", [{"step": 5}])])
def test_a_job_still_running_or_that_captured_is_not_blamed(
        tmp_path: Path, status: str, captures: list[dict[str, int]]) -> None:
    capture(tmp_path, ranks=(0,))
    (tmp_path / "manifest.rank1.json").write_text(json.dumps({
        "rank": 1, "status": status, "captures": captures,
        "profiler_config": {"integrated": {"profile": True}}}))
    assert [f.kind for f in doctor(tmp_path).findings] == ["missing_rank"]
