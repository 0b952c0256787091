"""``backend: torch`` on CPU: conformance suite plus level, db and memory behaviour."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import torch

from mindspeed_prof.capture.backends.torch import TorchBackend
from mindspeed_prof.testing.backend_suite import BackendConformance


class TestTorchBackend(BackendConformance):
    backend_cls = TorchBackend

    def work(self, backend: Any, name: str = "work") -> None:
        super().work(backend, name)
        torch.randn(8, 8) @ torch.randn(8, 8)


class TestTorchBackendLevelNone(TestTorchBackend):
    def make_config(self, **fields: Any):
        return super().make_config(profile_level="level_none", **fields)


def capture(tmp_path: Path, repeat: int = 1, **fields: Any) -> list[Path]:
    suite = TestTorchBackend()
    backend = suite.make_backend(**fields)
    backend.start(suite.target(tmp_path))
    with backend.sinks()[-1].range("region"):
        for _ in range(repeat):
            (torch.randn(32, 32, requires_grad=True) @ torch.randn(32, 32)).sum().backward()
    return [Path(p) for p in backend.stop()]


def ops(path: Path) -> list[dict[str, Any]]:
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cpu_op"]


def test_level_none_starts_no_torch_profiler(tmp_path: Path) -> None:
    files = capture(tmp_path, profile_level="level_none")
    assert [f.name.split(".", 1)[1] for f in files] == ["mstx.trace.json"]


def test_level0_records_ops_and_annotation(tmp_path: Path) -> None:
    files = capture(tmp_path, profile_level="level0", mstx=False)
    (trace,) = [f for f in files if f.name.endswith(".pt.trace.json")]
    data = json.loads(trace.read_text())
    assert any(e["name"] == "aten::mm" for e in ops(trace))
    assert any(e["name"] == "region" and e["cat"] == "user_annotation" for e in data["traceEvents"])
    assert data["distributedInfo"] == {"rank": 0}
    assert all("Input Dims" not in e.get("args", {}) for e in ops(trace))


def test_shapes_follow_config(tmp_path: Path) -> None:
    files = capture(tmp_path, profile_level="level1", profile_record_shapes=True, mstx=False)
    mm = [e for e in ops(files[0]) if e["name"] == "aten::mm"]
    assert mm and all("Input Dims" in e["args"] for e in mm)


def test_db_export_is_sqlite_and_smaller(tmp_path: Path) -> None:
    text = capture(tmp_path / "t", repeat=50, profile_level="level1", mstx=False)
    db = capture(
        tmp_path / "d", repeat=50, profile_level="level1", mstx=False, profile_export_type="db"
    )
    (db_file,) = db
    assert db_file.name.endswith(".pt.trace.db")
    con = sqlite3.connect(db_file)
    n_db = con.execute("SELECT count(*) FROM events").fetchone()[0]
    assert n_db == len(json.loads(text[0].read_text())["traceEvents"])
    assert db_file.stat().st_size < 0.5 * text[0].stat().st_size


def test_memory_timeline_on_cpu(tmp_path: Path) -> None:
    files = capture(
        tmp_path,
        profile_level="level1",
        profile_with_memory=True,
        profile_record_shapes=True,
        with_stack=True,
    )
    assert any(f.name.endswith(".memory_timeline.json.gz") for f in files)


def test_no_activity_falls_back_to_spans(tmp_path: Path) -> None:
    files = capture(tmp_path, profile_with_cpu=False, profile_with_npu=False, mstx=True)
    assert [f.name.endswith(".mstx.trace.json") for f in files] == [True]


def test_cuda_memory_history_takes_verls_settings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """profile_with_memory on CUDA: the allocator history kept as trace_alloc_max_entries
    says, and stack_depth passed where torch's _record_memory_history takes it."""
    import torch

    calls: list[dict] = []

    def record(enabled: object = "all", max_entries: int = 0) -> None:
        calls.append({"enabled": enabled, "max_entries": max_entries})

    def record_deep(enabled: object = "all", max_entries: int = 0, stack_depth: int = 0) -> None:
        calls.append({"enabled": enabled, "max_entries": max_entries, "stack_depth": stack_depth})

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda.memory, "_dump_snapshot", lambda path: Path(path).write_bytes(b"snapshot")
    )
    suite = TestTorchBackend()
    for fn, expected in (
        (record, {"max_entries": 7}),
        (record_deep, {"max_entries": 7, "stack_depth": 5}),
    ):
        monkeypatch.setattr(torch.cuda.memory, "_record_memory_history", fn)
        calls.clear()
        backend = suite.make_backend(
            profile_with_memory=True,
            profile_level="level_none",
            trace_alloc_max_entries=7,
            stack_depth=5,
        )
        backend.start(suite.target(tmp_path / fn.__name__))
        files = backend.stop()
        assert calls[0] == {"enabled": "all", **expected} and calls[1]["enabled"] is None
        assert any(str(f).endswith(".memory_snapshot.pickle") for f in files)


def test_device_activity_without_an_accelerator_is_the_hosts_operators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mstx_light turns host activity off; a level asked for on top of it (a preset, an
    on-demand request) must still record operators on a machine whose device is the host."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    files = capture(
        tmp_path, profile_with_cpu=False, profile_with_npu=True, profile_level="level1", mstx=True
    )
    (trace,) = [f for f in files if f.name.endswith(".pt.trace.json")]
    assert any(e["name"] == "aten::mm" for e in ops(trace))


# -- a full disk while a capture's memory files are written: nothing half-written is left ----
def _full_disk(path: Path) -> None:
    path.write_bytes(b"half of a file")
    raise OSError(28, "No space left on device")


def test_a_memory_timeline_that_cannot_be_written_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's export fails half-way, or the gzip copy does: no file is left under any name."""
    import gzip as gzip_module

    from mindspeed_prof.capture.backends import torch as torch_backend

    suite = TestTorchBackend()
    backend = suite.make_backend(profile_with_memory=True)
    assert isinstance(backend, TorchBackend)
    target = suite.target(tmp_path)
    target.directory.mkdir(parents=True)

    class Prof:
        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def export_memory_timeline(self, path: str, device: str) -> None:
            if self.fail:
                _full_disk(Path(path))
            Path(path).write_text("{}")

    with pytest.raises(OSError, match="No space"):
        backend._memory_timeline(Prof(fail=True), target)
    assert list(target.directory.iterdir()) == []

    def gzip_full(path: Any, mode: str) -> Any:
        _full_disk(Path(path))

    monkeypatch.setattr(torch_backend, "gzip", type("G", (), {"open": staticmethod(gzip_full)}))
    with pytest.raises(OSError, match="No space"):
        backend._memory_timeline(Prof(fail=False), target)
    assert list(target.directory.iterdir()) == []
    monkeypatch.setattr(torch_backend, "gzip", gzip_module)
    path = backend._memory_timeline(Prof(fail=False), target)
    assert [p.name for p in target.directory.iterdir()] == [path.name]
    assert gzip_module.decompress(path.read_bytes()) == b"{}"


def test_a_cuda_memory_snapshot_that_cannot_be_written_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot fails half-way: nothing is left, and the allocator history is still
    turned off."""
    history: list[object] = []
    monkeypatch.setattr(torch.cuda.memory, "_dump_snapshot", lambda path: _full_disk(Path(path)))
    monkeypatch.setattr(
        torch.cuda.memory,
        "_record_memory_history",
        lambda enabled="all", **kw: history.append(enabled),
    )
    suite = TestTorchBackend()
    backend = suite.make_backend(profile_with_memory=True)
    assert isinstance(backend, TorchBackend)
    target = suite.target(tmp_path)
    target.directory.mkdir(parents=True)
    with pytest.raises(OSError, match="No space"):
        backend._dump_snapshot(target)
    assert list(target.directory.iterdir()) == [] and history == [None]
