"""Manifests: one per job instance and rank, written whole, read back typed; hostile files are
not read; earlier versions' names and fields still are."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mindspeed_prof.formats.manifest import (
    MAX_MANIFEST_BYTES,
    Manifest,
    find_manifests,
    is_manifest,
    manifest_name,
    read_manifest,
    write_manifest,
)
from mindspeed_prof.formats.record import CaptureRecord


def test_a_manifest_per_run_and_rank() -> None:
    assert manifest_name("20261202-064000-3f9a2c", 0) == "manifest-20261202-064000-3f9a2c.json"
    assert manifest_name("r1", 3) == "manifest-r1.rank3.json"
    assert manifest_name("r1", 0) != manifest_name("r2", 0)  # a restart keeps the first


@pytest.mark.parametrize(("name", "ours"), [
    ("manifest.json", True), ("manifest.rank1.json", True), ("manifest.job3.json", True),
    ("manifest.job3.rank2.json", True), ("manifest-r1.json", True),
    ("manifest-20261202-064000-3f9a2c.rank3.json", True), ("manifests.json", False),
    ("manifest-.json", False), ("manifest.json.tmp", False), (".manifest-r1.json.9.tmp", False)])
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
    (tmp_path / "manifest.json").write_text(json.dumps({
        "status": "completed", "job": {"name": "t", "num": None, "overrides": []}, "rank": 0,
        "host": "h", "pid": 5, "start_time": 1.0, "captures": [], "files": [],
        "some_field_of_later_versions": {"x": 1}}))
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
