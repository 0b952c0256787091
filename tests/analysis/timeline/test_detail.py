"""A torch_npu export's operator detail where torch_npu wrote no ``trace_view.json``: its
``kernel_details.csv`` (the level0 text export, an export whose timeline was left out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS
from npu_fixtures import copied

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.timeline import write_timeline
from mindspeed_prof.analysis.timeline.detail import npu_detail
from mindspeed_prof.cli import main

WALL_US = 1_764_246_877_000_000.0
HEADER = "Step Id,Stream ID,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"


def export(folder: Path, rows: list[str], *, trace_view: bool = False) -> Path:
    out = folder / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    (out / "kernel_details.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    if trace_view:
        event = {"ph": "X", "name": "aten::mm", "ts": "1.0", "dur": "1.0", "pid": 1, "tid": 1}
        (out / "trace_view.json").write_text(json.dumps([event]))
    return folder


def slices(path: Path) -> list[dict[str, Any]]:
    events = json.loads(path.read_text())["traceEvents"]
    names = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in events
        if e["ph"] == "M" and e["name"] == "thread_name"
    }
    return [
        {**e, "thread": names[e["pid"], e["tid"]]}
        for e in events
        if e["ph"] == "X" and e.get("tid", 0) >= 10
    ]


def test_kernels_of_an_export_without_trace_view_are_its_device_slices(tmp_path: Path) -> None:
    """Each kernel with both times is a slice on a thread per stream, at its start on the wall
    clock (torch_npu's clock already); the runtime's own tasks, rows without a start and a
    negative duration are left out. A ``trace_view.json`` beside it is still the detail."""
    folder = export(
        tmp_path / "rank0_host_100_20261130100000000_ascend_pt",
        [
            f"1,2,MatMulV2_1,MatMulV2,AI_CORE,{WALL_US + 10}\t,5.5",
            f"1,5,hcom_allReduce__1_0_1,hcom_allReduce_,COMMUNICATION,{WALL_US + 20},30",
            f"1,2,EVENT_RECORD,EVENT_RECORD,AI_CPU,{WALL_US + 12},1",
            "1,2,Cast_1,Cast,AI_VECTOR_CORE,,3",
            f"1,2,Add_1,Add,AI_VECTOR_CORE,{WALL_US + 40},-1",
        ],
    )
    npu = TraceData(folder, "npu", 0, "actor", 0, ranges=[Range(0, "step", "1", 1, WALL_US, 100.0)])
    out = tmp_path / "t.json"
    write_timeline([npu], out, detail=None)
    got = [(e["thread"], e["cat"], e["name"], e["ts"], e["dur"]) for e in slices(out)]
    assert got == [
        ("device NPU/stream 2", "", "MatMulV2_1", 10.0, 5.5),
        ("device NPU/stream 5", "", "hcom_allReduce__1_0_1", 20.0, 30.0),
    ]
    with_view = export(tmp_path / "rank1_host_101_20261130100000000_ascend_pt", [], trace_view=True)
    assert npu_detail(with_view) == (
        with_view / "ASCEND_PROFILER_OUTPUT" / "trace_view.json",
        "trace",
    )
    assert npu_detail(folder) == (
        folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv",
        "kernels",
    )
    assert npu_detail(tmp_path) is None


def device_slices(path: Path) -> list[int]:
    """The count of device slices (``device ...`` threads) per track, sorted."""
    by_track: dict[int, int] = {}
    for e in slices(path):
        if e["thread"].startswith("device "):
            by_track[e["pid"]] = by_track.get(e["pid"], 0) + 1
    return sorted(by_track.values())


def kernels_counted(root: Path) -> list[int]:
    """The kernels the analysis counts per capture, sorted, captures without any left out."""
    counts = (sum(k.count for k in t.kernels.values()) for t in analyse(root, cache=False).traces)
    return sorted(c for c in counts if c)


def test_the_timeline_analyse_suggests_for_a_real_export_holds_every_kernel(
    tmp_path: Path, capsys: Any
) -> None:
    """A real 4-rank text export without ``trace_view.json``: ``analyse`` names the timeline
    as the next capture; that command, as printed, writes every rank's kernels (as many
    slices a rank as the analysis counted kernels on it), not an empty file."""
    root = copied(CORPUS / "npu_text_qwen3_4rank_pp2", tmp_path / "qwen")
    assert main(["analyse", str(root)]) == 0
    printed = next(
        line.strip()[2:]
        for line in capsys.readouterr().out.splitlines()
        if line.strip().startswith("$ mindspeed-prof timeline")
    )
    args = printed.split()[1:]
    out = tmp_path / args[args.index("-o") + 1]
    args[args.index("-o") + 1] = str(out)
    assert main(args) == 0
    held = kernels_counted(root)  # two of its ranks' exports hold no kernel_details.csv
    assert len(held) == 2 and device_slices(out) == held


@pytest.mark.parametrize("name", ["npu_db_level0", "npu_db_level2", "npu_lone_kernel_details"])
def test_a_db_export_and_a_lone_kernel_details_draw_every_kernel(name: str, tmp_path: Path) -> None:
    """A db export (no ``trace_view.json``: its TASK and COMMUNICATION_OP rows, PYTORCH_API's
    operators on host threads) and a lone ``kernel_details.csv``: as many device slices a rank
    as the analysis counts kernels on it."""
    root = copied(CORPUS / name, tmp_path / name)
    out = tmp_path / "t.json"
    assert main(["timeline", str(root), "-o", str(out), "--detail", "all"]) == 0
    assert device_slices(out) == kernels_counted(root) != []
    hosts = [e for e in slices(out) if e["thread"].startswith("host ")]
    assert bool(hosts) == name.startswith("npu_db")


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("fmt", ["json", "perfetto"])
def test_a_capture_changed_since_it_was_read_leaves_its_track_its_ranges(
    fmt: str, jobs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A db export malformed and a trace_view.json cut short after the analysis read them: the
    timeline is written, each such capture named once in a warning (in the file's otherData
    too), its track keeping its ranges; the other captures' detail is all there; a budget that
    writes the file again does not repeat the line."""
    from mindspeed_prof.analysis.timeline import workers

    monkeypatch.setattr(workers, "POOL_MIN_BYTES", 0)  # small captures: in workers too
    db = copied(CORPUS / "npu_db_level1", tmp_path / "db")
    text = copied(CORPUS / "npu_text_level1", tmp_path / "text")
    traces = [*analyse(db, cache=False).traces, *analyse(text, cache=False).traces]
    whole = write_timeline(traces, tmp_path / "whole.json", detail=None)
    bad_db = next(db.rglob("ascend_pytorch_profiler_0.db"))
    raw = bytearray(bad_db.read_bytes())
    raw[100:4000] = b"x" * 3900
    bad_db.write_bytes(raw)
    bad_view = next(text.rglob("trace_view.json"))
    bad_view.write_bytes(bad_view.read_bytes()[: bad_view.stat().st_size // 2])  # cut short
    out = tmp_path / ("t.json" if fmt == "json" else "t.pftrace")
    got = write_timeline(traces, out, detail=None, fmt=fmt, jobs=jobs)
    assert len(got.warnings) == 2
    assert all("could not be read again" in w for w in got.warnings)
    assert {w.split(":")[0] for w in got.warnings} == {
        str(bad_db.parents[1]),
        str(bad_view.parents[1]),
    }
    assert 0 < got.slices < whole.slices and got.tracks == whole.tracks
    if fmt == "json":
        assert json.loads(out.read_text())["otherData"]["warnings"] == got.warnings
    budgeted = write_timeline(traces, tmp_path / "b.json", detail=None, max_bytes=60_000)
    assert budgeted.warnings == got.warnings and budgeted.budget
