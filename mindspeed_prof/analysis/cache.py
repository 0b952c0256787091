"""Per-capture analysis results cached next to each capture: served only when provably its own.

An entry (``.<capture name>.analysis-cache``) is ``MAGIC``, a checksum of the rest of its own
bytes, then msgpack of the analysis version, the capture's ``Fingerprint`` and the decoded data.
It is served when all three hold: the checksum matches (a flipped bit, a cut or a foreign file
is read again, never served), the version is this one, and the fingerprint equals the
capture's now: size, mtime, ctime and inode (a file rewritten in place and its mtime put back
with ``touch -r`` has a new ctime; another capture's entry copied here has another inode) and a
hash of each file's first and last ``BLOCK`` bytes. The entry is opened without following a
link or blocking (a FIFO or a link to ``/dev/zero`` there is refused at once), read up to a
bound, and written through a fresh ``mkstemp`` name in its folder (``jsonio.write_atomic``).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import os
from pathlib import Path

import msgspec

from mindspeed_prof.analysis import readers
from mindspeed_prof.analysis.readers import TraceData, read
from mindspeed_prof.analysis.readers.range_table import Label, RangeTable, as_table
from mindspeed_prof.formats import CACHE
from mindspeed_prof.jsonio import Refused, open_regular, read_bytes, write_atomic

__all__ = [
    "BLOCK",
    "MAGIC",
    "Fingerprint",
    "analysis_version",
    "cache_path",
    "decode",
    "discard_partial",
    "encode",
    "fingerprint",
    "load",
    "read_cached",
    "store",
]

#: Bump when the entry layout changes; reader changes are caught by ``analysis_version``.
FORMAT = 4
#: An entry starts so, then a 16-byte BLAKE2b digest of everything after it.
MAGIC = b"MSPCACH3"
_DIGEST = 16
_HEADER = len(MAGIC) + _DIGEST
#: Bytes hashed at the start and at the end of each file of a capture.
BLOCK = 4096
#: Room an entry's buffer is made with beyond its ranges (for the rest of the capture).
_ROOM = 1 << 16
#: An entry is read up to this many bytes more than twice its capture's size.
_SLACK = 64 << 20


class Fingerprint(msgspec.Struct, frozen=True, array_like=True):
    """What a capture is on disk: bytes, newest mtime and ctime (ns), the inode of the file
    (the folder's for a torch_npu folder), and a digest of each file's name, stat and first
    and last ``BLOCK`` bytes."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    digest: bytes


class _Entry(msgspec.Struct):
    version: str
    fingerprint: Fingerprint
    data: msgspec.Raw


def _enc_hook(obj: object) -> str:
    if isinstance(obj, Path):
        return str(obj)
    raise NotImplementedError(f"cannot cache {type(obj).__name__}")


def _dec_hook(kind: type, obj: object) -> Path:
    if kind is Path and isinstance(obj, str):
        return Path(obj)
    raise NotImplementedError(f"cannot decode {kind}")


class _Packed(msgspec.Struct, array_like=True):
    """``TraceData`` less its ranges, then the ranges as columns (``RangeTable.columns``)."""

    trace: TraceData
    labels: list[tuple[int | None, str, str, str, str]]
    steps: list[int | None]
    columns: list[bytes]


_encoder = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
_entry = msgspec.msgpack.Decoder(_Entry)
_data = msgspec.msgpack.Decoder(_Packed, dec_hook=_dec_hook)


def _packed(
    data: TraceData,
) -> tuple[TraceData, list[Label], list[int | None], list[memoryview]]:
    return (dataclasses.replace(data, ranges=[]), *as_table(data.ranges).columns())


def encode(data: TraceData) -> bytes:
    """``data`` as msgpack, every field included (also how workers send results back); its
    ranges as columns, not a list of ranges."""
    return _encoder.encode(_packed(data))


def decode(raw: bytes | msgspec.Raw) -> TraceData:
    packed = _data.decode(raw)
    data = packed.trace
    try:
        data.ranges = RangeTable.from_columns(packed.labels, packed.steps, packed.columns)
    except ValueError as e:
        raise msgspec.ValidationError(str(e)) from None
    return data


@functools.lru_cache(maxsize=1)
def analysis_version() -> str:
    """A digest of the source that decides what a capture decodes to (the readers, the analysis
    modules they call, the stage names, file names): any change to it retires old entries."""
    digest = hashlib.sha256(f"{FORMAT}".encode())
    package = Path(readers.__file__).parents[2]
    # What a capture decodes to is decided by the readers (and the file formats and stage
    # names they use); the analysis above them reads the cached data, so it is not counted.
    sources = [
        *Path(readers.__file__).parent.rglob("*.py"),
        package / "config" / "schema.py",
        *(package / "formats").glob("*.py"),
    ]
    for source in sorted(sources):
        digest.update(source.name.encode() + source.read_bytes())
    return digest.hexdigest()[:16]


def cache_path(capture: Path) -> Path:
    return capture.with_name(f".{capture.name}{CACHE}")


def _ends(path: Path, size: int) -> bytes:
    """The first and last ``BLOCK`` bytes of a regular file (b"" when it cannot be opened)."""
    try:
        fd = open_regular(path, follow=True)
    except (OSError, Refused):
        return b""
    try:
        head = os.pread(fd, BLOCK, 0)
        return head if size <= BLOCK else head + os.pread(fd, BLOCK, max(BLOCK, size - BLOCK))
    except OSError:
        return b""
    finally:
        os.close(fd)


def fingerprint(capture: Path) -> Fingerprint | None:
    """The capture's ``Fingerprint`` (file or torch_npu folder); None when it is gone or is
    not a regular file or folder."""
    try:
        st = capture.stat()
        digest = hashlib.blake2b(digest_size=_DIGEST)
        if capture.is_file():
            digest.update(_ends(capture, st.st_size))
            return Fingerprint(
                st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest.digest()
            )
        if not capture.is_dir():
            return None
        size, mtime, ctime = 0, st.st_mtime_ns, st.st_ctime_ns
        for p in sorted(capture.rglob("*")):
            s = p.stat()
            mtime, ctime = max(mtime, s.st_mtime_ns), max(ctime, s.st_ctime_ns)
            regular = p.is_file()
            size += s.st_size if regular else 0
            digest.update(
                os.fsencode(p.relative_to(capture))
                + b"\0"
                + repr((s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino)).encode()
            )
            if regular:
                digest.update(_ends(p, s.st_size))
        return Fingerprint(size, mtime, ctime, st.st_ino, digest.digest())
    except OSError:
        return None


def _checksum(body: bytes | memoryview) -> bytes:
    return hashlib.blake2b(body, digest_size=_DIGEST).digest()


def load(capture: Path, key: Fingerprint | None) -> TraceData | None:
    """The cached result for ``capture`` if its entry is whole and matches ``key`` and this
    version; None otherwise (missing, refused, corrupt, stale or foreign: read again)."""
    if key is None:
        return None
    try:
        raw = read_bytes(cache_path(capture), 2 * key.size + _SLACK)
    except (OSError, Refused):
        return None
    body = memoryview(raw)[_HEADER:]  # not a copy: an entry is as large as its ranges
    if raw[: len(MAGIC)] != MAGIC or raw[len(MAGIC) : _HEADER] != _checksum(body):
        return None
    try:
        entry = _entry.decode(body)
        if entry.version != analysis_version() or entry.fingerprint != key:
            return None
        data = decode(entry.data)
    except (msgspec.DecodeError, msgspec.ValidationError, NotImplementedError):
        return None
    data.path = capture
    return data


def store(capture: Path, key: Fingerprint, data: TraceData) -> None:
    """Write the entry atomically; an interrupted or failed write leaves no entry behind."""
    try:
        write_atomic(cache_path(capture), _entry_bytes(key, data))
    except (OSError, NotImplementedError, OverflowError, TypeError, ValueError):
        pass  # a read-only folder, or a value msgpack cannot hold (ints past 64 bits, a
        # name that is not UTF-8): no entry


def _entry_bytes(key: Fingerprint, data: TraceData) -> bytearray:
    """The whole entry in one buffer: ``data`` encoded once, in place after the entry's own
    fields (its last: a nil placeholder cut off), the checksum filled in after; no copy of
    the encoded data, which grows with the capture's ranges."""
    head = _encoder.encode(_Entry(analysis_version(), key, msgspec.Raw(b"\xc0")))[:-1]
    packed = _packed(data)
    # sized for the columns at the start (the encoder cuts it to what it wrote): grown as it
    # fills, the buffer was copied and over-allocated several times (a 400 MB range file's
    # 67 MB of columns took up to 200 MB more)
    _, labels, steps, columns = packed
    size = sum(c.nbytes for c in columns) + 9 * len(steps) + _ROOM
    size += sum(24 + len(name) + len(source) + len(tid) for _, _, name, source, tid in labels)
    buf = bytearray(_HEADER + len(head) + size)
    buf[: len(MAGIC)] = MAGIC
    buf[_HEADER : _HEADER + len(head)] = head
    _encoder.encode_into(packed, buf, _HEADER + len(head))
    with memoryview(buf) as view:
        digest = _checksum(view[_HEADER:])
    buf[len(MAGIC) : _HEADER] = digest
    return buf


def discard_partial(capture: Path) -> None:
    """Remove the temporary files of writes that were stopped before their rename."""
    path = cache_path(capture)
    for tmp in path.parent.glob(f"{glob.escape(path.name)}.*.tmp"):
        tmp.unlink(missing_ok=True)


def read_cached(capture: Path, root: Path | None = None) -> TraceData:
    """``readers.read`` through the cache; raises ``BadFile`` as it does."""
    key = fingerprint(capture)  # taken before reading: a file changed meanwhile is read again
    data = load(capture, key)
    if data is None:
        data = read(capture, root)
        if key is not None:
            store(capture, key, data)
    return data
