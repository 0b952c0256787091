"""Readers: every capture kind below a path, decoded into ranges, op times and device facts.

What a file is comes from its content (``sniff``), whatever its name. Three families of
captures: ``kineto`` (``chrome``: torch/Kineto traces and range files ``*.mstx.trace.json``;
``sqlite``: ``*.pt.trace.db``; ``memory``: allocator snapshots, memory timelines), ``npu``
(``folder``: torch_npu ``*_ascend_pt`` folders and single files of their output; ``msprof``:
CANN msprof export folders; ``text``/``trace``/``busy`` for the text export, ``db`` for the db
export) and ``generic`` (other tools' Chrome traces, their RL phases read as our stages by
``phases``). They read through the shared modules here: ``fold`` (events into a ``TraceData``,
``model``), ``device`` (the device breakdown), ``ranks`` (manifest ranks, captures that claim
the same rank and step), ``missing`` (device activity a capture says happened and did not
record), ``labels``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.readers.generic.owner import folder_rank
from mindspeed_prof.analysis.readers.kineto.memory import is_memory_file, is_memory_name
from mindspeed_prof.analysis.readers.labels import one_line
from mindspeed_prof.analysis.readers.missing import mark_missing
from mindspeed_prof.analysis.readers.model import MAX_BYTES, BadFile, Range, TraceData
from mindspeed_prof.analysis.readers.ranks import manifest_rank, separate
from mindspeed_prof.analysis.readers.sniff import (
    CHROME,
    NOT_READ,
    NPU_KINDS,
    SNAPSHOT,
    TORCH_DB,
    TRACE,
    TRACE_LIST,
    is_msprof,
    kind_of,
    unreadable,
)
from mindspeed_prof.formats import (
    ANALYSIS,
    CLUSTER_SUMMARY,
    MANIFEST,
    MSPROF_OUTPUT,
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
    "read",
    "separate",
    "survey",
]

_OURS = (SUMMARY, CLUSTER_SUMMARY, SWEEP_SUMMARY, ANALYSIS)
_MANIFEST_PREFIX = MANIFEST.split(".")[0]
#: Kinds read as a capture of their own (``sniff``'s); memory files are joined to captures.
CAPTURE_KINDS = frozenset({TRACE, TRACE_LIST, CHROME, TORCH_DB, *NPU_KINDS})
_CAPTURE, _MEMORY = "capture", "memory"


def _kind(p: Path) -> str | None:
    """A capture, a memory file or neither (None), for a file found below a root: our own
    names without looking; our summaries, manifests and hidden files never; else by content."""
    name = p.name
    if is_capture_file(name):
        return _CAPTURE
    if name.startswith((".", _MANIFEST_PREFIX)) or name.endswith(_OURS):
        return None
    if is_memory_name(name):
        return _MEMORY
    kind = kind_of(p)
    return _MEMORY if kind == SNAPSHOT else _CAPTURE if kind in CAPTURE_KINDS else None


def survey(root: Path) -> tuple[list[Path], list[Path]]:
    """The captures below ``root`` and its memory files (allocator snapshots, memory
    timelines), each sorted. Captures: our capture files, Chrome traces and torch_npu output
    files by content (``sniff``), whatever their names; ``*_ascend_pt`` folders, any folder
    holding an ``ASCEND_PROFILER_OUTPUT`` and any msprof export (a folder holding
    ``mindstudio_profiler_output``), also when that is the root, read whole."""
    root = Path(root)
    if root.is_file():
        return ([], [root]) if is_memory_file(root) else ([root], [])
    if not root.is_dir():
        raise BadFile(f"{root}: no such file or directory")
    if root.name.endswith(NPU_FOLDER) or is_msprof(root):
        return [root], []
    if root.name in (NPU_OUTPUT, MSPROF_OUTPUT):  # a capture's output: the capture
        return [root.parent], []
    found: dict[str, set[Path]] = {_CAPTURE: set(), _MEMORY: set()}
    msprof = {p.parent for p in root.rglob(MSPROF_OUTPUT) if p.is_dir()}
    found[_CAPTURE].update(
        p for p in msprof if not any(part.endswith(NPU_FOLDER) for part in p.parts)
    )
    for p in root.rglob("*"):
        parts = p.relative_to(root).parts
        if any(part.endswith(NPU_FOLDER) for part in parts[:-1]):
            continue  # inside a torch_npu capture: read with its folder
        if any(parent in msprof for parent in p.parents):
            continue  # inside an msprof export: read with its folder
        if p.is_dir():
            if p.name.endswith(NPU_FOLDER):
                found[_CAPTURE].add(p)
            elif p.name == NPU_OUTPUT and not p.parent.name.endswith(NPU_FOLDER):
                found[_CAPTURE].add(p.parent)
        elif p.is_file() and NPU_OUTPUT not in parts:
            kind = _kind(p)
            if kind is not None:
                found[kind].add(p)
    return sorted(found[_CAPTURE]), sorted(found[_MEMORY])


def discover(root: Path) -> Iterator[Path]:
    """Every capture below ``root``, sorted (``survey``'s captures)."""
    yield from survey(root)[0]


def read(path: Path, root: Path | None = None, comm_kernels: str = "") -> TraceData:
    """Decode one capture; raise ``BadFile`` with one line naming it when it cannot be read.

    A capture whose own content names no rank takes its manifest's (``ranks.manifest_rank``),
    else the one a folder above it names (``rank_3/``); failing that its rank stays unknown
    (None). ``comm_kernels``: the user's pattern of
    communication kernels (``readers.classify``).
    """
    path = Path(path)
    data = _read(path, _group(path, root), comm_kernels, root)
    if data.rank is None:
        rank = manifest_rank(path)
        if rank is None and not any(r.rank is not None for r in data.ranges):
            rank = folder_rank(path, root)
        if rank is not None:
            data.rank = rank
            data.ranges = [r._replace(rank=rank) for r in data.ranges]
    if not data.source and data.meta.host:
        data.source = data.meta.host
    mark_missing(data)
    return data


def _read(path: Path, group: str, comm_kernels: str, root: Path | None) -> TraceData:
    # the readers (and numpy, sqlite3) are imported when a capture needs them, not at start
    try:
        if path.is_dir():
            return _read_folder(path, group)
        size = path.stat().st_size
        if size == 0:
            raise BadFile(f"{path}: empty file")
        return _read_file(path, group, size, comm_kernels, root)
    except BadFile:
        raise
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise BadFile(f"{path}: not a Chrome trace ({one_line(err)})") from None
    except RecursionError:
        raise BadFile(f"{path}: nested too deeply to be a trace") from None
    except unreadable() as err:  # a UnicodeDecodeError is a ValueError
        raise BadFile(f"{path}: unreadable ({type(err).__name__}: {one_line(err)})") from None


def _read_folder(path: Path, group: str) -> TraceData:
    if is_msprof(path):
        from mindspeed_prof.analysis.readers.npu.msprof import read_msprof

        return read_msprof(path, group)
    from mindspeed_prof.analysis.readers.npu.folder import read_npu

    return read_npu(path, group)


def _read_file(
    path: Path, group: str, size: int, comm_kernels: str, root: Path | None = None
) -> TraceData:
    """By what the file is (``sniff``); a kind recognised and not read is named so; a file not
    recognised is read as its name says (a ``.db`` as ours, else as a Chrome trace), which
    names what is wrong with it."""
    kind = kind_of(path)
    if kind in NOT_READ:
        raise BadFile(f"{path}: {NOT_READ[kind]}; not read")
    if kind in NPU_KINDS or (kind in (TRACE_LIST, CHROME) and _ascend_trace(path)):
        from mindspeed_prof.analysis.readers.npu.folder import TRACE_VIEW, read_npu_file

        return read_npu_file(path, kind if kind in NPU_KINDS else TRACE_VIEW, group)
    if kind == CHROME and not is_capture_file(path.name):
        from mindspeed_prof.analysis.readers.generic.read import read_generic

        return read_generic(path, group, size, root)
    if kind == TORCH_DB or (kind is None and path.name.endswith(".db")):
        from mindspeed_prof.analysis.readers.kineto.sqlite import read_db

        return read_db(path, group, size)
    from mindspeed_prof.analysis.readers.kineto.chrome import read_json

    return read_json(path, group, size, comm_kernels)


def _ascend_trace(path: Path) -> bool:
    """``npu.trace.ascend_trace``, its reader imported only for a file that may be one."""
    from mindspeed_prof.analysis.readers.npu.trace import ascend_trace

    return ascend_trace(path)


def _group(path: Path, root: Path | None) -> str:
    parent = path.parent
    if root is not None and Path(root).is_dir() and parent.resolve() == Path(root).resolve():
        return parent.name or "."
    return parent.name
