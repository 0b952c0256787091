"""A capture's SQLite database opened for reading, its folder left as it was.

torch_npu writes its databases in WAL mode. SQLite opens such a file read-only by making the
``-wal`` and ``-shm`` files beside it, so an analysis would write into the capture's folder.
Opened ``immutable``, it makes nothing, but then it also reads nothing from a ``-wal`` file: where
one is there already (a writer stopped before its checkpoint), the rows it holds are not yet in
the database, and the file is opened read-only through it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["connect"]


def connect(path: Path) -> sqlite3.Connection:
    """``path`` opened for reading: immutable, or read-only through its ``-wal`` file where
    one is beside it. Any file name (``as_uri`` escapes ``?``, ``#`` and ``%``)."""
    path = Path(path)
    wal = path.with_name(f"{path.name}-wal")
    mode = "ro" if wal.exists() else "ro&immutable=1"
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode={mode}", uri=True)
