"""How the views, findings and readers name things: a rank, a run of ranks, a step, the row of
work outside every step or of a capture without steps, an error in one line."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["OUTSIDE", "WHOLE", "one_line", "rank_label", "rank_order", "ranks_text", "step_label"]

#: How every view names the row of device work launched outside every step (its step is None).
OUTSIDE = "outside"
#: How every view names the one row of a capture without steps (``DeviceRow.whole``).
WHOLE = "no steps"


def one_line(err: BaseException) -> str:
    return str(err).splitlines()[0][:200] if str(err) else type(err).__name__


def rank_label(rank: int | None, source: str = "") -> str:
    """``3``, ``?`` for an unknown rank, ``3 (host-b)`` when two captures claim rank 3."""
    text = "?" if rank is None else str(rank)
    return f"{text} ({source})" if source else text


def rank_order(rank: int | None) -> tuple[int, int]:
    """A sort key that puts unknown ranks after every known one."""
    return (1, 0) if rank is None else (0, rank)


def step_label(step: int | None) -> str:
    """``12``, or ``outside`` for work launched outside every step."""
    return OUTSIDE if step is None else str(step)


def ranks_text(ranks: Sequence[int | None]) -> str:
    """``0-3, 8, ?``: runs of consecutive ranks shortened, unknown ranks last."""
    known = sorted({r for r in ranks if r is not None})
    parts: list[str] = []
    i = 0
    while i < len(known):
        j = i
        while j + 1 < len(known) and known[j + 1] == known[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{known[i]}-{known[j]}")
        else:
            parts.extend(str(r) for r in known[i : j + 1])
        i = j + 1
    if any(r is None for r in ranks):
        parts.append("?")
    return ", ".join(parts)
