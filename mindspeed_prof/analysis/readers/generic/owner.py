"""Whose events a producer's trace holds: the rank of each process, from the first that says it,
the capture's own fields, the process's name (``rank3``, ``Rank 3``, ``[rank3]``; a pid written
as such a string names itself), a folder above the file (``rank_3/``), the file's name."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from mindspeed_prof.analysis.readers.generic.events import AnyId
from mindspeed_prof.analysis.readers.ranks import name_rank

__all__ = ["FOLDER_LEVELS", "folder_rank", "pid_ranks", "process_rank"]

#: How many folders above a file are looked at for a rank.
FOLDER_LEVELS = 3
_PROCESS = re.compile(r"(?:^|[^a-z0-9])rank[\s_:#=-]*(\d+)(?![0-9])", re.IGNORECASE)


def process_rank(name: str) -> int | None:
    """The rank a process's name gives: ``rank3``, ``Rank 3``, ``[rank3]``, ``actor rank_3``."""
    m = _PROCESS.search(name)
    return int(m.group(1)) if m else None


def folder_rank(path: Path, root: Path | None = None, levels: int = FOLDER_LEVELS) -> int | None:
    """The rank the nearest folder above ``path`` names (``rank_3``, ``rank3``, ``x_rank3``),
    looking at most ``levels`` up and only below ``root`` (the folder analysed: its own name
    and those above it are the user's, not the capture's)."""
    top = Path(root).resolve() if root is not None and Path(root).is_dir() else None
    for folder in list(path.parents)[:levels]:
        if top is not None and (folder.resolve() == top or top not in folder.resolve().parents):
            break
        rank = name_rank(folder.name)
        if rank is not None:
            return rank
    return None


def pid_ranks(
    own: int | None,
    names: Mapping[AnyId, str],
    pids: Iterable[AnyId],
    path: Path,
    root: Path | None = None,
) -> dict[AnyId, int | None]:
    """Each process's rank: ``own`` (the capture's fields) for all, else its name's (a string
    pid is its own name when it has none), else the folder's (below ``root``), else the
    file's."""
    fallback = folder_rank(path, root)
    if fallback is None:
        fallback = name_rank(path.name)
    out: dict[AnyId, int | None] = {}
    for pid in pids:
        if own is not None:
            out[pid] = own
            continue
        name = names.get(pid, pid if isinstance(pid, str) else "")
        rank = process_rank(name)
        out[pid] = rank if rank is not None else fallback
    return out
