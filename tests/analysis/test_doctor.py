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
    assert not data["healthy"] and len(data["findings"]) == 6
    assert main(["doctor", str(tmp_path), "--skew-ms", "5000"]) == 3
    out = capsys.readouterr().out
    assert "clock" not in out and "truncated" in out and out.splitlines()[-1] == "5 finding(s)"


def test_missing_root_exits_1(tmp_path: Path) -> None:
    assert main(["doctor", str(tmp_path / "nope")]) == 1
