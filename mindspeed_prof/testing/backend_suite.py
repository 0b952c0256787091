"""Conformance suite every capture backend's tests subclass (as Hydra does for its plugins).

Subclasses set ``backend_cls`` and may override ``make_config`` and ``load`` (how to check
that a written capture is readable).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import ClassVar

import pytest

from mindspeed_prof.capture.backends import Backend, CaptureTarget
from mindspeed_prof.capture.plan import Capture
from mindspeed_prof.config.schema import IntegratedConfig
from mindspeed_prof.config.validate import validate
from mindspeed_prof.formats.header import CaptureHeader

__all__ = ["BackendConformance"]


class BackendConformance:
    backend_cls: ClassVar[type[Backend]]

    def make_config(self, **fields: object) -> IntegratedConfig:
        return validate({"profile": True, "mstx": True, **fields})

    def make_backend(self, **fields: object) -> Backend:
        return self.backend_cls(self.make_config(**fields))

    def target(self, root: Path, step: int = 1, rank: int = 0, stage: str = "all") -> CaptureTarget:
        return CaptureTarget(
            root / "integrated",
            f"rank{rank}_host_{os.getpid()}_step{step}",
            rank,
            "integrated",
            Capture(stage, step),
            CaptureHeader(rank=rank, stage=stage, step=step),
        )

    def load(self, path: Path) -> None:
        """Fail unless ``path`` (a file or folder the backend returned) is a readable capture."""
        if path.is_file() and path.name.endswith(".json"):
            with open(path) as f:
                assert "traceEvents" in json.load(f)
        else:
            assert path.exists()

    def work(self, backend: Backend, name: str = "work") -> None:
        for sink in backend.sinks():
            with sink.range(name):
                sum(range(1000))
            sink.mark(name + "_mark")

    def test_start_stop_writes_readable_files_under_target(self, tmp_path: Path) -> None:
        backend = self.make_backend()
        target = self.target(tmp_path)
        backend.start(target)
        self.work(backend)
        files = backend.stop()
        assert files, "a capture must write at least one file"
        for f in files:
            assert Path(f).parent == target.directory
            assert Path(f).name.startswith(target.stem)
            self.load(Path(f))

    def test_stop_without_start_writes_nothing(self, tmp_path: Path) -> None:
        assert self.make_backend().stop() == []
        assert not any(tmp_path.iterdir())

    def test_consecutive_captures_write_distinct_files(self, tmp_path: Path) -> None:
        backend = self.make_backend()
        written: list[Path] = []
        for step in (1, 2):
            backend.start(self.target(tmp_path, step=step))
            self.work(backend)
            written += [Path(f) for f in backend.stop()]
        assert len(set(written)) == len(written) >= 2

    def test_no_sinks_after_stop(self, tmp_path: Path) -> None:
        backend = self.make_backend()
        backend.start(self.target(tmp_path))
        backend.stop()
        assert backend.sinks() == []

    def test_ranges_never_raise_for_odd_names(self, tmp_path: Path) -> None:
        backend = self.make_backend()
        backend.start(self.target(tmp_path))
        for name in ("<script>alert(1)</script>", "naïve ünicode", 'quote"s', "a" * 500):
            self.work(backend, name)
        for f in backend.stop():
            self.load(Path(f))

    @pytest.mark.parametrize("rank", [0, 3])
    def test_rank_in_file_names(self, tmp_path: Path, rank: int) -> None:
        backend = self.make_backend()
        backend.start(self.target(tmp_path, rank=rank))
        self.work(backend)
        for f in backend.stop():
            assert f"rank{rank}_" in Path(f).name
