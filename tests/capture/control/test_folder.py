"""The control folder: requests once each, bad files one warning each, nothing written outside
it."""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
import time
from pathlib import Path

import pytest

from mindspeed_prof.capture.control import Ack, Folder, Request, Worker, wait
from mindspeed_prof.capture.control import folder as folder_module
from mindspeed_prof.capture.control.folder import (
    MAX_REQUEST_BYTES,
    WARNINGS_PER_LOOK,
    read_acks,
    read_workers,
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
    source = Folder(tmp_path)
    assert [r.id for r in source.poll(Worker(0, "integrated", 1))] == [first.id, later.id]
    assert source.poll(Worker(0, "integrated", 2)) == []  # the scheduler keeps the start step


def test_bad_files_are_ignored_with_one_warning_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = _Clock(mono=100.0)
    monkeypatch.setattr(folder_module, "time", clock)
    folder = requests_dir(tmp_path)
    old = time.time() - 60
    old_file(folder / "partial.json", '{"id": "x", "created": 1, "exp')
    old_file(
        folder / "preset.json",
        json.dumps({"id": "p", "created": old, "expires": old + 600, "preset": "nope"}),
    )
    old_file(folder / "expired.json", json.dumps({"id": "e", "created": old, "expires": old}))
    source = Folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert source.poll(Worker(0, "integrated", 1)) == []  # partial: maybe being written
        (folder / "young.json").write_text("{")  # being written now: not warned about yet
        clock.mono += 2.0
        for _ in range(3):
            assert source.poll(Worker(0, "integrated", 1)) == []
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 3
    assert any("partial.json" in m and "not complete JSON" in m for m in warned)
    assert any("preset='nope'" in m and "allowed" in m for m in warned)
    assert any("expired" in m for m in warned)


def test_a_thousand_bad_files_are_a_few_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = requests_dir(tmp_path)
    old = time.time() - 60
    for i in range(1000):
        (folder / f"r{i:04}.json").write_text(
            json.dumps({"id": f"e{i}", "created": old, "expires": old})
        )
    good = Request.new(60, steps=1)
    write_request(tmp_path, good)
    source = Folder(tmp_path)
    found = []
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 6):
            found += source.poll(Worker(0, "integrated", step))
    assert [r.id for r in found] == [good.id]  # the bad ones do not hide it
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) <= 5 * (WARNINGS_PER_LOOK + 1)
    assert (
        sum(int(m.split("ignoring ")[1].split()[0]) for m in lines if "more capture" in m)
        + sum(1 for m in lines if "more capture" not in m)
        == 1000
    )


def test_files_that_are_not_requests_are_never_followed_or_read_whole(tmp_path: Path) -> None:
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(Request.new(60, steps=1).to_json()))
    folder = requests_dir(tmp_path / "root")
    (folder / "link.json").symlink_to(outside)
    (folder / "dir.json").mkdir()
    old_file(folder / "huge.json", " " * (MAX_REQUEST_BYTES + 1))
    os.mkfifo(folder / "fifo.json")
    assert Folder(tmp_path / "root").poll(Worker(0, "integrated", 1)) == []


def test_a_linked_control_folder_is_not_followed(tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    requests_dir(elsewhere)
    write_request(elsewhere, Request.new(60, steps=1))
    (root / "control").symlink_to(elsewhere / "control")
    source = Folder(root)
    assert source.poll(Worker(0, "integrated", 1)) == []
    source.ack(Request.new(60, steps=1), Ack(id="x", rank=0, role="integrated", status="written"))
    assert not (elsewhere / "control" / "acks").exists()
    assert not (elsewhere / "control" / "workers").exists()


def test_an_ack_is_one_file_per_role_and_rank_in_the_save_root(tmp_path: Path) -> None:
    request = Request.new(60, steps=1)
    source = Folder(tmp_path)
    for role in ("actor", "rollout"):  # verl numbers each role's ranks from 0
        source.ack(request, Ack(id=request.id, rank=0, role=role, status="written", files=[role]))
    assert sorted(a.role for a in read_acks(tmp_path, request.id)) == ["actor", "rollout"]
    (ack_dir,) = {p.parent for p in tmp_path.rglob("*.json")}
    assert ack_dir == tmp_path / "control" / "acks"


def test_workers_tell_their_step_while_a_command_asks(tmp_path: Path) -> None:
    source = Folder(tmp_path)
    source.poll(Worker(0, "actor", 39))
    assert list(tmp_path.iterdir()) == []  # nobody asked: a job writes nothing
    channel = Folder(tmp_path)
    channel.open()
    source.poll(Worker(1, "actor", 41, time=5.0, rate=2.5))
    source.poll(Worker(0, "actor", 40))
    assert [(w.rank, w.step, w.rate) for w in channel.workers()] == [(0, 40, 0.0), (1, 41, 2.5)]
    channel.close(Request.new(60, steps=1))
    assert [p.name for p in (tmp_path / "control").iterdir()] == ["workers"]  # what jobs wrote


def test_the_command_side_settles_and_withdraws(tmp_path: Path) -> None:
    request = Request.new(60, steps=1, ranks=[0])
    channel = Folder(tmp_path)
    channel.open()
    assert channel.post(request) == ""
    Folder(tmp_path).ack(
        request, Ack(id=request.id, rank=0, role="integrated", status="written", files=["f"])
    )
    status = wait(channel, request, 5)
    assert [a.status for a in status.acks] == ["written"] and status.finished(request)
    assert status.acks[0].root == str(tmp_path)
    channel.close(request)
    assert sorted(p.name for p in (tmp_path / "control").iterdir()) == ["acks"]


def test_workers_are_read_as_they_wrote_and_bad_files_skipped(tmp_path: Path) -> None:
    """A worker file is the job's, but anyone may write there: each field is converted, a
    step that is not an integer is unknown, a missing rate 0; a file that is not one is
    skipped without hiding the next."""
    folder = tmp_path / "control" / "workers"
    folder.mkdir(parents=True)
    files = {
        "a.json": {"rank": 2, "role": "rollout", "step": 7, "time": 12, "rate": 1.5},
        "b.json": {"rank": 3, "role": "actor", "time": 1.0},  # no step
        "c.json": {"rank": "4", "role": 5, "step": "7", "time": "2.5"},
        "d.json": [1, 2],
        "e.json": {"rank": 5, "role": "actor", "step": 7.5, "time": 3.0},
    }
    for name, data in files.items():
        (folder / name).write_text(json.dumps(data))
    (folder / "not-json.json").write_text("{")
    assert read_workers(tmp_path) == [
        Worker(2, "rollout", 7, 12.0, 1.5),
        Worker(4, "5", None, 2.5, 0.0),
        Worker(5, "actor", None, 3.0, 0.0),
    ]
    assert [type(w.time) for w in read_workers(tmp_path)] == [float] * 3


class _Clock:
    """``folder``'s ``time`` module: ``monotonic`` reads ``mono``, ``time`` reads ``wall``
    when set; the rest is the real one."""

    def __init__(self, mono: float = 0.0, wall: float | None = None) -> None:
        self.mono, self.wall = mono, wall

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return time.time() if self.wall is None else self.wall

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_the_command_side_settles_once_acks_stop_changing_3_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock(mono=100.0)
    monkeypatch.setattr(folder_module, "time", clock)
    request = Request.new(60, steps=1)
    channel = Folder(tmp_path)
    clock.mono = 110.0  # made long ago, first asked now: nothing is settled yet
    assert channel.status(request).settled is False
    clock.mono = 112.0
    source = Folder(tmp_path)
    source.ack(request, Ack(id=request.id, rank=0, role="actor", status="queued"))
    assert channel.status(request).settled is False  # changed at 112 s
    clock.mono = 114.0
    assert channel.status(request).settled is False
    clock.mono = 115.0
    status = channel.status(request)
    assert status.settled is True and [a.status for a in status.acks] == ["queued"]
    source.ack(request, Ack(id=request.id, rank=0, role="actor", status="written"))
    assert channel.status(request).settled is False  # changed again at 115 s
    source.poll(Worker(0, "actor", 9))  # nothing asked: no worker file
    channel.open()
    source.poll(Worker(0, "actor", 9, time=5.0))
    clock.mono = 117.5
    status = channel.status(request)
    assert status.settled is False and status.workers == [Worker(0, "actor", 9, 5.0)]
    clock.mono = 118.0
    assert channel.status(request).settled is True


def test_a_save_root_whose_requests_folder_is_a_file_cannot_be_asked(tmp_path: Path) -> None:
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "requests").write_text("")
    with pytest.raises(OSError, match=f"^{tmp_path}/control/requests is not a folder$"):
        Folder(tmp_path).open()


def test_closing_twice_or_unopened_removes_only_what_it_made_and_left_empty(tmp_path: Path) -> None:
    """The mark may be gone already (someone cleaned up); a folder the command made but left,
    because something was in it, is the job's from then on, even once emptied."""
    request = Request.new(60, steps=1)
    Folder(tmp_path).close(request)  # never opened: nothing to do
    root = tmp_path / "save"
    channel = Folder(root)
    channel.open()
    assert channel.made_root
    requests = root / "control" / "requests"
    (marker,) = requests.iterdir()
    assert marker.name.startswith(".asking-")
    marker.unlink()
    (requests / "other.json").write_text("{}")  # another command's request
    channel.close(request)
    assert [p.name for p in requests.iterdir()] == ["other.json"]
    (requests / "other.json").unlink()
    channel.close(request)
    assert list(requests.iterdir()) == [] and not channel.made_root


def test_a_request_is_put_only_into_a_real_requests_folder(tmp_path: Path) -> None:
    request = Request.new(60, steps=1)
    with pytest.raises(FileNotFoundError) as missing:
        write_request(tmp_path / "none", request)
    assert str(missing.value) == f"{tmp_path}/none: no such folder"
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "requests").write_text("")
    with pytest.raises(OSError) as not_folder:
        write_request(tmp_path, request)
    assert str(not_folder.value) == f"{tmp_path}/control/requests is not a folder"


def test_a_written_file_is_0644_and_a_link_in_its_way_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is written aside under a new name made exclusively: a link at the name earlier
    versions used, or at the very name drawn for it, is never followed."""
    umask = os.umask(0o022)
    try:
        path = write_request(tmp_path, Request.new(60, steps=1))
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    target = tmp_path / "target"
    target.write_text("keep")
    request = Request.new(60, steps=1)
    (path.parent / f".{request.id}.json.{os.getpid()}.tmp").symlink_to(target)
    drawn = path.parent / f".{request.id}.json.drawn.tmp"
    drawn.symlink_to(target)
    names = iter(["drawn", "next1234"])
    monkeypatch.setattr(tempfile, "_get_candidate_names", lambda: names)
    written = write_request(tmp_path, request)
    assert target.read_text() == "keep" and drawn.is_symlink()
    assert json.loads(written.read_text()) == request.to_json() and not written.is_symlink()
    assert sorted(p.name for p in path.parent.iterdir() if not p.is_symlink()) == sorted(
        [path.name, written.name]
    )  # the temporary file renamed, none left


def test_a_request_file_is_read_up_to_64_kib_of_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = requests_dir(tmp_path)
    good = Request.new(60, steps=1)
    text = json.dumps(good.to_json())
    (folder / "a.json").write_text(text + " " * (MAX_REQUEST_BYTES - len(text)))
    (folder / "b.json").write_text(text + " " * (MAX_REQUEST_BYTES + 1 - len(text)))
    wide = {**Request.new(60, steps=1).to_json(), "role": "\u00e9" * 40_000}  # 80,000 bytes
    (folder / "c.json").write_text(json.dumps(wide, ensure_ascii=False), encoding="utf-8")
    assert [(folder / n).stat().st_size for n in ("a.json", "b.json")] == [65536, 65537]
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert [r.id for r in Folder(tmp_path).poll(Worker(0, "actor", 1))] == [good.id]
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: ignoring capture request {folder / n}: unreadable (larger than 65536 "
        f"bytes ({(folder / n).stat().st_size}))"
        for n in ("b.json", "c.json")
    ]


def test_what_is_not_a_regular_file_is_named_in_its_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A link (even a dangling one) is refused by the open itself; anything else not a regular
    file is named for what it is."""
    outside = tmp_path / "secret.json"
    good = Request.new(60, steps=1)
    outside.write_text(json.dumps(good.to_json()))
    folder = requests_dir(tmp_path / "root")
    (folder / "dangling.json").symlink_to(tmp_path / "nowhere")
    os.mkfifo(folder / "fifo.json")
    (folder / "link.json").symlink_to(outside)
    write_request(tmp_path / "root", good)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        found = Folder(tmp_path / "root").poll(Worker(0, "actor", 1))
    assert [r.id for r in found] == [good.id]

    link = "unreadable (a symbolic link, not followed)"
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: ignoring capture request {folder / name}: {why}"
        for name, why in (
            ("dangling.json", link),
            ("fifo.json", "unreadable (a FIFO, not a regular file)"),
            ("link.json", link),
        )
    ]


def test_only_visible_json_files_are_requests(tmp_path: Path) -> None:
    folder = requests_dir(tmp_path)
    first, hidden, other = (Request.new(60, steps=1) for _ in range(3))
    write_request(tmp_path, first)
    (folder / ".hidden.json").write_text(json.dumps(hidden.to_json()))
    (folder / "other.txt").write_text(json.dumps(other.to_json()))
    (folder / "x").write_text(json.dumps(other.to_json()))
    assert [r.id for r in Folder(tmp_path).poll(Worker(0, "actor", 1))] == [first.id]


def test_five_warnings_a_look_and_the_rest_counted_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = _Clock(mono=100.0)
    monkeypatch.setattr(folder_module, "time", clock)
    folder = requests_dir(tmp_path)
    old = time.time() - 60
    expired = json.dumps({"id": "e", "created": old, "expires": old - 1})
    malformed = json.dumps({"id": "m", "created": old, "expires": old + 600, "preset": "nope"})
    long_malformed = json.dumps({"id": "o", "created": old, "expires": old + 600, "overrides": []})
    for name, text in (
        ("a1", "{"),
        ("a2", expired),
        ("a3", malformed),
        ("a5", long_malformed),
        ("b1", expired),
        ("b2", malformed),
        ("b3", malformed),
        ("b4", "{"),
    ):
        old_file(folder / f"{name}.json", text)
    for name in ("a4", "b5"):
        os.mkfifo(folder / f"{name}.json")
    source = Folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 4):  # each file is warned about once; incomplete ones after 2 s
            assert source.poll(Worker(0, "actor", step)) == []
            clock.mono += 1.0
    objects = (
        "overrides=[]: must be an object of mstx, profile_with_memory, "
        "profile_record_shapes, profile_with_cpu, profile_with_npu, profile_with_module, "
        "with_stack, profile_level, aic_metrics"
    )
    assert len(objects) > 160
    said = "mindspeed-prof: ignoring capture request"
    incomplete = (
        "not complete JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1))"
    )
    assert [r.getMessage() for r in caplog.records] == [
        f"{said} {folder / 'a2.json'}: expired (its timeout is not positive)",
        f"{said} {folder / 'a3.json'}: malformed: preset='nope': allowed: mstx_light, "
        "stage_scoped, memory_debug, full, dpo",
        f"{said} {folder / 'a4.json'}: unreadable (a FIFO, not a regular file)",
        f"{said} {folder / 'a5.json'}: malformed: {objects[:160]}",
        f"{said} {folder / 'b1.json'}: expired (its timeout is not positive)",
        f"mindspeed-prof: ignoring 3 more capture requests in {folder} (2 malformed, 1 unreadable)",
        f"{said} {folder / 'a1.json'}: {incomplete}",  # at the third look: seen 2 s incomplete
        f"{said} {folder / 'b4.json'}: {incomplete}",
    ]


def test_a_request_applied_before_a_restart_is_not_taken_again(tmp_path: Path) -> None:
    """Only this worker's own ack (its rank and its role) says it applied a request."""
    applied, mine, others, other_role = (
        Request.new(60, steps=1),
        Request.new(60, steps=1, ranks=[0], role="actor"),
        Request.new(60, steps=1),
        Request.new(60, steps=1),
    )
    source = Folder(tmp_path)
    for request, rank, role in (
        (applied, 0, "actor"),
        (others, 1, "actor"),
        (other_role, 0, "critic"),
    ):
        write_request(tmp_path, request)
        source.ack(request, Ack(id=request.id, rank=rank, role=role, status="written"))
    write_request(tmp_path, mine)
    found = Folder(tmp_path).poll(Worker(0, "actor", 1))
    assert sorted(r.id for r in found) == sorted([mine.id, others.id, other_role.id])


def test_acks_are_read_for_their_request_only_and_bad_ones_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "control" / "acks"
    folder.mkdir(parents=True)
    good = Ack(id="r1", rank=1, role="actor", status="written", files=["f"])
    for name, text in (
        ("r1.actor.rank0.json", "{"),
        ("r1.actor.rank1.json", json.dumps(good.to_json())),
        ("r1.actor.rank2.json", json.dumps({"id": "r1"})),  # not an ack
        ("r1.actor.rank3.json", json.dumps({**good.to_json(), "id": "r2"})),
        ("r1.5.actor.rank0.json", json.dumps({**good.to_json(), "id": "r1.5"})),
    ):
        (folder / name).write_text(text)
    assert read_acks(tmp_path, "r1") == [good]


def test_a_worker_tells_its_host_and_process(tmp_path: Path) -> None:
    channel = Folder(tmp_path)
    channel.open()
    Folder(tmp_path).poll(Worker(3, "actor", 9, time=5.0, rate=1.0))
    data = json.loads((tmp_path / "control" / "workers" / "actor.rank3.json").read_text())
    assert sorted(data) == ["host", "pid", "rank", "rate", "role", "step", "time"]
    assert data["pid"] == os.getpid() and isinstance(data["host"], str) and data["host"]
    assert (data["rank"], data["role"], data["step"], data["time"], data["rate"]) == (
        3,
        "actor",
        9,
        5.0,
        1.0,
    )


def test_an_ack_that_cannot_be_written_is_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "acks").write_text("")
    request = Request.new(60, steps=1)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        Folder(tmp_path).ack(request, Ack(id=request.id, rank=0, role="actor", status="written"))
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: could not acknowledge request {request.id}: {tmp_path}/control/acks "
        "is not a folder"
    ]


def test_an_incomplete_file_may_be_written_for_2_s_of_the_jobs_own_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A file is warned about once it has been seen incomplete for 2 s on the job's monotonic
    clock, however old its mtime (another machine's clock) says it is; one completed meanwhile
    is taken. The request's own times, a day off the job's clock, decide nothing."""
    wall = 1_700_000_000.0
    clock = _Clock(mono=100.0, wall=wall)
    monkeypatch.setattr(folder_module, "time", clock)
    folder = requests_dir(tmp_path)
    for name in ("done.json", "left.json"):
        old_file(folder / name, "{")
    day = 86_400.0
    source = Folder(tmp_path)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert source.poll(Worker(0, "actor", 1)) == []
        clock.mono += 1.9
        assert source.poll(Worker(0, "actor", 2)) == []
        late = Request(id="late", created=wall - day, expires=wall - day + 10, steps=1)
        (folder / "done.json").write_text(json.dumps(late.to_json()))  # completed: new mtime
        clock.mono += 0.1
        assert [r.id for r in source.poll(Worker(0, "actor", 3))] == ["late"]
        assert source.poll(Worker(0, "actor", 4)) == []
    assert [r.getMessage() for r in caplog.records] == [
        f"mindspeed-prof: ignoring capture request {folder / 'left.json'}: not complete JSON "
        "(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"
    ]


def test_a_request_from_a_command_whose_clock_is_far_off_is_taken(tmp_path: Path) -> None:
    """Created a day ahead of the job's clock, or expired a day ago by it: taken all the same
    (the command withdraws the file when it gives up); only a timeout of 0 or less is refused."""
    day, now = 86_400.0, time.time()
    ahead = Request(id="ahead", created=now + day, expires=now + day + 60, steps=1)
    behind = Request(id="behind", created=now - day, expires=now - day + 60, steps=1)
    none = Request(id="none", created=now, expires=now, steps=1)
    for request in (ahead, behind, none):
        write_request(tmp_path, request)
    assert [r.id for r in Folder(tmp_path).poll(Worker(0, "actor", 1))] == ["ahead", "behind"]


def test_a_torch_npu_config_is_named_after_its_file_and_its_time(tmp_path: Path) -> None:
    """The id is ``npu-<file name as an id token>-<mtime in ns>``: other characters become
    '_', leading '.', '_' and '-' go, at most 60 are kept, and a name with none left is
    'file'. A file with neither an id nor a torch_npu field is no torch_npu config."""
    folder = requests_dir(tmp_path)
    mtime_ns = 1_600_000_000_123_456_789
    long_name = "a" * 70
    for stem, data in (
        ("!!!", {"active": 1}),
        ("-Xy cfg!", {"active": 1}),
        (long_name, {"active": 1}),
        ("plain", {"steps": 1}),
        ("profiler_config", {"start_step": 5, "active": 2}),
    ):
        (folder / f"{stem}.json").write_text(json.dumps(data))
        os.utime(folder / f"{stem}.json", ns=(mtime_ns, mtime_ns))
    found = Folder(tmp_path).poll(Worker(0, "actor", 1))
    assert [r.id for r in found] == [
        f"npu-file-{mtime_ns}",
        f"npu-Xy_cfg_-{mtime_ns}",
        f"npu-{'a' * 60}-{mtime_ns}",
        f"npu-profiler_config-{mtime_ns}",
    ]
    assert (found[-1].steps, found[-1].start_step) == (2, 5)


def test_a_folder_named_like_a_request_leaks_no_file_descriptor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each look opens what it reads; a folder (opened, then refused) is closed again."""
    for part in ("acks", "workers", "requests"):
        for i in range(10):
            (tmp_path / "control" / part / f"d.{i}.json").mkdir(parents=True)
    before = len(os.listdir("/proc/self/fd"))
    assert read_acks(tmp_path, "d") == [] and read_workers(tmp_path) == []
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        assert Folder(tmp_path).poll(Worker(0, "actor", 1)) == []
    assert len(os.listdir("/proc/self/fd")) == before
    assert caplog.records[0].getMessage() == (
        "mindspeed-prof: ignoring capture request "
        f"{tmp_path / 'control' / 'requests' / 'd.0.json'}: unreadable (a folder, not a regular "
        "file)"
    )
