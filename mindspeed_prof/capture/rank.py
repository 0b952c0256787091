"""This process's rank: explicit, else torch.distributed, else ``RANK``, else 0."""

from __future__ import annotations

import os
import sys

__all__ = ["quiet_rank", "resolve_rank"]


def resolve_rank(explicit: int | None = None) -> int:
    if explicit is not None:
        if isinstance(explicit, bool) or not isinstance(explicit, int) or explicit < 0:
            raise ValueError(f"rank={explicit!r}: must be an integer >= 0")
        return explicit
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    env = os.environ.get("RANK", "")
    if env.strip():
        try:
            value = int(env)
        except ValueError:
            raise ValueError(
                f"environment variable RANK={env!r}: must be an integer >= 0"
            ) from None
        if value < 0:
            raise ValueError(f"environment variable RANK={env!r}: must be an integer >= 0")
        return value
    return 0


def quiet_rank(explicit: int | None) -> int:
    """The rank for a profiler that is otherwise off: a bad ``RANK`` means 0, not an error."""
    try:
        return resolve_rank(explicit)
    except ValueError:
        return explicit or 0
