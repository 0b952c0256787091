"""Memory: peaks, per-stage peaks, top allocating operators and a timeline, from torch's captures.

Two sources here (a trace's ``[memory]`` events are ``memory_facts``'): torch's memory
timeline (``*.memory_timeline.json.gz``, CPU) and an allocator snapshot
(``*.memory_snapshot.pickle``, or any pickle ``sniff`` finds to be one, whatever its name:
``torch.cuda.memory._snapshot()`` or torch_npu's, pickled). A snapshot is read with an
unpickler that refuses every class and function, so only plain containers and scalars can come
out of it.
"""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.readers.labels import one_line
from mindspeed_prof.analysis.readers.memory_facts import by_stage, thin, top
from mindspeed_prof.analysis.readers.model import (
    MAX_BYTES,
    BadFile,
    Memory,
    Range,
    Tally,
    tally,
)
from mindspeed_prof.analysis.readers.sniff import SNAPSHOT, kind_of
from mindspeed_prof.analysis.readers.stream import open_bytes
from mindspeed_prof.formats import MEMORY_SNAPSHOT, MEMORY_TIMELINE

__all__ = ["is_memory_file", "is_memory_name", "load_snapshot", "read_memory"]

_PLAIN = frozenset(
    {
        "set",
        "frozenset",
        "list",
        "dict",
        "tuple",
        "int",
        "float",
        "str",
        "bytes",
        "bool",
        "complex",
        "bytearray",
    }
)


def is_memory_file(path: Path) -> bool:
    """A memory file: named as ours, or an allocator snapshot by content."""
    return is_memory_name(path.name) or _is_snapshot(path)


def is_memory_name(name: str) -> bool:
    """Named as our memory files are."""
    return name.endswith((MEMORY_TIMELINE, MEMORY_SNAPSHOT))


def _is_snapshot(path: Path) -> bool:
    return path.name.endswith(MEMORY_SNAPSHOT) or (path.is_file() and kind_of(path) == SNAPSHOT)


class _PlainUnpickler(pickle.Unpickler):
    """Builds only what pickle's own opcodes build; every global lookup is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if module in ("builtins", "__builtin__") and name in _PLAIN:  # __builtin__: protocol 2
            return getattr(__import__("builtins"), name)
        raise pickle.UnpicklingError(
            f"refused {module}.{name}: only plain containers and scalars are read from a snapshot"
        )


def load_snapshot(raw: bytes) -> Any:
    """Unpickle ``raw`` admitting nothing but plain containers and scalars."""
    return _PlainUnpickler(io.BytesIO(raw)).load()


def _read_bytes(path: Path) -> bytes:
    with open_bytes(path) as f:
        raw = f.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise BadFile(f"{path}: more than {MAX_BYTES} bytes; refused")
    return raw


def _timeline(path: Path, ranges: list[Range]) -> Memory:
    doc = json.loads(_read_bytes(path))
    if not (
        isinstance(doc, list)
        and len(doc) == 2
        and all(isinstance(x, list) for x in doc)
        and len(doc[0]) == len(doc[1])
    ):
        raise BadFile(f"{path}: not a memory timeline (expected [times, sizes by category])")
    points = sorted((float(t), float(sum(s))) for t, s in zip(*doc) if t >= 0)
    return Memory(
        source="timeline",
        peak_allocated_bytes=max((p[1] for p in points), default=None),
        by_stage=by_stage(points, ranges),
        timeline=thin(points),
    )


def _frame(frames: Any) -> str | None:
    """The innermost frame outside torch: ``name (file.py:line)``."""
    for f in frames if isinstance(frames, list) else []:
        name = f.get("filename") if isinstance(f, dict) else None
        if isinstance(name, str) and name.endswith(".py") and "/torch/" not in name:
            return f"{f.get('name')} ({Path(name).name}:{f.get('line')})"
    return None


def _snapshot(path: Path) -> Memory:
    snap = load_snapshot(_read_bytes(path))
    if not isinstance(snap, dict) or not isinstance(snap.get("segments"), list):
        raise BadFile(f"{path}: not a CUDA memory snapshot (no 'segments' list)")
    segments = [s for s in snap["segments"] if isinstance(s, dict)]
    allocated = float(sum(s.get("allocated_size", 0) for s in segments))
    reserved = float(sum(s.get("total_size", 0) for s in segments))
    peak_a, peak_r = allocated, reserved
    points: list[tuple[float, float]] = []
    allocs: dict[str, Tally] = {}
    traces = snap.get("device_traces") or []
    events = [e for dev in traces if isinstance(dev, list) for e in dev if isinstance(e, dict)]
    for e in reversed(events):  # walk back from the state at the dump
        action, size = e.get("action"), float(e.get("size") or 0)
        points.append((float(e.get("time_us") or 0), allocated))
        if action == "alloc":
            allocated -= size
            where = _frame(e.get("frames"))
            if where:
                tally(allocs, where, 1, size)
        elif action == "free_completed":
            allocated += size
        elif action in ("segment_alloc", "segment_map"):
            reserved -= size
        elif action in ("segment_free", "segment_unmap"):
            reserved += size
        peak_a, peak_r = max(peak_a, allocated), max(peak_r, reserved)
    points.reverse()
    return Memory(
        source="snapshot",
        peak_allocated_bytes=peak_a,
        peak_reserved_bytes=peak_r,
        top_ops=top(allocs),
        timeline=thin(points),
    )


def read_memory(path: Path, ranges: list[Range] | None = None) -> Memory:
    """Memory facts of a timeline or snapshot file; ``BadFile`` (one line) when unreadable."""
    try:
        if _is_snapshot(path):
            return _snapshot(path)
        return _timeline(path, ranges or [])
    except BadFile:
        raise
    except (
        OSError,
        EOFError,
        ValueError,
        TypeError,
        pickle.UnpicklingError,
        IndexError,
        RecursionError,
        MemoryError,
    ) as err:
        raise BadFile(
            f"{path}: unreadable memory file ({type(err).__name__}: {one_line(err)})"
        ) from None
