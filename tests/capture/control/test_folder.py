"""The control folder: requests once each, bad files one warning each, nothing written outside it."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest

from mindspeed_prof.capture.control import Ack, FolderChannel, FolderSource, Request, Worker, wait
from mindspeed_prof.capture.control.folder import (
    MAX_REQUEST_BYTES,
    WARNINGS_PER_LOOK,
    read_acks,
    write_request,
)


def requests_dir(root: Path) -> Path:
    folder = root / "control" / "requests"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def old_file(path: Path, text: str) -> None:
    path.write_text(text)
    old = time.time() - 60
    os.utime(path, (old, old))


def test_each_request_once_oldest_first_whatever_its_start_step(tmp_path: Path) -> None:
    first, later = Request.new(60, steps=1), Request.new(60, steps=1, start_step=5)
    for r in (first, later):
        write_request(tmp_path, r)
    source = FolderSource(tmp_path)
    assert [r.id for r in source.poll(Worker(0, "integrated", 1))] == [first.id, later.id]
    assert source.poll(Worker(0, "integrated", 2)) == []  # the scheduler keeps the start step


def test_bad_files_are_ignored_with_one_warning_each(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = requests_dir(tmp_path)
    old = time.time() - 60
    old_file(folder / "partial.json", '{"id": "x", "created": 1, "exp')
    old_file(folder / "preset.json", json.dumps({"id": "p", "created": old,
                                                 "expires": old + 600, "preset": "nope"}))
    old_file(folder / "expired.json", json.dumps({"id": "e", "created": old, "expires": old + 1}))
    (folder / "young.json").write_text("{")  # being written right now: not warned about yet
    source = FolderSource(tmp_path)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for _ in range(3):
            assert source.poll(Worker(0, "integrated", 1)) == []
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 3
    assert any("partial.json" in m and "not complete JSON" in m for m in warned)
    assert any("preset='nope'" in m and "allowed" in m for m in warned)
    assert any("expired" in m for m in warned)


def test_a_thousand_bad_files_are_a_few_lines(tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture) -> None:
    folder = requests_dir(tmp_path)
    old = time.time() - 60
    for i in range(1000):
        (folder / f"r{i:04}.json").write_text(json.dumps({"id": f"e{i}", "created": old,
                                                          "expires": old + 1}))
    good = Request.new(60, steps=1)
    write_request(tmp_path, good)
    source = FolderSource(tmp_path)
    found = []
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 6):
            found += source.poll(Worker(0, "integrated", step))
    assert [r.id for r in found] == [good.id]  # the bad ones do not hide it
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) <= 5 * (WARNINGS_PER_LOOK + 1)
    assert sum(int(m.split("ignoring ")[1].split()[0]) for m in lines if "more capture" in m) \
        + sum(1 for m in lines if "more capture" not in m) == 1000


def test_files_that_are_not_requests_are_never_followed_or_read_whole(tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(Request.new(60, steps=1).to_json()))
    folder = requests_dir(tmp_path / "root")
    (folder / "link.json").symlink_to(outside)
    (folder / "dir.json").mkdir()
    old_file(folder / "huge.json", " " * (MAX_REQUEST_BYTES + 1))
    os.mkfifo(folder / "fifo.json")
    assert FolderSource(tmp_path / "root").poll(Worker(0, "integrated", 1)) == []


def test_a_linked_control_folder_is_not_followed(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    requests_dir(elsewhere)
    write_request(elsewhere, Request.new(60, steps=1))
    (root / "control").symlink_to(elsewhere / "control")
    source = FolderSource(root)
    assert source.poll(Worker(0, "integrated", 1)) == []
    source.ack(Request.new(60, steps=1), Ack(id="x", rank=0, role="integrated",
                                             status="written"))
    assert not (elsewhere / "control" / "acks").exists()
    assert not (elsewhere / "control" / "workers").exists()


def test_an_ack_is_one_file_per_role_and_rank_in_the_save_root(tmp_path: Path) -> None:
    request = Request.new(60, steps=1)
    source = FolderSource(tmp_path)
    for role in ("actor", "rollout"):  # verl numbers each role's ranks from 0
        source.ack(request, Ack(id=request.id, rank=0, role=role, status="written",
                                files=[role]))
    assert sorted(a.role for a in read_acks(tmp_path, request.id)) == ["actor", "rollout"]
    (ack_dir,) = {p.parent for p in tmp_path.rglob("*.json")}
    assert ack_dir == tmp_path / "control" / "acks"


def test_workers_tell_their_step_while_a_command_asks(tmp_path: Path) -> None:
    source = FolderSource(tmp_path)
    source.poll(Worker(0, "actor", 39))
    assert list(tmp_path.iterdir()) == []  # nobody asked: a job writes nothing
    channel = FolderChannel(tmp_path)
    channel.open()
    source.poll(Worker(1, "actor", 41, time=5.0, rate=2.5))
    source.poll(Worker(0, "actor", 40))
    assert [(w.rank, w.step, w.rate) for w in channel.workers()] == [(0, 40, 0.0),
                                                                      (1, 41, 2.5)]
    channel.close(Request.new(60, steps=1))
    assert [p.name for p in (tmp_path / "control").iterdir()] == ["workers"]  # what jobs wrote


def test_the_command_side_settles_and_withdraws(tmp_path: Path) -> None:
    request = Request.new(60, steps=1, ranks=[0])
    channel = FolderChannel(tmp_path)
    channel.open()
    assert channel.post(request) == ""
    FolderSource(tmp_path).ack(request, Ack(id=request.id, rank=0, role="integrated",
                                            status="written", files=["f"]))
    status = wait(channel, request, 5)
    assert [a.status for a in status.acks] == ["written"] and status.finished(request)
    assert status.acks[0].root == str(tmp_path)
    channel.close(request)
    assert sorted(p.name for p in (tmp_path / "control").iterdir()) == ["acks"]
