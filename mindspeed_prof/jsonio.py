"""Our own files, both ways: written whole through a fresh temporary name, read bounded.

Every file the analysis, the commands and the control folder read that is not a capture
(manifests, summaries, sweep rows, requests, acks, cache entries) comes through ``read_bytes``
or ``read_json``: a regular file (never a FIFO, a device or a folder), opened without blocking
and, unless the caller says otherwise, never through a symbolic link, read up to a size limit.
A refusal is ``Refused`` (a ``ValueError``) with one line naming the file and why.

Writes go to a temporary file made with ``mkstemp`` in the target's folder (a new name, created
exclusively: a link planted there is never followed) and are renamed over the target, so readers
see the old file or the new one, never half of one.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeAlias, TypeVar, Union

__all__ = [
    "MAX_JSON_BYTES",
    "Json",
    "JsonObject",
    "JsonRows",
    "Jsonable",
    "JsonableObject",
    "Refused",
    "open_regular",
    "pieces",
    "read_bytes",
    "read_json",
    "within",
    "write_atomic",
    "write_json",
]

#: A JSON value as ``json.loads`` gives it (and ``msgspec.to_builtins`` makes of our records).
Json: TypeAlias = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
#: A JSON object.
JsonObject: TypeAlias = dict[str, Json]
#: A JSON value to write (``--json``, the summary files): read-only views, so that a
#: ``list[int]`` or a mapping of rows is one too.
Jsonable: TypeAlias = Union[
    None, bool, int, float, str, Sequence["Jsonable"], Mapping[str, "Jsonable"]
]
#: A JSON object to write.
JsonableObject: TypeAlias = dict[str, Jsonable]

T = TypeVar("T")


class JsonRows(Sequence["Jsonable"], Generic[T]):
    """A JSON array whose items are made as ``pieces`` writes it: ``each`` of ``rows``, one
    at a time (a table of a row per step would otherwise be a dict per step at once)."""

    __slots__ = ("each", "rows")

    def __init__(self, rows: Sequence[T], each: Callable[[T], Jsonable]) -> None:
        self.rows, self.each = rows, each

    def __iter__(self) -> Iterator[Jsonable]:
        return map(self.each, self.rows)

    def __getitem__(self, i: int) -> Jsonable:  # type: ignore[override]
        return self.each(self.rows[i])

    def __len__(self) -> int:
        return len(self.rows)


_INDENTED = json.JSONEncoder(indent=2, default=str)
#: How deep in a document ``pieces`` looks for ``JsonRows`` (a list of analyses, each a group
#: of tables, each a table): below that it is ``json``'s to write.
ROWS_DEPTH = 3
#: The encoder's pieces joined into one before they are given out (and indented).
_RUN = 1024


def pieces(value: object, level: int = 0) -> Iterator[str]:
    """``json.dumps(value, indent=2, default=str)`` in pieces, the same text, ``JsonRows``
    written as arrays, their items made one at a time. Objects and arrays that hold a
    ``JsonRows`` (within ``ROWS_DEPTH``) are written here; anything else, and a ``JsonRows``'
    items, by ``json``'s encoder."""
    if isinstance(value, JsonRows):
        yield from _container("[", "]", ((None, v) for v in value), level, _encoded)
    elif isinstance(value, (list, tuple)) and _holds_rows(value, ROWS_DEPTH):
        yield from _container("[", "]", ((None, v) for v in value), level, pieces)
    elif isinstance(value, dict) and _holds_rows(value, ROWS_DEPTH):
        yield from _container("{", "}", value.items(), level, pieces)
    else:
        yield from _encoded(value, level)


#: A flat object's or array's members, one a line, written by ``json``'s C encoder (``indent``
#: takes the pure-Python one: most of the time ``--json`` spent on a table of a row per step).
_FLAT = json.JSONEncoder(separators=(",\n  ", ": "), default=str)
_SCALARS = frozenset((str, int, float, bool, type(None)))
_CONTAINERS = (dict, list, tuple)


def _flat(value: object) -> bool:
    """Whether ``value`` is an object or array of scalars and empty objects and arrays (which
    ``indent`` writes as ``{}`` and ``[]`` too)."""
    members: Iterable[object]
    if type(value) is dict:
        members = value.values()
    elif type(value) in (list, tuple):
        members = value  # type: ignore[assignment]
    else:
        return False
    return all(type(m) in _SCALARS or (type(m) in _CONTAINERS and not m) for m in members)


def _encoded(value: object, level: int) -> Iterator[str]:
    """``json``'s indented text of ``value``, indented ``level`` deep, in runs of pieces."""
    pad = "\n" + "  " * level
    if value and _flat(value):
        text = _FLAT.encode(value)
        text = f"{text[0]}\n  {text[1:-1]}\n{text[-1]}"
        yield text.replace("\n", pad) if level else text
        return
    run: list[str] = []
    for piece in _INDENTED.iterencode(value):
        run.append(piece)
        if len(run) >= _RUN:
            yield "".join(run).replace("\n", pad) if level else "".join(run)
            run.clear()
    yield "".join(run).replace("\n", pad) if level else "".join(run)


def _container(
    open_: str,
    close: str,
    items: Iterable[tuple[str | None, object]],
    level: int,
    write: Callable[[object, int], Iterator[str]],
) -> Iterator[str]:
    inner = "\n" + "  " * (level + 1)
    yield open_
    empty = True
    for key, item in items:
        yield (inner if empty else "," + inner) + ("" if key is None else json.dumps(key) + ": ")
        empty = False
        yield from write(item, level + 1)
    yield close if empty else "\n" + "  " * level + close


def _holds_rows(value: object, depth: int) -> bool:
    """Whether ``value`` is, or holds within ``depth`` levels of its objects and arrays, a
    ``JsonRows``."""
    if isinstance(value, JsonRows):
        return True
    if depth <= 0:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) for k in value) and any(
            _holds_rows(v, depth - 1) for v in value.values()
        )
    if isinstance(value, (list, tuple)):
        return any(_holds_rows(v, depth - 1) for v in value)
    return False


#: Our JSON files (manifests, cluster and sweep summaries) larger than this are not read.
MAX_JSON_BYTES = 64 << 20

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
    (stat.S_ISSOCK, "a socket"),
)


class Refused(ValueError):
    """A file not read: not a regular file, a link, too large or nested too deeply. ``str``:
    one line naming the file; ``reason``: the same without the name."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason

    def __reduce__(self) -> tuple[type[Refused], tuple[Path | str, str]]:
        return (Refused, (self.path, self.reason))  # it may cross a process pool


def open_regular(path: Path | str, *, follow: bool = False) -> int:
    """A descriptor of ``path`` opened for reading, without blocking (a FIFO does not hang)
    and, unless ``follow``, not through a symbolic link; ``Refused`` unless it is a regular
    file. ``OSError`` as ``os.open`` raises it (a missing file: ``FileNotFoundError``)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if err.errno == errno.ELOOP and not follow:
            raise Refused(path, "a symbolic link, not followed") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise Refused(path, f"{kind}, not a regular file")
    return fd


def read_bytes(path: Path | str, limit: int = MAX_JSON_BYTES, *, follow: bool = False) -> bytes:
    """The whole of a regular file of at most ``limit`` bytes (see ``open_regular``)."""
    fd = open_regular(path, follow=follow)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise Refused(path, f"larger than {limit} bytes ({size})")
        chunks, got = [], 0
        while got <= limit:  # the size may have grown since fstat (or lie, as /proc's do)
            chunk = os.read(fd, min(limit + 1 - got, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > limit:
        raise Refused(path, f"larger than {limit} bytes")
    return b"".join(chunks)


def read_json(path: Path | str, limit: int = MAX_JSON_BYTES, *, follow: bool = False) -> Any:
    """``read_bytes`` parsed as JSON: ``json.JSONDecodeError`` (a ``ValueError``) when it is
    not JSON, ``Refused`` when it is nested too deeply to parse."""
    raw = read_bytes(path, limit, follow=follow)
    try:
        return json.loads(raw)
    except RecursionError:
        raise Refused(path, "nested too deeply to read") from None


def within(path: Path, root: Path) -> bool:
    """Whether ``path``, links followed, lies inside ``root`` (links followed too)."""
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def write_atomic(path: Path, data: bytes | bytearray, mode: int = 0o644) -> None:
    """``data`` as the whole of ``path``: written to a new temporary file in its folder
    (``.<name>.<random>.tmp``), then renamed over it. Raises ``OSError`` as the writes do;
    whatever fails leaves no temporary file behind."""
    import tempfile  # a cache hit writes nothing: its start does without the module

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name.lstrip('.')}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Mapping[str, object]) -> None:
    """``data`` as indented JSON at ``path`` (its folder made), written whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(data, indent=2, default=str).encode())
