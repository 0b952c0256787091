"""The per-capture cache: hits, misses on change, corrupt and foreign entries, atomic writes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from capture_fixtures import make_run

from mindspeed_prof.analysis import cache
from mindspeed_prof.analysis.readers import BadFile, Range, TraceData, discover, read
from mindspeed_prof.analysis.readers.model import Alloc, CommRow, DeviceRow, Memory, Tally


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
        not p.name.startswith(".") for p in discover(capture.parent))


def test_every_field_round_trips(capture: Path) -> None:
    """Fields are serialised generically: a field added to TraceData is cached with no edit."""
    data = read(capture)
    values = {"events": 7, "kernels": {"k": Tally(2, 3.5)}, "runtime": {"launch": Tally(1, 0.5)},
              "device": [DeviceRow(step=1, compute_ms=1.25, comm_ms=0.5, overlap_ms=0.25,
                                   idle_ms=0.0, comm_exposed_ms=0.25)],
              "comm": [CommRow(name="allreduce", kind="collective", step=None, count=2)],
              "memory": Memory(source="torch_npu", peak_allocated_bytes=2**40,
                               timeline=[[1.0, 5, 6]],
                               top_ops=[Alloc(op="mm", count=1, bytes=3, max_bytes=3)]),
              "meta": {"host": "h", "nested": {"a": [1, "b"]}}}
    for name, value in values.items():
        setattr(data, name, value)
    data.ranges.append(Range(0, "range", "odd \u00e9 \"name\"", None, 1.5, 0.25))
    back = cache.decode(cache.encode(data))
    assert back == data
    assert all(type(a) is type(b) for a, b in zip(back.ranges, data.ranges))
    assert isinstance(back.path, Path)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The reads from disk ``cache.read_cached`` makes from now on."""
    calls: list[object] = []
    real = cache.read

    def read(path: Path, root: Path | None = None) -> TraceData:
        calls.append((path, root))
        return real(path, root)

    monkeypatch.setattr(cache, "read", read)
    return calls


@pytest.mark.parametrize("change", ["rewritten", "truncated", "touched"])
def test_a_changed_capture_is_read_again(capture: Path, change: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
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
def test_a_corrupt_or_foreign_entry_is_ignored_and_rebuilt(capture: Path, entry: bytes | None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    good = cache.read_cached(capture)
    path = cache.cache_path(capture)
    if entry is None:  # an entry written by another analysis version
        monkeypatch.setattr(cache, "analysis_version", lambda: "another")
    else:
        path.write_bytes(entry)
    calls = counting(monkeypatch)
    assert cache.read_cached(capture) == good and len(calls) == 1
    assert cache.read_cached(capture) == good and len(calls) == 1  # rebuilt: a hit now


def test_an_interrupted_write_leaves_no_entry(capture: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt
    monkeypatch.setattr(cache.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        cache.read_cached(capture)
    assert sorted(p.name for p in capture.parent.iterdir() if p.name.startswith(".")) == []


def test_the_version_follows_the_source_that_decodes(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    package = tmp_path / "mindspeed_prof"
    files = ("analysis/readers/__init__.py", "analysis/readers/device.py", "config/schema.py",
             "formats/__init__.py", "formats/sqlite_trace.py")
    for name in files:
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(f"# {name}\n")
    real = cache.analysis_version()
    monkeypatch.setattr(cache.readers, "__file__", str(package / "analysis/readers/__init__.py"))
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
