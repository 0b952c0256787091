"""Readers: every capture kind below a path, decoded into ranges, op times and device facts.

One module per source: ``chrome`` (torch/Kineto traces ``*.pt.trace.json[.gz]`` and range files
``*.mstx.trace.json``), ``sqlite`` (``*.pt.trace.db``), ``npu`` (torch_npu ``*_ascend_pt``
folders, text or db output).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.readers.chrome import read_json
from mindspeed_prof.analysis.readers.model import (
    MAX_BYTES,
    BadFile,
    Range,
    TraceData,
    one_line,
)
from mindspeed_prof.analysis.readers.npu import read_npu
from mindspeed_prof.analysis.readers.sqlite import read_db
from mindspeed_prof.formats import NPU_FOLDER, is_capture_file

__all__ = ["BadFile", "MAX_BYTES", "Range", "TraceData", "discover", "read"]


def discover(root: Path) -> Iterator[Path]:
    """Every capture below ``root`` (a capture file, or a ``*_ascend_pt`` folder), sorted."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise BadFile(f"{root}: no such file or directory")
    found: list[Path] = []
    for p in root.rglob("*"):
        name = p.name
        if p.is_dir() and name.endswith(NPU_FOLDER):
            found.append(p)
        elif p.is_file() and not any(part.endswith(NPU_FOLDER) for part in p.parts) and (
                is_capture_file(name)):
            found.append(p)
    yield from sorted(found)


def read(path: Path, root: Path | None = None) -> TraceData:
    """Decode one capture; raise ``BadFile`` with one line naming it when it cannot be read."""
    path = Path(path)
    group = _group(path, root)
    try:
        if path.is_dir():
            return read_npu(path, group)
        size = path.stat().st_size
        if size == 0:
            raise BadFile(f"{path}: empty file")
        if size > MAX_BYTES:
            raise BadFile(f"{path}: {size} bytes, over the {MAX_BYTES}-byte limit")
        if path.name.endswith(".db"):
            return read_db(path, group, size)
        return read_json(path, group, size)
    except BadFile:
        raise
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise BadFile(f"{path}: not a Chrome trace ({one_line(err)})") from None
    except RecursionError:
        raise BadFile(f"{path}: nested too deeply to be a trace") from None
    except (OSError, EOFError, UnicodeDecodeError, sqlite3.Error, ValueError) as err:
        raise BadFile(f"{path}: unreadable ({type(err).__name__}: {one_line(err)})") from None


def _group(path: Path, root: Path | None) -> str:
    parent = path.parent
    if root is not None and Path(root).is_dir() and parent.resolve() == Path(root).resolve():
        return parent.name or "."
    return parent.name


