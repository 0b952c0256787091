"""Safe file and directory names: nothing taken from a config or a host escapes the save root."""

from __future__ import annotations

import re
import socket
from pathlib import Path

__all__ = ["safe_name", "host_name", "inside"]

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
