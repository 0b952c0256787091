"""This process's rank: explicit, else torch.distributed, else ``RANK``, else 0.

``RANK`` is read as launchers write it: ASCII decimal digits (``0``, ``12``), spaces around
them allowed. Anything else (``abc``, ``-1``, ``+3``, ``1_0``, ``٣``: ``int`` would take the
last three) is an error in one line naming ``RANK`` and what is allowed."""

from __future__ import annotations

import os
import sys

__all__ = ["ALLOWED", "parse_rank", "quiet_rank", "resolve_rank"]

#: What a rank may be, as the error says.
ALLOWED = "a rank is ASCII digits 0-9 only (0, 1, 12)"


def parse_rank(text: str) -> int | None:
    """The rank ``text`` spells (ASCII decimal digits, spaces around them), else None."""
    digits = text.strip()
    return int(digits) if digits.isascii() and digits.isdecimal() else None


def resolve_rank(explicit: int | None = None) -> int:
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit < 0:
            raise ValueError(f"rank={explicit!r}: must be an integer >= 0")
        return explicit
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    env = os.environ.get("RANK", "")
    if not env.strip():
        return 0
    value = parse_rank(env)
    if value is None:
        raise ValueError(f"environment variable RANK={env!r} is no rank: {ALLOWED}")
    return value


def quiet_rank(explicit: int | None) -> int:
    """The rank for a profiler that is otherwise off: a bad ``RANK`` means 0, not an error."""
    try:
        return resolve_rank(explicit)
    except ValueError:
        return explicit or 0
