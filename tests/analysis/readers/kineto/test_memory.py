"""Memory: torch's timeline and [memory] events agree, CUDA snapshots read safely, bad files
named."""

from __future__ import annotations

import functools
import gzip
import json
import pickle
from pathlib import Path

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis.analyse import analyse
from mindspeed_prof.analysis.readers.kineto.memory import load_snapshot, read_memory
from mindspeed_prof.analysis.readers.model import Alloc, BadFile, Memory, Range
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.cli import main
from mindspeed_prof.config.schema import STAGES

MIB = 2**20


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``memory_debug`` capture on CPU: trace with [memory] events plus the memory timeline."""
    return make_run(
        tmp_path_factory.mktemp("mem"),
        ranks=(0,),
        steps=2,
        profile_level="level1",
        profile_with_memory=True,
        profile_record_shapes=True,
        with_stack=True,
    )


def test_timeline_and_trace_events_agree_on_the_peak(memory_run: Path) -> None:
    (timeline,) = memory_run.rglob("*.memory_timeline.json.gz")
    (trace,) = memory_run.rglob("*.pt.trace.json")
    _, sizes = json.loads(gzip.decompress(timeline.read_bytes()))
    from_file = max(sum(s) for s in sizes)
    from_events = max(
        e["args"]["Total Allocated"]
        for e in json.loads(trace.read_text())["traceEvents"]
        if e.get("name") == "[memory]"
    )
    rows = tables(analyse(memory_run)).memory
    whole = [r for r in rows if r.stage is None]
    assert len(whole) == 1 and whole[0].rank == 0 and whole[0].source == "timeline"
    assert whole[0].peak_allocated_bytes == from_file == from_events > 0
    assert len(whole[0].timeline) > 2
    assert {o.op for o in whole[0].top_ops} & {"aten::empty", "aten::mm", "aten::randn"}
    assert {r.stage for r in rows if r.stage} == set(STAGES)
    assert all(
        r.peak_allocated_bytes is not None and r.peak_allocated_bytes <= from_file for r in rows
    )


def test_json_and_report_show_memory(memory_run: Path, tmp_path: Path, capsys) -> None:
    html = tmp_path / "r.html"
    assert main(["analyse", str(memory_run), "--json", "--html", str(html)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory"] and out["memory"][0]["peak_allocated_bytes"] > 0
    text = html.read_text()
    assert "id='memory'" in text and "Memory peaks" in text and "<script" not in text


def _snapshot() -> dict:
    frames = [
        {"filename": "/x/torch/nn/functional.py", "line": 1, "name": "linear"},
        {"filename": "/app/model.py", "line": 42, "name": "forward"},
    ]
    trace = [
        {"action": "segment_alloc", "addr": 0, "size": 4 * MIB, "time_us": 1},
        {"action": "alloc", "addr": 0, "size": 2 * MIB, "frames": frames, "time_us": 2},
        {"action": "alloc", "addr": 2 * MIB, "size": 1 * MIB, "frames": frames, "time_us": 3},
        {"action": "free_requested", "addr": 0, "size": 2 * MIB, "time_us": 4},
        {"action": "free_completed", "addr": 0, "size": 2 * MIB, "time_us": 5},
        {"action": "alloc", "addr": 0, "size": MIB // 2, "frames": [], "time_us": 6},
    ]
    # The state at the dump: one 4 MiB segment holding 1.5 MiB.
    return {
        "segments": [
            {
                "device": 0,
                "address": 0,
                "total_size": 4 * MIB,
                "allocated_size": 3 * MIB // 2,
                "blocks": [],
            }
        ],
        "device_traces": [trace],
    }


def test_cuda_snapshot_peaks_and_allocators(tmp_path: Path) -> None:
    path = tmp_path / "actor" / "rank3_h_1_step2.memory_snapshot.pickle"
    path.parent.mkdir()
    path.write_bytes(pickle.dumps(_snapshot()))
    (row,) = tables(analyse(tmp_path)).memory
    assert row.rank == 3 and row.source == "snapshot"
    assert row.peak_allocated_bytes == 3 * MIB  # 2 MiB + 1 MiB before the free
    assert row.peak_reserved_bytes == 4 * MIB
    assert row.top_ops == [Alloc(op="forward (model.py:42)", count=2, bytes=3 * MIB)]


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


def test_malicious_snapshot_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "rank0_h_1_step1.memory_snapshot.pickle"
    path.write_bytes(pickle.dumps({"segments": [_Evil()]}))
    with pytest.raises(pickle.UnpicklingError, match="refused posix.system|refused nt.system"):
        load_snapshot(path.read_bytes())
    assert main(["analyse", str(tmp_path)]) == 1  # nothing else to read
    assert not (tmp_path / "pwned").exists()
    assert "refused" in capsys.readouterr().err
    assert load_snapshot(pickle.dumps({"a": (1, 2.0, {3}), "b": [None, True, b"x"]})) == {
        "a": (1, 2.0, {3}),
        "b": [None, True, b"x"],
    }


def test_memory_file_cut_short_is_named_rest_analysed(
    memory_run: Path, tmp_path: Path, capsys
) -> None:
    import shutil

    root = tmp_path / "run"
    shutil.copytree(memory_run, root)
    (timeline,) = root.rglob("*.memory_timeline.json.gz")
    timeline.write_bytes(timeline.read_bytes()[:200])
    result = analyse(root)
    assert len(result.bad) == 1 and str(timeline) in result.bad[0]
    assert (
        tables(result).stage_rank and tables(result).memory
    )  # the trace's own memory events remain
    assert {r.source for r in tables(result).memory} == {"host"}  # a CPU run: host memory
    assert main(["analyse", str(root)]) == 3
    assert f"skipped {timeline.relative_to(root)}: " in capsys.readouterr().err


def _event(action: str, t: int | None, mib: float | None, **more) -> dict:
    e = {"action": action, **more}
    if t is not None:
        e["time_us"] = t
    if mib is not None:
        e["size"] = int(mib * MIB)
    return e


def test_snapshot_history_walked_back_by_hand(tmp_path: Path) -> None:
    """A history from an empty device, every action kind; peaks and points stated by hand."""
    a_py = {"filename": "/app/a.py", "line": 7, "name": "z"}
    # Each segment action decides the reserved peak: undone wrongly, the peak moves.
    trace = [
        _event("segment_alloc", 1, 1),  # reserved 1
        _event("segment_map", 2, 4),  # 5 (the peak)
        _event("segment_unmap", 3, 4),  # 1
        _event("segment_alloc", 4, 3),  # 4
        _event("segment_alloc", 5, 0.5),  # 4.5
        _event("alloc", 6, 2, frames=["not a frame", a_py]),  # allocated 2 (the peak)
        _event("free_requested", 7, 2),  # no change until completed
        _event("free_completed", 8, 2),  # 0
        _event("segment_free", 9, 3),  # reserved 1.5
        _event("segment_map", 10, 2),  # 3.5
        _event("alloc", 11, 1, frames=None),  # allocated 1, no frame to name
        _event(
            "alloc",
            12,
            None,  # no size: 0 bytes
            frames=[{"filename": "/app/b.py", "line": 9, "name": "g"}],
        ),
        _event("oom", None, None),
    ]  # no time: at 0
    # The dump: 3.5 MiB reserved, 1 MiB of it allocated; sizes a segment lacks count as 0.
    snap = {
        "segments": [
            {"total_size": 7 * MIB // 2, "allocated_size": MIB},
            {"total_size": 0},
            {"allocated_size": 0},
        ],
        "device_traces": [trace],
    }
    path = tmp_path / "rank0_h_1_step1.memory_snapshot.pickle"
    path.write_bytes(pickle.dumps(snap))
    (row,) = tables(analyse(tmp_path)).memory
    assert row.peak_allocated_bytes == 2 * MIB and row.peak_reserved_bytes == 5 * MIB
    assert row.timeline == [
        [float(t), a * MIB]
        for t, a in [
            (1, 0),
            (2, 0),
            (3, 0),
            (4, 0),
            (5, 0),
            (6, 2),
            (7, 2),
            (8, 0),
            (9, 0),
            (10, 0),
            (11, 1),
            (12, 1),
            (0, 1),
        ]
    ]
    # by bytes, not by name
    assert row.top_ops == [
        Alloc(op="z (a.py:7)", count=1, bytes=2 * MIB),
        Alloc(op="g (b.py:9)", count=1, bytes=0),
    ]
    assert row.source == "snapshot" and row.stage is None
    assert read_memory(path).by_stage == {}  # a snapshot has no host ranges to join


@pytest.mark.parametrize("doc", [[1, 2], {"device_traces": []}, {"segments": "none"}])
def test_snapshot_without_segments_is_named(tmp_path: Path, doc) -> None:
    path = tmp_path / "rank0_h_1_step1.memory_snapshot.pickle"
    path.write_bytes(pickle.dumps(doc))
    assert analyse(tmp_path).bad == [f"{path}: not a CUDA memory snapshot (no 'segments' list)"]


def test_snapshot_unpickler_admits_only_builtin_containers(tmp_path: Path) -> None:
    for protocol in (2, 3):  # sets by global lookup: __builtin__.set, builtins.set
        old = pickle.dumps({"a": {1, 2}, "b": frozenset({3})}, protocol=protocol)
        assert load_snapshot(old) == {"a": {1, 2}, "b": frozenset({3})}
    path = tmp_path / "rank0_h_1_step1.memory_snapshot.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "x": eval}))
    assert analyse(tmp_path).bad == [
        f"{path}: unreadable memory file (UnpicklingError: refused builtins.eval: only plain "
        "containers and scalars are read from a snapshot)"
    ]


def _timeline_file(path: Path, times: list, sizes: list) -> Path:
    path.write_bytes(gzip.compress(json.dumps([times, sizes]).encode()))
    return path


def test_timeline_points_and_stage_peaks_by_hand(tmp_path: Path) -> None:
    """Negative times (before the capture) are left out; a stage's peak starts from the level
    in force at its start, runs of one stage keep their highest, and an empty stage is 0."""
    path = _timeline_file(
        tmp_path / "rank0_h_1_step1.memory_timeline.json.gz",
        [-1, 0, 0.5, 10, 20, 30, 40, 50],
        [[900], [100], [60, 40], [5], [7], [0], [0], [3]],
    )
    stage = functools.partial(Range, 0, "stage", step=1)
    ranges = [
        stage(name="actor_update", ts=15, dur=10),  # level 5 at 15, then 7 at 20
        stage(name="actor_update", ts=45, dur=10),  # a later run, lower: 0 then 3
        stage(name="critic_update", ts=-5, dur=5),  # ends on the first point
        stage(name="reference_compute_log_prob", ts=31, dur=5),  # level 0 all along
        stage(name="actor_generate", ts=-9, dur=1),
    ]  # before every point: no peak
    facts = read_memory(path, ranges)
    assert facts == Memory(
        source="timeline",
        peak_allocated_bytes=100.0,
        peak_reserved_bytes=None,
        top_ops=[],
        by_stage={"actor_update": 7.0, "critic_update": 100.0, "reference_compute_log_prob": 0.0},
        timeline=[
            [0.0, 100.0],
            [0.5, 100.0],
            [10.0, 5.0],
            [20.0, 7.0],
            [30.0, 0.0],
            [40.0, 0.0],
            [50.0, 3.0],
        ],
    )


def test_long_timeline_thinned_keeping_the_peak_and_the_end(tmp_path: Path) -> None:
    """1,000 points: every 5th (200), the peak (index 502) and the last (999)."""
    sizes = [[i % 7] for i in range(1000)]
    sizes[502] = [10**6]
    path = _timeline_file(tmp_path / "r.memory_timeline.json.gz", list(range(1000)), sizes)
    kept = [int(t) for t, _ in read_memory(path).timeline]
    assert kept == sorted({*range(0, 1000, 5), 502, 999})
    assert read_memory(path).timeline[101] == [502.0, 10.0**6]


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ([[1, 2], [[1]]], "lengths differ"),
        ([[1], [[2]], [[3]]], "three lists"),
        ({"times": [1]}, "an object"),
        ([[1], 2], "sizes not a list"),
    ],
)
def test_timeline_of_another_shape_is_named(tmp_path: Path, doc, why) -> None:
    path = tmp_path / "r.memory_timeline.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    with pytest.raises(BadFile) as err:
        read_memory(path)
    assert str(err.value) == (
        f"{path}: not a memory timeline (expected [times, sizes by category])"
    ), why


def test_memory_file_size_limit_at_its_edge(tmp_path: Path, monkeypatch) -> None:
    import mindspeed_prof.analysis.readers.kineto.memory as memory

    doc = json.dumps([[1], [[2]]]).encode()
    monkeypatch.setattr(memory, "MAX_BYTES", len(doc))
    path = tmp_path / "r.memory_timeline.json"  # not gzipped: its size is the limit's
    path.write_bytes(doc)
    assert read_memory(path).peak_allocated_bytes == 2.0
    path.write_bytes(doc + b" ")
    with pytest.raises(BadFile) as err:
        read_memory(path)
    assert str(err.value) == f"{path}: more than {len(doc)} bytes; refused"


def _torch_snapshot() -> dict:
    """``_snapshot()`` as torch writes it: segments with their blocks, one trace per device,
    then the allocator's settings."""
    snap = _snapshot()
    for seg in snap["segments"]:
        seg.update(
            stream=0,
            segment_type="large",
            segment_pool_id=(0, 0),
            is_expandable=False,
            active_size=3 * MIB // 2,
            requested_size=3 * MIB // 2,
            frames=[],
            blocks=[
                {
                    "address": 0,
                    "size": 3 * MIB // 2,
                    "requested_size": 3 * MIB // 2,
                    "state": "active_allocated",
                    "frames": [],
                }
            ],
        )
    return {
        **snap,
        "device_traces": [*snap["device_traces"], []],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": None, "max_split_size": -1},
    }


@pytest.mark.parametrize("name", ["snapshot.pkl", "dump_snapshot.pickle", "rank0", "mem.json"])
def test_a_snapshot_under_any_name_gives_the_peak_of_ours(
    tmp_path: Path, name: str, capsys
) -> None:
    """Symptom 6: a pickled snapshot named ``*.pkl`` was ``not JSON``."""
    raw = pickle.dumps(_torch_snapshot())
    ours = tmp_path / "ours" / "rank0_h_1_step1.memory_snapshot.pickle"
    other = tmp_path / "any" / name
    for path in (ours, other):
        path.parent.mkdir()
        path.write_bytes(raw)
    (expected,) = tables(analyse(ours.parent)).memory
    (found,) = tables(analyse(other.parent)).memory
    assert expected.peak_allocated_bytes == 3 * MIB and expected.peak_reserved_bytes == 4 * MIB
    assert (
        found.source,
        found.peak_allocated_bytes,
        found.peak_reserved_bytes,
        found.top_ops,
        found.timeline,
    ) == (
        expected.source,
        expected.peak_allocated_bytes,
        expected.peak_reserved_bytes,
        expected.top_ops,
        expected.timeline,
    )
    assert main(["analyse", str(other)]) == 0  # the file named on its own
    assert "not JSON" not in capsys.readouterr().err


def test_a_pickle_with_a_global_is_refused_in_one_line_and_nothing_runs(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "snap.pkl").write_bytes(pickle.dumps({"segments": [_Evil()], "device_traces": []}))
    (run / "other.pkl").write_bytes(pickle.dumps(_Evil()))  # not a snapshot: not a capture
    assert main(["analyse", str(run)]) == 1  # nothing else to read
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(
        "mindspeed-prof: skipped snap.pkl: unreadable memory file (UnpicklingError: refused "
    )
    assert line.endswith("system: only plain containers and scalars are read from a snapshot)")
    assert main(["analyse", str(run / "other.pkl")]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "mindspeed-prof: skipped other.pkl: a pickle that is not an allocator "
        "snapshot (nothing in it was loaded); not read"
    )
    assert not (tmp_path / "pwned").exists() and not (run / "pwned").exists()
