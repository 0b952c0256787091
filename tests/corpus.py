"""The real capture sets of ``tests/fixtures/corpus`` (``sets.json``; sources in SOURCES.md),
unpacked for a test: each set copied whole, its ``*.xz`` files expanded.

A set marked ``pending`` in sets.json is one the readers do not yet read right (the field names
the issue and what goes wrong); the corpus-wide tests leave it out until that is fixed and the
mark removed."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path
from typing import Any

__all__ = ["CORPUS", "SETS", "npu_sets", "pending", "unpack"]

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
SETS: dict[str, dict[str, Any]] = {
    s["name"]: s for s in json.loads((CORPUS / "sets.json").read_text(encoding="utf-8"))
}


def pending() -> set[str]:
    """The sets (their folders) that the corpus-wide tests leave out: ``pending`` in sets.json."""
    return {s["path"] for s in SETS.values() if "pending" in s}


def npu_sets() -> list[str]:
    """Every torch_npu set (text and db exports) not pending, in sets.json's order."""
    return [name for name, s in SETS.items() if s["kind"].startswith("npu") and "pending" not in s]


def unpack(name: str, dest: Path) -> Path:
    """Set ``name`` copied to ``dest`` (which must not exist), ``*.xz`` expanded; ``dest``."""
    shutil.copytree(CORPUS / SETS[name]["path"], dest)
    for packed in dest.rglob("*.xz"):
        packed.with_suffix("").write_bytes(lzma.decompress(packed.read_bytes()))
        packed.unlink()
    return dest
