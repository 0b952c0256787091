"""The span recorder's file is complete JSON after every flush."""

from __future__ import annotations

import errno
import json
import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from capture_fixtures import FullDisk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mindspeed_prof.capture.spans import SpanRecorder
from mindspeed_prof.formats.header import CaptureHeader


def test_valid_after_each_flush_and_counts(tmp_path: Path) -> None:
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", CaptureHeader(rank=2))
    data = json.loads(rec.path.read_text())
    assert data["traceEvents"] == [] and data["distributedInfo"] == {"rank": 2}
    for step in (1, 2):
        rec.step = step
        with rec.range(f"r{step}", "stage"):
            pass
        rec.mark("m")
        rec.flush()
        events = json.loads(rec.path.read_text())["traceEvents"]
        assert len(events) == 2 * step
    assert events[0]["name"] == "r1" and events[0]["cat"] == "stage"
    assert events[0]["args"] == {"step": 1} and events[1]["ph"] == "i"
    assert rec.count == 4
    rec.close()
    rec.close()


def test_hostile_names_are_escaped(tmp_path: Path) -> None:
    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader())
    for name in ('"]}', "\x00\n", "</script>"):
        with rec.range(name):
            pass
    rec.close()
    names = [e["name"] for e in json.loads(rec.path.read_text())["traceEvents"]]
    assert names == ['"]}', "\x00\n", "</script>"]


def test_hts_regex_finds_rank(tmp_path: Path) -> None:
    import re

    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader(rank=7))
    rec.close()
    m = re.search(r'"rank":\s+(\d+)', rec.path.read_text())
    assert m is not None and m.group(1) == "7"


def test_nested_and_recursive_ranges_pair_by_thread(tmp_path: Path) -> None:
    import threading
    import time

    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader())

    def work(depth: int) -> None:
        with rec.range("same"):
            if depth:
                work(depth - 1)
            else:
                time.sleep(0.02)

    threads = [threading.Thread(target=work, args=(2,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rec.close()
    events = json.loads(rec.path.read_text())["traceEvents"]
    by_tid: dict[int, list[dict]] = {}
    for e in events:
        by_tid.setdefault(e["tid"], []).append(e)
    assert len(by_tid) == 2
    for evs in by_tid.values():  # inner ranges end first; each lies inside the next
        assert len(evs) == 3
        for inner, outer in zip(evs, evs[1:]):
            assert (
                outer["ts"] <= inner["ts"]
                and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
            )
        assert evs[0]["dur"] >= 20_000 * 0.9  # the sleep, in microseconds


def test_span_recorder_marks_and_ranges_keep_their_names(tmp_path: Path) -> None:
    """The recorder's ``mark``, ``range``, ``range_start`` and ``range_end`` go to its buffer
    with the name and category given (``user_annotation`` by default); an id range ends as
    started."""
    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader())
    rec.mark("instant")
    plain = rec.range_start("plain")
    staged = rec.range_start("staged", "stage")
    rec.range_end(staged)
    rec.range_end(plain)
    with rec.range("entered"):
        pass
    rec.close()
    events = json.loads(rec.path.read_text())["traceEvents"]
    assert [(e["name"], e["cat"], e["ph"]) for e in events] == [
        ("instant", "mark", "i"),
        ("staged", "stage", "X"),
        ("plain", "user_annotation", "X"),
        ("entered", "user_annotation", "X"),
    ]
    instant, staged_event, plain_event, _ = events
    assert "dur" not in instant
    assert plain_event["ts"] <= staged_event["ts"]
    assert staged_event["ts"] + staged_event["dur"] <= plain_event["ts"] + plain_event["dur"]


def test_flush_due_writes_at_once_then_every_100_ms(tmp_path: Path, monkeypatch) -> None:
    from mindspeed_prof.capture import spans

    now = [0]
    monkeypatch.setattr(spans, "perf_counter_ns", lambda: now[0])
    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader())

    def written() -> int:
        rec.wait()  # the writer thread done with what flush_due handed it
        return len(json.loads(rec.path.read_text())["traceEvents"])

    rec.mark("m")
    rec.flush_due()  # the first is due at once
    assert written() == 1
    for at, expected in ((99_999_999, 1), (100_000_000, 3)):  # then both marks waiting
        now[0] = at
        rec.mark("m")
        rec.flush_due()
        assert written() == expected
    rec.close()


# -- a full disk: the file keeps every range written whole, and stays complete JSON ---------
def _record(
    path: Path, steps: list[list[str]], size: int | None, monkeypatch: pytest.MonkeyPatch
) -> list[OSError]:
    """Record ``steps`` (each a list of range names) to ``path`` on a disk of ``size`` bytes
    (None: no limit), flushing at each step's end and closing; the errors raised."""
    from mindspeed_prof.capture import spans
    from mindspeed_prof.capture.buffer import RangeBuffer

    real_open = open

    def on_disk(file: Path, mode: str, buffering: int = -1) -> Any:
        raw = real_open(file, mode, buffering=buffering)
        return raw if size is None else FullDisk(raw, size)

    errors: list[OSError] = []
    buf = RangeBuffer()
    buf.wall0_ns = buf.perf0_ns = 0
    with monkeypatch.context() as mp:
        mp.setattr(spans, "open", on_disk, raising=False)
        try:
            rec = SpanRecorder(path, CaptureHeader(rank=0), buffer=buf)
        except OSError as err:
            return [err]
        for step, names in enumerate(steps, 1):
            rec.step = step
            for i, name in enumerate(names):
                buf.events.append((buf.key(name), 7, 1_000 * i, 1_000 * i + 500))
            try:
                rec.flush()
            except OSError as err:
                errors.append(err)
        try:
            rec.close()
        except OSError as err:
            errors.append(err)
    return errors


steps_strategy = st.lists(st.lists(st.text(max_size=12), max_size=6), min_size=1, max_size=8)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps_strategy, room=st.integers(0, 2_500))
def test_a_full_disk_leaves_complete_json_holding_every_range_that_fit(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[list[str]],
    room: int,
) -> None:
    """Whatever the room on the disk, the range file is complete JSON holding the first ranges
    of what a disk with room for all writes, as many as fit with the file's end: one more
    would not have. The first failed write raises ENOSPC naming the file, and the close raises
    it again; nothing is written after it. Where not even the header fits, no file is left."""
    folder = tmp_path_factory.mktemp("disk")
    full, cut = folder / "full.json", folder / "cut.json"
    assert _record(full, steps, None, monkeypatch) == []
    whole = full.read_bytes()
    head = whole[: whole.index(b'"traceEvents": [') + len(b'"traceEvents": [')]
    errors = _record(cut, steps, room, monkeypatch)
    if room >= len(whole):
        assert errors == [] and cut.read_bytes() == whole
        return
    assert errors[0].errno == errno.ENOSPC and errors[0].filename == str(cut)
    assert len(errors) <= 2 and all(e is errors[0] for e in errors)
    if room < len(head) + len(b"\n]}\n"):
        assert not cut.exists()
        return
    body = whole[len(head) : -len(b'\n], "closed": true}\n')]
    lines = body[1:].split(b",\n") if body else []

    def kept(k: int) -> bytes:  # the file holding the first k ranges, not closed
        return head + (b"\n" + b",\n".join(lines[:k]) if k else b"") + b"\n]}\n"

    k = max(k for k in range(len(lines) + 1) if len(kept(k)) <= room)
    assert cut.read_bytes() == kept(k)  # as many as fit: one more would not
    data = json.loads(cut.read_bytes())
    assert "closed" not in data and data["traceEvents"] == json.loads(whole)["traceEvents"][:k]


def test_a_failed_write_is_cut_back_at_once_and_nothing_is_written_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ENOSPC the recorder never writes again: later flushes and the close are no-ops
    even when room comes back (another process freed space), so the cut file stays as cut."""
    from mindspeed_prof.capture import spans

    disks: list[FullDisk] = []
    real_open = open

    def on_disk(file: Path, mode: str, buffering: int = -1) -> Any:
        disks.append(FullDisk(real_open(file, mode, buffering=buffering), 10**6))
        return disks[-1]

    monkeypatch.setattr(spans, "open", on_disk, raising=False)
    rec = SpanRecorder(tmp_path / "s.json", CaptureHeader(rank=0))
    for step in range(1, 4):
        rec.step = step
        with rec.range(f"step{step}_" + "x" * 60):
            pass
        if step == 3:
            disks[0].size = rec.path.stat().st_size + 20  # less than a range's line
            with pytest.raises(OSError, match="No space left on device: '.*s.json'"):
                rec.flush()
        else:
            rec.flush()
    cut = rec.path.read_bytes()
    assert [e["args"]["step"] for e in json.loads(cut)["traceEvents"]] == [1, 2]
    disks[0].size = 10**6
    rec.mark("after")
    rec.flush()
    with pytest.raises(OSError, match="No space left on device") as closing:
        rec.close()  # the capture is not whole: its close says so
    assert closing.value.filename == str(rec.path)
    assert rec.path.read_bytes() == cut and disks[0].refused == 1


# -- a stalled file system: the step never waits; the close still writes every step ---------
class StalledFile:
    """A raw file whose writes wait until ``release`` is set (a file system that stalls); the
    header, written at the open, passes."""

    def __init__(self, raw: Any) -> None:
        self.raw, self.release, self.blocked = raw, threading.Event(), threading.Event()
        self.writes = 0

    def seek(self, offset: int) -> int:
        return int(self.raw.seek(offset))

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes > 1:  # not the header's
            self.blocked.set()
            self.release.wait()
        return int(self.raw.write(data))

    def truncate(self, size: int) -> int:
        return int(self.raw.truncate(size))

    def fileno(self) -> int:
        return int(self.raw.fileno())

    def close(self) -> None:
        self.raw.close()

    @property
    def closed(self) -> bool:
        return bool(self.raw.closed)


def _stalled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SpanRecorder, StalledFile]:
    from mindspeed_prof.capture import spans

    files: list[StalledFile] = []
    real_open = open

    def on_disk(file: Path, mode: str, buffering: int = -1) -> Any:
        files.append(StalledFile(real_open(file, mode, buffering=buffering)))
        return files[-1]

    monkeypatch.setattr(spans, "open", on_disk, raising=False)
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", CaptureHeader(rank=0), interval_s=0)
    return rec, files[0]


def _steps(path: Path) -> list[int]:
    return [e["args"]["step"] for e in json.loads(path.read_text())["traceEvents"]]


def test_a_stalled_file_system_never_holds_a_step_and_the_close_writes_every_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the writer thread's write is stuck, 50 steps end (each handed off at its end)
    without waiting; once the file system answers, the close writes every one of them."""
    rec, disk = _stalled(tmp_path, monkeypatch)
    for step in range(1, 51):
        rec.step = step
        with rec.range("s"):
            pass
        rec.flush_due()  # returns while the write of step 1 is stuck
        if step == 1:
            assert disk.blocked.wait(30)
    assert not disk.release.is_set() and rec.count == 50 and rec.dropped == 0
    disk.release.set()
    rec.close()
    assert _steps(rec.path) == list(range(1, 51))
    assert json.loads(rec.path.read_text())["closed"] is True


def test_past_the_bound_a_stalled_file_system_s_ranges_are_dropped_counted_and_warned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Memory stays bounded: past ``MAX_WAITING`` ranges waiting, a step's ranges are dropped
    and counted, with one warning as it starts and one at the close giving the count; the
    steps handed off before stay whole."""
    from mindspeed_prof.capture import spans

    monkeypatch.setattr(spans, "MAX_WAITING", 6)
    rec, disk = _stalled(tmp_path, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step in range(1, 11):
            rec.step = step
            for _ in range(2):
                with rec.range("s"):
                    pass
            rec.flush_due()
            if step == 1:
                assert disk.blocked.wait(30)
        disk.release.set()
        rec.close()
    kept = _steps(rec.path)
    assert rec.dropped == 20 - len(kept) and rec.dropped >= 10
    assert kept == sorted(kept) and kept[:2] == [1, 1] and len(kept) <= 2 + 6
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "dropped (counted)" in messages[0]
    assert (
        messages[1] == f"mindspeed-prof: {rec.path}: {rec.dropped} ranges were dropped "
        "while its file system stalled"
    )


def test_a_step_larger_than_the_bound_is_written_whole_when_the_disk_keeps_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The bound is on what waits for the file system: a step of more ranges than it (a
    rollout's per-token ranges) is written whole when nothing waits, with no warning (it was
    dropped, as if the disk had stalled: "has not taken the last 0 ranges")."""
    from mindspeed_prof.capture import spans

    monkeypatch.setattr(spans, "MAX_WAITING", 6)
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", CaptureHeader(rank=0), interval_s=0)
    with caplog.at_level(logging.WARNING, logger="mindspeed_prof"):
        for step, ranges in ((1, 10), (2, 3), (3, 25)):
            rec.step = step
            for _ in range(ranges):
                with rec.range("s"):
                    pass
            rec.flush_due()
            rec.wait()
        rec.close()
    assert rec.dropped == 0 and caplog.records == []
    assert _steps(rec.path) == [1] * 10 + [2] * 3 + [3] * 25


def test_a_writer_slower_than_tiny_steps_keeps_up_and_drops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file system keeps up but the writer's formatting does not (it takes longer than a
    step, and than a hand-off's wait for a write): each hand-off waits while the writer formats,
    so what waits never nears ``MAX_WAITING`` and no range is dropped as if the file system
    had stalled (before, a hand-off finding the writer busy went on, and it fell behind)."""
    from mindspeed_prof.capture import spans, trace_file

    real = trace_file.trace_body
    formatting = spans.HANDOFF_WAIT_S * 2  # per range: past a hand-off's wait for a write

    def slow(chunks: Any, *args: Any) -> list[str]:
        lines = real(chunks, *args)
        until = time.perf_counter() + formatting * len(lines)
        while time.perf_counter() < until:  # CPU, holding the interpreter's lock
            pass
        return lines

    monkeypatch.setattr(spans, "trace_body", slow)
    monkeypatch.setattr(spans, "MAX_WAITING", 8)
    # a write is taken for a stalled one after 1 s, not 5 ms: a writer thread the loaded
    # machine leaves unscheduled right after its (quick) write does not look like a stall
    monkeypatch.setattr(spans, "_HANDOFF_WAIT_NS", 10**9, raising=False)
    rec = SpanRecorder(tmp_path / "s.mstx.trace.json", CaptureHeader(rank=0), interval_s=0)
    for step in range(1, 21):
        rec.step = step
        for _ in range(2):
            with rec.range("s"):
                pass
        rec.flush_due()
    rec.close()
    assert rec.dropped == 0 and _steps(rec.path) == [s for s in range(1, 21) for _ in range(2)]


def test_a_range_file_removed_mid_run_is_noticed_at_the_next_write(tmp_path: Path) -> None:
    """Its folder deleted (``rm -rf``): the next flush raises FileNotFoundError naming the
    file, nothing is written to the unlinked file nor a new one made under the old name, and
    the close raises it again (the capture is not whole)."""
    folder = tmp_path / "root"
    rec = SpanRecorder(folder / "s.mstx.trace.json", CaptureHeader(rank=0))
    rec.step = 1
    rec.mark("one")
    rec.flush()
    shutil.rmtree(folder)
    rec.step = 2
    rec.mark("two")
    with pytest.raises(FileNotFoundError, match="removed while being written") as raised:
        rec.flush()
    assert raised.value.filename == str(rec.path)
    rec.flush()  # said once
    with pytest.raises(FileNotFoundError):
        rec.close()
    assert not folder.exists()
