"""The corpus sets of other producers, each figure against an exact recomputation from the raw
files (plain JSON and CSV, independently of the readers): another tool's Chrome traces (every
``X`` event and matched ``B``/``E`` pair a range of its process's rank, foreign RL phases as our
stages), a Kineto trace with CUPTI off, host memory only, a CANN msprof export read once."""

from __future__ import annotations

import csv
import json
import lzma
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS, unpack

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main

#: Foreign phase names of the RL set and the stage each must be read as (written out here,
#: not taken from the package's table).
RL_STAGES = {
    "rollout": "actor_generate",
    "engine sleep": "engine_sleep",
    "actor model wake up": "onload",
    "compute log prob": "actor_compute_log_prob",
    "train": "actor_update",
    "actor model sleep": "offload",
    "engine wake up": "engine_wake",
    "update weights from distributed": "weight_sync",
}
CONTROL = {"TASK_TIMEOUT_SET", "EVENT_RECORD", "EVENT_WAIT"}


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("producers")
    for name in (
        "chrome_viztracer_multithread",
        "chrome_tlparse_3rank",
        "chrome_rl_phases_4rank",
        "chrome_vendor_bigtid",
        "msprof_export",
        "kineto_cuda_launches_no_device",
        "kineto_cuda_host_memory_only",
        "snapshot_cuda_cs336",
    ):
        unpack(name, root / name)
    return root


def _events(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_bytes())
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _spans(events: list[dict[str, Any]]) -> list[tuple[Any, str, float]]:
    """(pid, name, duration us) of every X event and B/E pair (an E ends its thread's last B)."""
    out, open_ = [], defaultdict(list)
    for e in events:
        lane = (json.dumps(e.get("pid")), json.dumps(e.get("tid")))
        if e["ph"] == "X":
            out.append((e.get("pid"), str(e["name"]), float(e["dur"])))
        elif e["ph"] == "B":
            open_[lane].append(e)
        elif e["ph"] == "E":
            b = open_[lane].pop()
            out.append((b.get("pid"), str(b["name"]), float(e["ts"]) - float(b["ts"])))
    assert not any(open_.values())
    return out


@pytest.mark.parametrize(
    ("name", "ranks"),
    [
        ("chrome_viztracer_multithread", {None}),
        ("chrome_tlparse_3rank", {0, 1, 2}),
        ("chrome_rl_phases_4rank", {0, 1, 2, 3}),
        ("chrome_vendor_bigtid", {1}),
    ],
)
def test_every_duration_event_is_a_range_of_its_rank(
    sets: Path, name: str, ranks: set[int | None]
) -> None:
    result = analyse(sets / name, jobs=1)
    assert not result.bad and not result.clashes  # no false "claimed by N captures"
    assert {t.rank for t in result.traces} == ranks
    for t in result.traces:
        raw = _spans(_events(t.path))
        assert len(t.ranges) == len(raw) > 0
        want: dict[str, float] = defaultdict(float)
        for _, span, dur in raw:
            want[RL_STAGES.get(span, span) if name == "chrome_rl_phases_4rank" else span] += dur
        got: dict[str, float] = defaultdict(float)
        for r in t.ranges:
            got[r.name if r.kind != "step" else "step"] += r.dur
        assert got.keys() == want.keys()
        for key in want:
            assert got[key] == pytest.approx(want[key], abs=1e-6), key


def test_rl_phases_feed_stages_steps_and_the_straggler(sets: Path) -> None:
    """The foreign phases are our stages per step, each figure the raw pairs' sum; rank 2's
    slow train is the straggler at actor_update."""
    result = analyse(sets / "chrome_rl_phases_4rank", jobs=1)
    want: dict[tuple[int, int, str], float] = defaultdict(float)
    for path in sorted((sets / "chrome_rl_phases_4rank").glob("*.json")):
        step = 0
        rank = int(_events(path)[-1]["pid"].removeprefix("rank"))
        for _, span, dur in _spans(_events(path)):
            if span == "step":
                continue
            if span == "rollout":
                step += 1
            if span in RL_STAGES:
                want[(rank, step, RL_STAGES[span])] += dur / 1000
    rows = {(r.rank, r.step): r for r in tables(result).per_step}
    assert len(rows) == 12
    for (rank, step, stage), ms in want.items():
        assert rows[(rank, step)].stages[stage] == pytest.approx(ms, abs=1e-9)
    lag = [s for s in tables(result).stragglers if s.rank == 2 and s.name == "actor_update"]
    assert len(lag) == 3


def test_msprof_export_is_one_capture_read_once(sets: Path, capsys) -> None:
    root = sets / "msprof_export"
    result = analyse(root, jobs=1)
    (t,) = result.traces
    assert not result.bad and not result.clashes and t.path.name.startswith("PROF_")
    (summary,) = root.rglob("op_summary_*.csv")
    with open(summary, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["Task Type"] not in CONTROL]
    want: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        want[r["OP Type"]].append(float(r["Task Duration(us)"]))
    assert {k: (v.count, round(v.total, 6)) for k, v in t.kernels.items()} == {
        k: (len(v), round(sum(v), 6)) for k, v in want.items()
    }
    assert not CONTROL & set(t.kernels)
    (api,) = root.rglob("api_statistic_*.csv")
    with open(api, newline="", encoding="utf-8") as f:
        calls = {r["API Name"]: int(r["Count"]) for r in csv.DictReader(f)}
    assert {k: v.count for k, v in t.runtime.items()} == calls  # the CSV's, not the timeline's too
    assert main(["analyse", str(root)]) == 0
    out = capsys.readouterr().out
    assert "TASK_TIMEOUT_SET" not in out and "claimed by" not in out


def test_launches_without_device_activity_are_missing_not_cpu_only(sets: Path, capsys) -> None:
    root = sets / "kineto_cuda_launches_no_device"
    (path,) = root.glob("*.json")
    doc = json.loads(path.read_bytes())
    launches = sum(
        1
        for e in doc["traceEvents"]
        if e.get("cat") == "cuda_runtime" and "LaunchKernel" in e.get("name", "")
    )
    assert launches == 79 and len(doc["deviceProperties"]) == 8
    assert main(["analyse", str(root)]) == 0
    captured = capsys.readouterr()
    text = " ".join(captured.out.split())
    assert (
        f"{launches} kernel launches were recorded, but no device activity: device "
        "activity not recorded (was CUPTI / the device profiler on?)" in text
    )
    assert "CPU-only" not in text
    assert f"{path.name}: {launches} launches, device activity not recorded" in captured.err


def test_host_memory_is_host_memory_never_a_device_peak(sets: Path, capsys) -> None:
    root = sets / "kineto_cuda_host_memory_only"
    (path,) = root.glob("*.json")
    events = json.loads(path.read_bytes())["traceEvents"]
    host = [e["args"]["Total Allocated"] for e in events if e.get("name") == "[memory]"]
    assert host and all(
        e["args"]["Device Type"] == 0 for e in events if e.get("name") == "[memory]"
    )
    assert main(["analyse", str(root), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = [m for m in doc["memory"] if m["stage"] is None]
    assert row["source"] == "host" and row["peak_allocated_bytes"] == max(host)
    assert doc["verdict"]["memory"] is None  # never "peak ... of 80 GiB"


def test_a_device_snapshot_is_device_memory(sets: Path, capsys) -> None:
    assert main(["analyse", str(sets / "snapshot_cuda_cs336")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "these captures hold a device's memory (an allocator snapshot)" in text
    assert "CPU-only" not in text


def test_the_sets_are_what_the_generator_writes(tmp_path: Path) -> None:
    """scripts/corpus_generated.py writes the generated and derived sets byte for byte."""
    import runpy

    work = tmp_path / "repo"
    for name in ("kineto_cuda_simple_add", "kineto_cuda_h100_bert_metadata_first"):
        shutil.copytree(CORPUS / name, work / "tests" / "fixtures" / "corpus" / name)
    script = Path(__file__).resolve().parents[2] / "scripts" / "corpus_generated.py"
    cwd = Path.cwd()
    try:
        import os

        os.chdir(work)
        runpy.run_path(str(script), run_name="__main__")
    finally:
        os.chdir(cwd)
    for name in (
        "chrome_rl_phases_4rank",
        "chrome_vendor_bigtid",
        "msprof_export",
        "kineto_cuda_launches_no_device",
        "kineto_cuda_host_memory_only",
    ):
        made = work / "tests" / "fixtures" / "corpus" / name
        files = sorted(p.relative_to(made) for p in made.rglob("*") if p.is_file())
        assert files == sorted(
            p.relative_to(CORPUS / name) for p in (CORPUS / name).rglob("*") if p.is_file()
        ), name
        for rel in files:
            a, b = (made / rel).read_bytes(), (CORPUS / name / rel).read_bytes()
            if rel.suffix == ".xz":
                a, b = lzma.decompress(a), lzma.decompress(b)
            assert a == b, rel
