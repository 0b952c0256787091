"""Manifests: one per job instance and rank, written whole, read back typed; hostile files are
not read; earlier versions' names and fields still are."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.formats.manifest import (
    MAX_MANIFEST_BYTES,
    Job,
    Manifest,
    Window,
    find_manifests,
    is_manifest,
    manifest_name,
    read_manifest,
    write_manifest,
)
from mindspeed_prof.formats.record import CaptureRecord, FileEntry


def test_a_manifest_per_run_and_rank() -> None:
    assert manifest_name("20261202-064000-3f9a2c", 0) == "manifest-20261202-064000-3f9a2c.json"
    assert manifest_name("r1", 3) == "manifest-r1.rank3.json"
    assert manifest_name("r1", 0) != manifest_name("r2", 0)  # a restart keeps the first


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        ("manifest.json", True),
        ("manifest.rank1.json", True),
        ("manifest.job3.json", True),
        ("manifest.job3.rank2.json", True),
        ("manifest-r1.json", True),
        ("manifest-20261202-064000-3f9a2c.rank3.json", True),
        ("manifests.json", False),
        ("manifest-.json", False),
        ("manifest.json.tmp", False),
        (".manifest-r1.json.9.tmp", False),
    ],
)
def test_names_of_this_version_and_earlier_ones(name: str, ours: bool) -> None:
    assert is_manifest(name) is ours


def test_written_while_running_then_whole_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / manifest_name("r1", 0)
    m = Manifest(run="r1", run_how="process", rank=0, host="h", pid=1, start_time=10.0)
    write_manifest(path, m)
    running = json.loads(path.read_text())
    assert running["status"] == "running" and running["run"] == "r1"
    assert not {"captures", "files", "end_time", "error"} & set(running)  # not known yet
    m.status, m.captures, m.files, m.end_time = "completed", [CaptureRecord(files=["x"])], [], 12.0
    write_manifest(path, m)
    assert read_manifest(path) == m
    assert not list(tmp_path.glob(".*.tmp"))  # written aside, renamed into place


def test_a_manifest_from_before_run_ids_reads_with_an_empty_run(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "status": "completed",
                "job": {"name": "t", "num": None, "overrides": []},
                "rank": 0,
                "host": "h",
                "pid": 5,
                "start_time": 1.0,
                "captures": [],
                "files": [],
                "some_field_of_later_versions": {"x": 1},
            }
        )
    )
    ((path, m),) = find_manifests(tmp_path)
    assert path.name == "manifest.json" and m.run == "" and m.status == "completed"


@pytest.mark.parametrize("content", [b"[]", b"{", b'{"rank": "zero"}', b"\xff\xfe", b""])
def test_what_is_not_a_manifest_is_not_read(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "manifest-r1.json"
    path.write_bytes(content)
    assert read_manifest(path) is None and find_manifests(tmp_path) == []


def test_links_fifos_devices_and_huge_files_are_not_read(tmp_path: Path) -> None:
    good = tmp_path / "manifest-r1.json"
    write_manifest(good, Manifest(run="r1"))
    (tmp_path / "manifest-link.json").symlink_to(good)
    (tmp_path / "manifest-zero.json").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "manifest-fifo.json")  # no writer: a blocking open would hang
    with open(tmp_path / "manifest-big.json", "wb") as f:
        f.truncate(MAX_MANIFEST_BYTES + 1)
    assert [p.name for p, _ in find_manifests(tmp_path)] == ["manifest-r1.json"]


FIXTURES = Path(__file__).parents[1] / "fixtures" / "manifests"
#: A manifest as this version's writer wrote it (a demo job with Ray workers), and one from
#: before ``job.world_size`` (a sweep's job); their paths made neutral.
THIS_VERSION = FIXTURES / "manifest-20261206-203710-a18a21.json"
EARLIER = FIXTURES / "manifest-20261206-202303-ca38fa.json"


def test_this_versions_manifest_reads_typed_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    lines: list[str] = []
    m = read_manifest(THIS_VERSION, lambda err: lines.append(str(err)))
    assert m is not None and lines == []
    raw = json.loads(THIS_VERSION.read_text())
    assert isinstance(m.job, Job) and m.job.command == raw["job"]["command"]
    assert "world_size" in raw["job"] and m.job.world_size is None  # not under torchrun
    (capture,) = m.captures or []
    assert isinstance(capture, CaptureRecord) and capture.iterations == [0, 3]
    assert capture.trigger == "" and capture.trigger_step is None  # absent: defaulted
    assert all(isinstance(f, FileEntry) and f.bytes for f in m.files or [])
    window = raw["profiler_config"]["integrated"]
    assert m.window == Window(**{k: window[k] for k in Window.__struct_fields__})
    write_manifest(tmp_path / THIS_VERSION.name, m)
    assert (tmp_path / THIS_VERSION.name).read_bytes() == THIS_VERSION.read_bytes()


def test_an_earlier_versions_manifest_reads_and_writes_back_the_same_but_for_new_fields(
    tmp_path: Path,
) -> None:
    m = read_manifest(EARLIER)
    assert m is not None and m.job.world_size is None and m.job.num == 0
    assert m.window.stage == "actor_generate"
    assert [c.stage for c in m.captures or []] == ["actor_generate"] * 2
    write_manifest(tmp_path / EARLIER.name, m)
    again = json.loads((tmp_path / EARLIER.name).read_text())
    assert again["job"].pop("world_size") is None
    assert again == json.loads(EARLIER.read_text())


_ALWAYS = [
    "stage",
    "step",
    "index",
    "rank",
    "role",
    "backend",
    "steps",
    "warmup_steps",
    "reason",
    "files",
    "recorded",
]


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "level": st.sampled_from(["level0", "level_none"]),
            "seconds": st.floats(0.001, 9.0),
            "flush_seconds": st.floats(0.0, 9.0),
            "trigger": st.sampled_from(["anomaly", "flight"]),
            "request": st.just("r1"),
            "skipped": st.just("full"),
            "skipped_captures": st.integers(1, 9),
            "trigger_step": st.integers(1, 99),
            "iterations": st.lists(st.integers(0, 9), min_size=1),
            "engine": st.just("vllm"),
            "steps": st.lists(st.integers(1, 9)),
            "reason": st.sampled_from(["", "close"]),
        },
    )
)
def test_a_record_writes_its_first_fields_always_and_the_rest_where_set(
    given_fields: dict[str, Any],
) -> None:
    record = CaptureRecord(
        stage="all", step=1, index=0, rank=2, role="actor", backend="torch", **given_fields
    )
    written = record.to_json()
    optional = [k for k in given_fields if k not in _ALWAYS]
    assert list(written) == _ALWAYS + [k for k in written if k in optional]
    assert set(written) - set(_ALWAYS) == set(optional)
    assert msgspec.convert(written, CaptureRecord) == record


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"rank": "zero"}, "rank"),
        ({"job": {"num": "5"}}, "job.num"),
        ({"job": {"command": "python t.py"}}, "job.command"),
        ({"job": []}, "job"),
        ({"profiler_config": {"integrated": 5}}, "profiler_config"),
        ({"captures": {"files": []}}, "captures"),
        ({"start_time": "soon"}, "start_time"),
    ],
)
def test_a_field_of_the_wrong_type_is_one_line_naming_the_file_and_field(
    tmp_path: Path, doc: dict[str, Any], field: str
) -> None:
    path = tmp_path / "manifest-r1.json"
    path.write_text(json.dumps({"status": "completed", **doc}))
    lines: list[str] = []
    assert read_manifest(path, lambda err: lines.append(str(err))) is None
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith(f"{path}: not a manifest: {field}") and "expected" in lines[0]


def test_an_entry_of_the_wrong_shape_costs_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "manifest-r1.json"
    good = {
        "stage": "all",
        "step": 2,
        "index": 0,
        "rank": 0,
        "role": "integrated",
        "backend": "torch",
        "files": ["a.json"],
    }
    path.write_text(
        json.dumps(
            {
                "status": "completed",
                "captures": [good, "odd", {"step": "two"}],
                "files": [{"path": "a.json", "bytes": 3}, {"path": 3}],
                "triggers": [{"step": 1}],
                "job": {"overrides": ["x=1", 2]},
            }
        )
    )
    lines: list[str] = []
    m = read_manifest(path, lambda err: lines.append(str(err)))
    assert m is not None and m.captures == [msgspec.convert(good, CaptureRecord)]
    assert m.files == [FileEntry("a.json", 3)] and m.triggers == [] and m.job.overrides == ["x=1"]
    assert lines == [
        f"{path}: its captures[1], captures[2], triggers[0], files[1], "
        "job.overrides[1] of the wrong shape; the rest read"
    ]


def test_the_window_reads_what_it_can_of_the_integrated_section() -> None:
    m = Manifest(
        profiler_config={
            "integrated": {
                "profile": True,
                "profile_step_start": "2",
                "profile_step_end": 4,
                "stage": ["a", "b"],
                "profile_ranks": [1, "x"],
                "profile_level": "level1",
            }
        }
    )
    assert m.window == Window(profile=True, profile_step_end=4, stage=["a", "b"])
    assert Manifest().window == Window()
