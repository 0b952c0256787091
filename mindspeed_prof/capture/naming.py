"""Safe file and directory names: nothing taken from a config or a host escapes the save root."""

from __future__ import annotations

import re
import socket
from pathlib import Path

__all__ = ["host_name", "inside", "safe_name", "unused_stem"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(text: str, what: str = "name") -> str:
    """``text`` as one path component: separators and odd characters become ``_``."""
    cleaned = _UNSAFE.sub("_", str(text)).strip(".")
    if not cleaned:
        raise ValueError(f"{what}={text!r}: needs letters, digits, '_', '-' or '.'")
    return cleaned[:100]


def host_name() -> str:
    return safe_name(socket.gethostname() or "host", "host")


def inside(root: Path, *parts: str) -> Path:
    """``root/parts...`` after checking the result stays under ``root``."""
    path = root.joinpath(*parts).resolve()
    base = root.resolve()
    if path != base and base not in path.parents:
        raise ValueError(f"{'/'.join(parts)!r} would leave the save root {str(base)!r}")
    return path


def unused_stem(folder: Path, stem: str) -> str:
    """``stem``, or ``stem_r2``, ``stem_r3``... if an earlier capture of this process took it.

    Other processes cannot collide (the pid is in the stem); the same process can, when a
    launcher reuses it for several jobs writing to one save root.
    """
    if not folder.is_dir():
        return stem
    names = [p.name for p in folder.iterdir()]
    n, candidate = 1, stem
    while any(name == candidate or name.startswith(candidate + ".") for name in names):
        n += 1
        candidate = f"{stem}_r{n}"
    return candidate
