"""Safe file and directory names: nothing taken from a config or a host escapes the save root."""

from __future__ import annotations

import os
import re
import secrets
import socket
from pathlib import Path

from mindspeed_prof.formats.stem import claimed

__all__ = [
    "CLAIM",
    "claim_stem",
    "host_name",
    "inside",
    "process_token",
    "release_stem",
    "safe_name",
]

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
    """``stem``, or ``stem_r2``, ``stem_r3``...: the first no file is named by and whose claim
    this call creates.

    The claim, ``folder/.<stem>.claim``, is created with ``O_EXCL``: of two processes (or two
    jobs of one process) that reach the same stem, exactly one gets it, whatever each saw of
    the folder. It stands until the capture's own files do (``release_stem``, after they are
    written): a stem is taken while its claim or a file of its name exists.
    """
    folder.mkdir(parents=True, exist_ok=True)
    n, candidate = 1, stem
    while True:
        if not _taken(folder, candidate):
            try:
                fd = os.open(_claim(folder, candidate), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                if not _taken(folder, candidate):  # a capture released it just before
                    return candidate
                release_stem(folder, candidate)
        n += 1
        candidate = claimed(stem, n)


def release_stem(folder: Path, stem: str) -> None:
    """The capture of ``stem`` is written (or wrote nothing): its claim is removed."""
    try:
        _claim(folder, stem).unlink(missing_ok=True)
    except OSError:
        pass  # a claim left behind only keeps the stem taken


def _claim(folder: Path, stem: str) -> Path:
    return folder / f".{stem}{CLAIM}"


def _taken(folder: Path, stem: str) -> bool:
    return any(name == stem or name.startswith(stem + ".") for name in os.listdir(folder))
