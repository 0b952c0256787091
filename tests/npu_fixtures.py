"""Real torch_npu captures (tests/fixtures/torch_npu, see its README) unpacked for a test."""

from __future__ import annotations

import lzma
import shutil
from pathlib import Path

__all__ = ["FIXTURES", "copied", "unpack"]

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "torch_npu"


def unpack(name: str, dest: Path) -> Path:
    """Copy capture ``name`` (e.g. ``text/rank0_ascend_pt``) to ``dest``, ``*.xz`` expanded."""
    return copied(FIXTURES / name, dest)


def copied(src: Path, dest: Path) -> Path:
    """Copy the folder ``src`` (a fixture or a corpus set) to ``dest``, ``*.xz`` expanded."""
    shutil.copytree(src, dest)
    for packed in dest.rglob("*.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    return dest
