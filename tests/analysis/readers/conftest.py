"""Real captures, unpacked once per session (tests that modify one unpack a copy): the torch_npu
fixtures (``npu``) and the corpus sets (``corpus_set``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import corpus
import npu_fixtures
import pytest


def _unpacked(root: Path, unpack: Callable[[str, Path], Path]) -> Callable[[str], Path]:
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            done[name] = unpack(name, root / name)
        return done[name]

    return get


@pytest.fixture(scope="session")
def npu(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``npu("text/rank0_ascend_pt")``: that capture, unpacked; do not modify it."""
    return _unpacked(tmp_path_factory.mktemp("torch_npu"), npu_fixtures.unpack)


@pytest.fixture(scope="session")
def corpus_set(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``corpus_set("npu_text_level1")``: that corpus set, unpacked; do not modify it."""
    return _unpacked(tmp_path_factory.mktemp("corpus"), corpus.unpack)
