"""Safe file and directory names: nothing taken from a config or a host escapes the save root."""

from __future__ import annotations

import os
import re
import secrets
import socket
from pathlib import Path

__all__ = ["claim_stem", "host_name", "inside", "process_token", "safe_name"]

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


_token: list[str] = []


def process_token() -> str:
    """6 random hex digits, made once per process (again in a forked child): containers with
    host networking share the host name and may share the pid, never this."""
    if not _token:
        _token.append(secrets.token_hex(3))
    return _token[0]


os.register_at_fork(after_in_child=_token.clear)

#: What ``claim_stem`` creates: ``.<stem>.claim``, empty, hidden (readers skip dot files).
CLAIM = ".claim"


def claim_stem(folder: Path, stem: str) -> str:
    """``stem``, or ``stem_r2``, ``stem_r3``... : the first whose claim this call creates.

    The claim, ``folder/.<stem>.claim``, is created with ``O_EXCL``: of two processes (or two
    jobs of one process) that reach the same stem, exactly one gets it, whatever the file
    system's view of the folder; a stem is also passed over while a file of that name exists
    (a capture from before claims were made). The empty claim file stays as the stem's mark.
    """
    folder.mkdir(parents=True, exist_ok=True)
    n, candidate = 1, stem
    while True:
        if not _taken(folder, candidate):
            try:
                fd = os.open(folder / f".{candidate}{CLAIM}",
                             os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                return candidate
        n += 1
        candidate = f"{stem}_r{n}"


def _taken(folder: Path, stem: str) -> bool:
    return any(name == stem or name.startswith(stem + ".") for name in os.listdir(folder))
