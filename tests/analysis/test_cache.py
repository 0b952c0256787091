"""The per-capture cache: hits, misses on change, corrupt and foreign entries, atomic writes."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from capture_fixtures import make_run

from mindspeed_prof import jsonio
from mindspeed_prof.analysis import cache, readers
from mindspeed_prof.analysis.readers import BadFile, Range, TraceData, discover, read
from mindspeed_prof.analysis.readers.model import Alloc, CommRow, DeviceRow, Memory, Tally
from mindspeed_prof.analysis.readers.range_table import RangeTable, as_table
from mindspeed_prof.formats.header import CaptureHeader, ModelFacts


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = make_run(tmp_path_factory.mktemp("run"), ranks=(0,), steps=2, profile_level="level0")
    return next(p for p in discover(run) if p.name.endswith(".pt.trace.json"))


@pytest.fixture
def capture(torch_trace: Path, tmp_path: Path) -> Path:
    """A fresh copy of a torch trace, alone in its folder."""
    return Path(shutil.copy2(torch_trace, tmp_path / torch_trace.name))


def no_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object) -> TraceData:
        raise AssertionError("read from disk instead of the cache")

    monkeypatch.setattr(cache, "read", fail)


def test_second_read_comes_from_the_cache(capture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = cache.read_cached(capture)
    assert cache.cache_path(capture).is_file()
    assert first == read(capture)
    no_reading(monkeypatch)
    assert cache.read_cached(capture) == first
    assert capture not in set(discover(capture.parent)) - {capture} and all(
        not p.name.startswith(".") for p in discover(capture.parent)
    )


def test_every_field_round_trips(capture: Path) -> None:
    """Fields are serialised generically: a field added to TraceData is cached with no edit."""
    data = read(capture)
    values = {
        "events": 7,
        "kernels": {"k": Tally(2, 3.5)},
        "runtime": {"launch": Tally(1, 0.5)},
        "device": [
            DeviceRow(
                step=1,
                compute_ms=1.25,
                comm_ms=0.5,
                overlap_ms=0.25,
                idle_ms=0.0,
                comm_exposed_ms=0.25,
            )
        ],
        "comm": [CommRow(name="allreduce", kind="collective", step=None, count=2)],
        "memory": Memory(
            source="torch_npu",
            peak_allocated_bytes=2**40,
            timeline=[[1.0, 5, 6]],
            top_ops=[Alloc(op="mm", count=1, bytes=3, max_bytes=3)],
        ),
        "meta": CaptureHeader(host="h", window=[1, None], model=ModelFacts(peak_tflops=2.5)),
    }
    for name, value in values.items():
        setattr(data, name, value)
    ranges = as_table(data.ranges)
    ranges.append(Range(0, "range", 'odd \u00e9 "name"', None, 1.5, 0.25))
    data.ranges = ranges
    back = cache.decode(cache.encode(data))
    assert back == data
    assert all(type(a) is type(b) for a, b in zip(back.ranges, data.ranges))
    assert isinstance(back.path, Path)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The reads from disk ``cache.read_cached`` makes from now on."""
    calls: list[object] = []
    real = read

    def counted(path: Path, root: Path | None = None) -> TraceData:
        calls.append((path, root))
        return real(path, root)

    monkeypatch.setattr(cache, "read", counted)
    return calls


@pytest.mark.parametrize("change", ["rewritten", "truncated", "touched"])
def test_a_changed_capture_is_read_again(
    capture: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.read_cached(capture)
    raw = capture.read_bytes()
    if change == "rewritten":  # same size, other content
        capture.write_bytes(raw.replace(b"aten::mm", b"aten::zz"))
    elif change == "truncated":
        capture.write_bytes(raw[: len(raw) // 2])
    else:
        os.utime(capture, ns=(capture.stat().st_atime_ns, capture.stat().st_mtime_ns + 10**9))
    calls = counting(monkeypatch)
    if change == "truncated":
        with pytest.raises(BadFile, match=capture.name):
            cache.read_cached(capture)
        return
    again = cache.read_cached(capture)
    assert len(calls) == 1 and again == read(capture)
    assert ("aten::zz" in again.ops) is (change == "rewritten")


@pytest.mark.parametrize("entry", [b"", b"\x00garbage\xff" * 10, None])
def test_a_corrupt_or_foreign_entry_is_ignored_and_rebuilt(
    capture: Path, entry: bytes | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = cache.read_cached(capture)
    path = cache.cache_path(capture)
    if entry is None:  # an entry written by another analysis version
        monkeypatch.setattr(cache, "analysis_version", lambda: "another")
    else:
        path.write_bytes(entry)
    calls = counting(monkeypatch)
    assert cache.read_cached(capture) == good and len(calls) == 1
    assert cache.read_cached(capture) == good and len(calls) == 1  # rebuilt: a hit now


def test_an_interrupted_write_leaves_no_entry(
    capture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        cache.read_cached(capture)
    assert sorted(p.name for p in capture.parent.iterdir() if p.name.startswith(".")) == []


def test_the_version_follows_the_source_that_decodes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "mindspeed_prof"
    files = (
        "analysis/readers/__init__.py",
        "analysis/readers/device/breakdown.py",
        "config/schema.py",
        "formats/__init__.py",
        "formats/sqlite_trace.py",
    )
    for name in files:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(f"# {name}\n")
    real = cache.analysis_version()
    monkeypatch.setattr(readers, "__file__", str(package / "analysis/readers/__init__.py"))
    versions = []
    try:
        for edit in files:
            cache.analysis_version.cache_clear()
            versions.append(cache.analysis_version())
            (package / edit).write_text("# changed\n")
        cache.analysis_version.cache_clear()
        versions.append(cache.analysis_version())
    finally:
        cache.analysis_version.cache_clear()
    assert len(set(versions)) == len(files) + 1 and real not in versions
    (package / "analysis" / "analyse.py").write_text("# above the readers\n")
    cache.analysis_version.cache_clear()
    try:
        assert cache.analysis_version() == versions[-1]  # reads cached data: not counted
    finally:
        cache.analysis_version.cache_clear()


def test_a_folder_capture_is_read_again_when_any_file_in_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A torch_npu folder: a file deep inside rewritten in place, at the same size, changes
    neither the folder's size nor its own mtime; the newest mtime of its files does."""
    from npu_fixtures import unpack

    folder = unpack("text/rank0_ascend_pt", tmp_path / "rank0_ascend_pt")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    first = cache.read_cached(folder)
    base = max(p.stat().st_mtime_ns for p in [folder, *folder.rglob("*")])
    for n, changed in enumerate((files[0], files[len(files) // 2], files[-1]), start=1):
        future = base + n * 10**9
        os.utime(changed, ns=(future, future))
        key = cache.fingerprint(folder)
        assert key is not None
        assert (key.size, key.mtime_ns) == (sum(p.stat().st_size for p in files), future)
        calls = counting(monkeypatch)
        assert cache.read_cached(folder) == first and len(calls) == 1, changed
        monkeypatch.undo()
    assert cache.load(folder, cache.fingerprint(folder)) == first


def test_ctrl_c_in_a_pool_removes_what_workers_left_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers stopped between writing an entry and renaming it leave no temporary file."""
    import signal
    import threading
    import time
    import types

    from mindspeed_prof.analysis import parallel

    events = [
        {"ph": "X", "cat": "stage", "name": "s", "ts": i, "dur": 1, "pid": 1, "tid": 1}
        for i in range(200)
    ]
    paths = []
    for rank in range(3):
        paths.append(tmp_path / f"rank{rank}_h_1_step1.mstx.trace.json")
        paths[-1].write_text(json.dumps({"traceEvents": events}))

    class StuckOs(types.SimpleNamespace):
        """``os`` for the workers (forked): the write done, the rename never."""

        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        @staticmethod
        def replace(*_: object) -> None:
            time.sleep(60)

    monkeypatch.setattr(jsonio, "os", StuckOs())
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 0)

    seen: list[Path] = []

    def ctrl_c_once_written() -> None:
        deadline = time.monotonic() + 30
        while not seen and time.monotonic() < deadline:
            seen.extend(tmp_path.glob(".*.tmp"))
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c_once_written, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        parallel.read_all(paths, tmp_path, jobs=2)
    assert seen  # the interrupt came while a worker held a temporary file
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_value_msgpack_cannot_hold_is_named(capture: Path) -> None:
    """``encode`` names the type it cannot hold (the pool then sends a pickle instead)."""
    data = read(capture)
    data.meta.host = 1j  # type: ignore[assignment]
    with pytest.raises(NotImplementedError, match=r"^cannot cache complex$"):
        cache.encode(data)


def test_a_capture_in_the_root_given_as_dot_is_grouped_as_dot(
    capture: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root reaches the reader: a capture lying directly in ``.`` has group ``.``, where
    without a root its folder's name is empty."""
    monkeypatch.chdir(capture.parent)
    data = cache.read_cached(Path(capture.name), Path("."))
    assert data.group == "."
    no_reading(monkeypatch)
    assert cache.read_cached(Path(capture.name), Path(".")).group == "."  # from the entry


def test_discard_partial_removes_only_this_captures_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``.<name>.analysis-cache.<pid>.tmp`` of this capture goes (a name holding glob
    characters included); one another process removed first is no error."""
    capture = tmp_path / "rank[0]_x.pt.trace.json"
    entry = cache.cache_path(capture)
    mine = [entry.with_name(f"{entry.name}.{pid}.tmp") for pid in (11, 12, 13)]
    kept = [
        entry,
        tmp_path / ".rank0_x.pt.trace.json.analysis-cache.11.tmp",
        tmp_path / f"{entry.name}.tmp",
        tmp_path / "other.11.tmp",
    ]
    for p in mine + kept:
        p.write_bytes(b"x")
    gone = mine[1]
    real = Path.glob

    def glob(self: Path, pattern: str) -> Iterator[Path]:
        for p in real(self, pattern):
            if p == gone:
                p.unlink()  # another process's cleanup got there first
            yield p

    monkeypatch.setattr(Path, "glob", glob)
    cache.discard_partial(capture)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in kept)


def test_ranges_are_stored_as_columns_and_come_back_the_same(capture: Path) -> None:
    """Any mix of unknown ranks, steps and bare times, sources and threads comes back as it
    went in, as columns (``RangeTable``), a list of ranges too."""
    data = read(capture)
    want = [
        Range(None, "step", "ProfilerStep#3", 3, 1.5e15, 10.0),
        Range(2, "stage", "rollout", None, -0.0, 0.125, source="h\u00e9", tid="7", bare=0.0),
        Range(2, "range", "x", 2**62, 1e-300, float("inf"), tid="7", bare=2.5),
    ]
    data.ranges = want
    back = cache.decode(cache.encode(data))
    assert isinstance(back.ranges, RangeTable)
    assert list(back.ranges) == want
    assert [tuple(map(type, r)) for r in back.ranges] == [tuple(map(type, r)) for r in want]
    assert str(back.ranges[1].ts) == "-0.0"


@pytest.mark.parametrize("fault", ["label past the names", "columns of two lengths"])
def test_an_entry_whose_range_columns_do_not_fit_is_read_again(
    capture: Path, fault: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry whose checksum holds but whose columns do not fit together (as a writer of
    another layout could leave) is not served: the capture is read again."""
    data = read(capture)
    bad = RangeTable()
    bad.add(0, "step", "ProfilerStep#1", 1, 1.0, 2.0)
    if fault == "label past the names":
        bad.label[0] = 5
    else:
        bad.ts.append(3.0)
    data.ranges = bad
    key = cache.fingerprint(capture)
    assert key is not None
    cache.store(capture, key, data)
    assert cache.cache_path(capture).exists()
    assert cache.load(capture, key) is None
    calls = counting(monkeypatch)
    assert list(cache.read_cached(capture).ranges) == list(read(capture).ranges)
    assert len(calls) == 1
