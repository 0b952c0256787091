"""A row's time per step and per rank, from the ranges: what the judgements compare."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import Range

__all__ = ["Cells", "Who", "per_step", "who_order", "who_text"]

#: A rank and the label that tells apart two captures of one rank (a role, a host).
Who = tuple[int | None, str]
#: One row's milliseconds per step, per rank.
Cells = dict[int, dict[Who, float]]


def who_order(w: Who) -> tuple[tuple[int, int], str]:
    """A sort key: by rank (unknown ranks last), then label."""
    return rank_order(w[0]), w[1]


def who_text(w: Who) -> str:
    """``rank 3`` (with its label where two captures of a rank clash)."""
    return f"rank {rank_label(*w)}"


def per_step(ranges: Iterable[Range], kind: str) -> dict[str, Cells]:
    """Per name of ``kind`` (``step``, ``stage``, ``range``), its milliseconds per step and
    rank; several runs in one step add up."""
    out: dict[str, Cells] = defaultdict(lambda: defaultdict(lambda: defaultdict(float)))
    whos: dict[Who, Who] = {}  # each rank's key once: a range file holds a cell per step
    for r in ranges:
        if r.kind == kind and r.step is not None and r.dur >= 0:
            who = (r.rank, r.source)
            out[r.name][r.step][whos.setdefault(who, who)] += r.dur / 1000.0
    return out
