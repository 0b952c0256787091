"""``timeline``: captures of several hosts, ranks and clocks merged into one Chrome trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.timeline import parse_ranks, parse_steps, write_timeline
from mindspeed_prof.cli import main

WALL0_US = 1_790_000_000_000_000.0  # the wall-clock time of step 1 on every host
STEP_US = 100_000.0


def range_file(root: Path, rank: int, role: str, host: str, *, shift_us: float = 0.0,
               clock: bool = True, steps: tuple[int, ...] = (1, 2, 3), slow: float = 1.0) -> Path:
    """A range file as the span recorder writes it, its clock ``shift_us`` off the wall clock.

    Steps start at the same wall-clock time on every host; ``slow`` stretches actor_update.
    """
    events = []
    for step in steps:
        start = WALL0_US + (step - 1) * STEP_US + shift_us
        events.append({"ph": "X", "cat": "step", "name": f"ProfilerStep#{step}", "ts": start,
                       "dur": 90_000.0, "pid": 1, "tid": 1, "args": {"step": step}})
        events.append({"ph": "X", "cat": "stage", "name": "actor_generate", "ts": start + 1000,
                       "dur": 40_000.0, "pid": 1, "tid": 1, "args": {"step": step}})
        events.append({"ph": "X", "cat": "stage", "name": "actor_update", "ts": start + 42_000,
                       "dur": 40_000.0 * slow, "pid": 1, "tid": 1, "args": {"step": step}})
        events.append({"ph": "X", "cat": "user_annotation", "name": "loss", "ts": start + 43_000,
                       "dur": 500.0, "pid": 1, "tid": 1, "args": {"step": step}})
    meta: dict[str, Any] = {"kind": "spans", "rank": rank, "role": role, "host": host,
                            "step": steps[0]}
    if clock:
        wall_ns = int(WALL0_US * 1000) - 5_000_000
        meta["clock"] = {"wall_ns": wall_ns, "trace_ns": wall_ns + int(shift_us * 1000)}
    path = root / host / role / f"rank{rank}_{host}_{100 + rank}_step{steps[0]}.mstx.trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mindspeed_prof": meta, "traceEvents": events}))
    return path


def load(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def tracks(trace: dict[str, Any]) -> dict[str, int]:
    """Process name -> pid, in sort-index order."""
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events
             if e["name"] == "process_sort_index"}
    return {names[pid]: pid for pid in sorted(names, key=order.__getitem__)}


def slices(trace: dict[str, Any], pid: int, tid: int | None = None) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == pid
            and (tid is None or e["tid"] == tid)]


def step_starts(trace: dict[str, Any], pid: int) -> dict[int, float]:
    return {e["args"]["step"]: e["ts"] for e in slices(trace, pid, tid=1)}


def merged(root: Path, out: Path, **kwargs: Any) -> tuple[dict[str, Any], Any]:
    result = write_timeline(analyse(root).traces, out, **kwargs)
    return load(out), result


def test_hosts_with_shifted_clocks_land_on_one_wall_clock_axis(tmp_path: Path) -> None:
    range_file(tmp_path, 0, "actor", "host-a")
    range_file(tmp_path, 1, "actor", "host-b", shift_us=-3_600e6, slow=1.2)  # an hour behind
    range_file(tmp_path, 0, "rollout", "host-b", shift_us=42e6)
    trace, result = merged(tmp_path, tmp_path / "t.json")
    by_name = tracks(trace)
    assert list(by_name) == ["rank 0 · actor · host-a", "rank 1 · actor · host-b",
                             "rank 0 · rollout · host-b"]
    starts = [step_starts(trace, pid) for pid in by_name.values()]
    for step in (1, 2, 3):
        assert [s[step] for s in starts] == pytest.approx([starts[0][step]] * 3, abs=0.01)
    assert starts[0][1] == pytest.approx(0.0)  # shown relative to the earliest event
    assert trace["otherData"]["origin_wall_us"] == pytest.approx(WALL0_US)
    assert starts[0][2] - starts[0][1] == pytest.approx(STEP_US)
    update = [e for e in slices(trace, by_name["rank 1 · actor · host-b"], tid=2)
              if e["name"] == "actor_update"]
    assert [e["dur"] for e in update] == pytest.approx([48_000.0] * 3)
    assert {e["name"] for e in slices(trace, 1, tid=3)} == {"loss"}
    assert result.warnings == [] and result.aligned_on_steps == []


def test_a_capture_without_clock_record_is_aligned_on_step_starts_and_marked(
        tmp_path: Path) -> None:
    range_file(tmp_path, 0, "actor", "host-a")
    lost = range_file(tmp_path, 1, "actor", "host-b", shift_us=-WALL0_US + 7e6, clock=False,
                      steps=(2, 3, 4))
    trace, result = merged(tmp_path, tmp_path / "t.json")
    by_name = tracks(trace)
    marked = "rank 1 · actor · host-b (clock: aligned on step starts)"
    assert list(by_name) == ["rank 0 · actor · host-a", marked]
    a, b = step_starts(trace, by_name["rank 0 · actor · host-a"]), step_starts(trace,
                                                                             by_name[marked])
    assert b[2] == pytest.approx(a[2], abs=0.01) and b[3] == pytest.approx(a[3], abs=0.01)
    assert trace["otherData"]["aligned_on_step_starts"] == [str(lost)]
    assert any(str(lost) in w and "aligned on step starts" in w for w in result.warnings)


def test_a_rank_claimed_by_two_hosts_keeps_both_and_warns(tmp_path: Path) -> None:
    range_file(tmp_path, 3, "actor", "host-a")
    range_file(tmp_path, 3, "actor", "host-b")
    trace, result = merged(tmp_path, tmp_path / "t.json")
    assert list(tracks(trace)) == ["rank 3 · actor · host-a", "rank 3 · actor · host-b"]
    assert result.warnings == ["rank 3 (actor) claimed by 2 hosts (host-a, host-b); "
                               "kept one track each"]


def test_a_ray_drivers_own_capture_is_its_own_track_after_the_workers(tmp_path: Path) -> None:
    """A driver that records its step loop (role ``driver``) is a track of its own, below every
    worker role, and not a second claim on the worker's rank."""
    range_file(tmp_path, 0, "driver", "head")
    range_file(tmp_path, 1, "rollout", "host-a")
    range_file(tmp_path, 0, "actor", "host-a")
    trace, result = merged(tmp_path, tmp_path / "t.json")
    assert list(tracks(trace)) == ["rank 0 · actor · host-a", "rank 1 · rollout · host-a",
                                   "rank 0 · driver · head"]
    driver = tracks(trace)["rank 0 · driver · head"]
    assert sorted(step_starts(trace, driver)) == [1, 2, 3] and result.warnings == []


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks at level0: a range file and a torch trace (Kineto's clock) per capture."""
    return make_run(tmp_path_factory.mktemp("tl"), steps=3, profile_level="level0")


def test_torch_ops_fall_inside_the_stages_the_range_recorder_timed(torch_run: Path,
                                                                    tmp_path: Path) -> None:
    trace, result = merged(torch_run, tmp_path / "t.json.gz", detail=frozenset({0}))
    by_name = tracks(trace)
    assert len(by_name) == 2 and not result.aligned_on_steps
    pid0, pid1 = by_name.values()
    stages = slices(trace, pid0, tid=2)
    ops = [e for e in slices(trace, pid0) if e["tid"] >= 10]
    assert len(stages) == 18 and ops
    matmuls = [e for e in ops if e["name"] == "aten::matmul"]
    assert len(matmuls) == 18  # one per stage execution: each inside exactly one stage
    for op in matmuls:
        assert sum(s["ts"] <= op["ts"] and op["ts"] + op["dur"] <= s["ts"] + s["dur"] + 1
                   for s in stages) == 1
    assert not [e for e in slices(trace, pid1) if e["tid"] >= 10]  # no detail for rank 1
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"steps", "stages", "ranges"} <= names


def test_steps_window_keeps_only_those_steps(torch_run: Path, tmp_path: Path) -> None:
    trace, _ = merged(torch_run, tmp_path / "t.json", detail=None, steps=parse_steps("2:3"))
    for pid in tracks(trace).values():
        events = slices(trace, pid)
        assert {e["args"]["step"] for e in events if "args" in e} == {2}
        step = slices(trace, pid, tid=1)[0]
        ops = [e for e in events if e["tid"] >= 10]
        assert ops and all(step["ts"] <= e["ts"] <= step["ts"] + step["dur"] for e in ops)


def test_parse_steps_and_ranks() -> None:
    assert 2 in parse_steps("2:4") and 3 in parse_steps("2:4") and 4 not in parse_steps("2:4")
    assert 1 not in parse_steps("2:") and 10**6 in parse_steps("2:")
    assert 5 in parse_steps("5") and 6 not in parse_steps("5")
    assert parse_ranks("0,3,8-10") == {0, 3, 8, 9, 10} and parse_ranks("all") is None
    for bad in ("x", "4:2", "1:2:3"):
        with pytest.raises(ValueError, match="--steps"):
            parse_steps(bad)
    with pytest.raises(ValueError, match="--detail"):
        parse_ranks("a-b")


def test_cli_timeline(torch_run: Path, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cluster.json"
    assert main(["timeline", str(torch_run), "-o", str(out)]) == 0
    assert "2 tracks" in capsys.readouterr().out
    assert len(tracks(load(out))) == 2
    assert main(["timeline", str(torch_run), "-o", str(out), "--steps", "3:1"]) == 2
    assert "--steps '3:1'" in capsys.readouterr().err
    assert main(["timeline", str(tmp_path / "nothing"), "-o", str(out)]) == 1
