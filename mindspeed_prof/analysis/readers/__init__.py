"""Readers: every capture kind below a path, decoded into ranges, op times and device facts.

One module per source: ``chrome`` (torch/Kineto traces, whatever their name, and range files
``*.mstx.trace.json``), ``sqlite`` (``*.pt.trace.db``), ``npu`` (torch_npu ``*_ascend_pt``
folders: ``npu_text``/``npu_trace`` for the text export, ``npu_db`` for the db export),
``ranks`` (manifest ranks, captures that claim the same rank and step).
"""

from __future__ import annotations

import gzip
import sqlite3
import zlib
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
from mindspeed_prof.analysis.readers.ranks import manifest_rank, separate
from mindspeed_prof.analysis.readers.sqlite import read_db
from mindspeed_prof.formats import (
    ANALYSIS,
    CLUSTER_SUMMARY,
    MANIFEST,
    NPU_FOLDER,
    NPU_OUTPUT,
    SUMMARY,
    SWEEP_SUMMARY,
    is_capture_file,
)

__all__ = [
    "MAX_BYTES",
    "BadFile",
    "Range",
    "TraceData",
    "discover",
    "is_chrome_trace",
    "read",
    "separate",
]

#: How much of a ``*.json[.gz]`` file is read to decide whether it is a Chrome trace.
SNIFF_BYTES = 16 * 1024
_OURS = (SUMMARY, CLUSTER_SUMMARY, SWEEP_SUMMARY, ANALYSIS)
_MANIFEST_PREFIX = MANIFEST.split(".")[0]


def is_chrome_trace(path: Path) -> bool:
    """Whether a ``*.json``/``*.json.gz`` file opens as an object with ``traceEvents``.

    Reads at most ``SNIFF_BYTES`` (decompressed); Kineto writes a few small keys (schema,
    device properties, distributedInfo) before ``traceEvents``.
    """
    try:
        with (gzip.open if path.name.endswith(".gz") else open)(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        return False
    return head.lstrip().startswith(b"{") and b'"traceEvents"' in head


def _candidate(p: Path) -> bool:
    name = p.name
    if is_capture_file(name):
        return True
    if not name.endswith((".json", ".json.gz")) or name.startswith((".", _MANIFEST_PREFIX)):
        return False
    return not name.endswith(_OURS) and is_chrome_trace(p)


def discover(root: Path) -> Iterator[Path]:
    """Every capture below ``root``, sorted: capture files, Chrome traces by content,
    ``*_ascend_pt`` folders (and any folder holding an ``ASCEND_PROFILER_OUTPUT``)."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise BadFile(f"{root}: no such file or directory")
    if root.name.endswith(NPU_FOLDER):
        yield root
        return
    found: set[Path] = set()
    for p in root.rglob("*"):
        if any(part.endswith(NPU_FOLDER) for part in p.relative_to(root).parts[:-1]):
            continue  # inside a torch_npu capture: read with its folder
        if p.is_dir():
            if p.name.endswith(NPU_FOLDER):
                found.add(p)
            elif p.name == NPU_OUTPUT and not p.parent.name.endswith(NPU_FOLDER):
                found.add(p.parent)
        elif p.is_file() and NPU_OUTPUT not in p.parts and _candidate(p):
            found.add(p)
    yield from sorted(found)


def read(path: Path, root: Path | None = None, comm_kernels: str = "") -> TraceData:
    """Decode one capture; raise ``BadFile`` with one line naming it when it cannot be read.

    A capture whose own content names no rank takes its manifest's (``ranks.manifest_rank``);
    failing that its rank stays unknown (None). ``comm_kernels``: the user's pattern of
    communication kernels (``readers.classify``).
    """
    path = Path(path)
    data = _read(path, _group(path, root), comm_kernels)
    if data.rank is None:
        rank = manifest_rank(path)
        if rank is not None:
            data.rank = rank
            data.ranges = [r._replace(rank=rank) for r in data.ranges]
    if not data.source and isinstance(data.meta.get("host"), str):
        data.source = data.meta["host"]
    return data


def _read(path: Path, group: str, comm_kernels: str) -> TraceData:
    try:
        if path.is_dir():
            return read_npu(path, group)
        size = path.stat().st_size
        if size == 0:
            raise BadFile(f"{path}: empty file")
        if path.name.endswith(".db"):
            return read_db(path, group, size)
        return read_json(path, group, size, comm_kernels)
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
