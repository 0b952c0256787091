"""The real torch_npu captures, unpacked once per session (tests that modify one unpack a copy)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from npu_fixtures import unpack


@pytest.fixture(scope="session")
def npu(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``npu("text/rank0_ascend_pt")``: that capture, unpacked; do not modify it."""
    root = tmp_path_factory.mktemp("torch_npu")
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            done[name] = unpack(name, root / name)
        return done[name]

    return get
