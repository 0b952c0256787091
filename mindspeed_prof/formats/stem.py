"""A capture's file stem, ``rank<r>_<host>_<pid>_<token>_step<s>[_<index>][_r<n>]``: built and
read here only.

``host`` is a safe name (letters, digits, ``_``, ``.``, ``-``: it may hold ``_``); ``pid`` and
``token`` (6 hex digits, one per process) tell apart processes that share a host name; ``index``
the second and later capture of one step (0: the first); ``claim`` the ``_r<n>`` a stem gets
when another process took it first (1: none). Stems written before the token have no token.
"""

from __future__ import annotations

import re

import msgspec

__all__ = ["Stem", "claimed", "rank_of"]

_TAIL = r"_step(\d+)(?:_(\d+))?(?:_r(\d+))?"
#: With the token (what is written), then without (older stems): an all-digit token reads as one.
_STEMS = (
    re.compile(r"rank(\d+)_(.+)_(\d+)_([0-9a-f]{6})" + _TAIL),
    re.compile(r"rank(\d+)_(.+)_(\d+)()" + _TAIL),
)
_RANK = re.compile(r"rank(\d+)_")


class Stem(msgspec.Struct, frozen=True):
    """The fields of a capture's file stem."""

    rank: int
    host: str
    pid: int
    step: int
    token: str | None = None
    index: int = 0
    claim: int = 1

    def format(self) -> str:
        token = f"_{self.token}" if self.token is not None else ""
        index = f"_{self.index}" if self.index else ""
        claim = f"_r{self.claim}" if self.claim > 1 else ""
        return f"rank{self.rank}_{self.host}_{self.pid}{token}_step{self.step}{index}{claim}"

    @classmethod
    def parse(cls, name: str) -> Stem | None:
        """The fields of the stem ``name`` is or starts with (a capture's file or folder name),
        or None when it has none."""
        for pattern in _STEMS:
            m = pattern.match(name)
            if m is not None:
                rank, host, pid, token, step, index, claim = m.groups()
                return cls(
                    int(rank),
                    host,
                    int(pid),
                    int(step),
                    token or None,
                    int(index or 0),
                    int(claim or 1),
                )
        return None


def claimed(stem: str, claim: int) -> str:
    """``stem`` as its ``claim``-th taker names it (``_r<claim>`` from the second on)."""
    return f"{stem}_r{claim}" if claim > 1 else stem


def rank_of(name: str) -> int | None:
    """The rank a capture's file or folder name starts with (``rank<r>_...``), or None."""
    m = _RANK.match(name)
    return int(m.group(1)) if m else None
