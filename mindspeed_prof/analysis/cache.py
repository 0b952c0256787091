"""Per-capture analysis results cached next to each capture, keyed by size, mtime and version."""

from __future__ import annotations

import functools
import glob
import hashlib
import os
from pathlib import Path
from typing import Any

import msgspec

from mindspeed_prof.analysis import readers
from mindspeed_prof.analysis.readers import TraceData, read
from mindspeed_prof.formats import CACHE

__all__ = ["Stamp", "analysis_version", "cache_path", "decode", "discard_partial", "encode",
           "load", "read_cached", "stamp", "store"]

#: Bump when the entry layout changes; reader changes are caught by ``analysis_version``.
FORMAT = 2

Stamp = tuple[int, int]  # (bytes, newest mtime in ns)


class _Entry(msgspec.Struct):
    version: str
    stamp: Stamp
    data: msgspec.Raw


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    raise NotImplementedError(f"cannot cache {type(obj).__name__}")


def _dec_hook(kind: type, obj: Any) -> Any:
    if kind is Path:
        return Path(obj)
    raise NotImplementedError(f"cannot decode {kind}")


_encoder = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
_entry = msgspec.msgpack.Decoder(_Entry)
_data = msgspec.msgpack.Decoder(TraceData, dec_hook=_dec_hook)


def encode(data: TraceData) -> bytes:
    """``data`` as msgpack, every field included (also how workers send results back)."""
    return _encoder.encode(data)


def decode(raw: bytes | msgspec.Raw) -> TraceData:
    return _data.decode(raw)


@functools.lru_cache(maxsize=1)
def analysis_version() -> str:
    """A digest of the source that decides what a capture decodes to (the readers, the analysis
    modules they call, the stage names, file names): any change to it retires old entries."""
    digest = hashlib.sha256(f"{FORMAT}".encode())
    package = Path(readers.__file__).parents[2]
    # What a capture decodes to is decided by the readers (and the file formats and stage
    # names they use); the analysis above them reads the cached data, so it is not counted.
    sources = [*Path(readers.__file__).parent.glob("*.py"), package / "config" / "schema.py",
               *(package / "formats").glob("*.py")]
    for source in sorted(sources):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()[:16]


def cache_path(capture: Path) -> Path:
    return capture.with_name(f".{capture.name}{CACHE}")


def stamp(capture: Path) -> Stamp | None:
    """Size and newest mtime of a capture file or folder; None when it is gone."""
    try:
        st = capture.stat()
        if not capture.is_dir():
            return (st.st_size, st.st_mtime_ns)
        size, newest = 0, st.st_mtime_ns
        for p in capture.rglob("*"):
            s = p.stat()
            size += s.st_size if p.is_file() else 0
            newest = max(newest, s.st_mtime_ns)
        return (size, newest)
    except OSError:
        return None


def load(capture: Path, key: Stamp | None) -> TraceData | None:
    """The cached result for ``capture`` if its entry matches ``key`` and this version."""
    if key is None:
        return None
    try:
        entry = _entry.decode(cache_path(capture).read_bytes())
        if entry.version != analysis_version() or tuple(entry.stamp) != key:
            return None
        data = decode(entry.data)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError, NotImplementedError):
        return None  # missing, unreadable, corrupt or from another version: read again
    data.path = capture
    return data


def store(capture: Path, key: Stamp, data: TraceData) -> None:
    """Write the entry atomically; an interrupted or failed write leaves no entry behind."""
    path = cache_path(capture)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        entry = _Entry(analysis_version(), key, msgspec.Raw(encode(data)))
        tmp.write_bytes(_encoder.encode(entry))
        os.replace(tmp, path)
    except (OSError, NotImplementedError, OverflowError, TypeError):
        pass  # a read-only folder, or a value msgpack cannot hold (ints past 64 bits): no entry
    finally:
        tmp.unlink(missing_ok=True)


def discard_partial(capture: Path) -> None:
    """Remove the temporary files of writes that were stopped before their rename."""
    path = cache_path(capture)
    for tmp in path.parent.glob(f"{glob.escape(path.name)}.*.tmp"):
        tmp.unlink(missing_ok=True)


def read_cached(capture: Path, root: Path | None = None) -> TraceData:
    """``readers.read`` through the cache; raises ``BadFile`` as it does."""
    key = stamp(capture)  # taken before reading: a file changed meanwhile is read again next time
    data = load(capture, key)
    if data is None:
        data = read(capture, root)
        if key is not None:
            store(capture, key, data)
    return data
