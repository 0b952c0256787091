"""What the RL rules read: each rank's counted steps with their stage ranges, and the captures
they came from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.readers.range_table import of_kind

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "GENERATE",
    "Step",
    "Who",
    "steps_by_rank",
    "steps_of",
    "traces_of",
    "who_order",
    "who_text",
]


#: The generation stage.
GENERATE = "actor_generate"

Who = tuple[int | None, str]  # rank, source


def who_order(w: Who) -> tuple[tuple[int, int], str]:
    """A sort key: by rank (unknown ranks last), then source."""
    return rank_order(w[0]), w[1]


def who_text(w: Who) -> str:
    """``rank 3`` (with its source where two captures of a rank clash)."""
    return f"rank {rank_label(*w)}"


@dataclass
class Step:
    """One rank's step: its own range (the longest, if several) and its stage ranges."""

    step: Range | None = None
    stages: list[Range] = field(default_factory=list)


def steps_of(captures: Captures, tables: Tables, settings: Settings) -> dict[Who, dict[int, Step]]:
    """Per rank (and source) and counted step, the step range and stage ranges."""
    out: dict[Who, dict[int, Step]] = defaultdict(dict)
    for r in of_kind(tables.counted, "step", "stage"):
        if r.step is None or r.dur < 0:
            continue
        by = out[(r.rank, r.source)]
        s = by.get(r.step)
        if s is None:  # (``setdefault`` made a Step for every range)
            s = by[r.step] = Step()
        if r.kind == "stage":
            s.stages.append(r)
        elif s.step is None or r.dur > s.step.dur:
            s.step = r
    return out


def steps_by_rank(tables: Tables) -> Iterator[tuple[Who, Iterator[tuple[int, Step]]]]:
    """``steps_of`` a rank at a time, each rank's steps in step order, made as read: a step's
    ranges are ``Range`` tuples only while it is read (a range file holds many steps)."""
    import numpy as np

    c = columns(tables.counted, "step", "stage", stepped=True)
    keep = np.flatnonzero(~(c.dura < 0))  # (as ``steps_of``: NaN kept)
    label, code = c.label[keep], c.step[keep]
    place = keep if c.at is None else c.at[keep]
    table, labels, values = c.table, c.table.labels, c.table.steps
    index: dict[Who, int] = {}
    who_of = np.zeros(len(labels) or 1, dtype=np.int64)
    for i, lab in enumerate(labels):
        who_of[i] = index.setdefault((lab[0], lab[3]), len(index))
    by_value = [i for _, i in sorted((v, i) for i, v in enumerate(values) if v is not None)]
    step_rank = np.zeros(len(values) or 1, dtype=np.int64)
    step_rank[by_value] = np.arange(len(by_value))
    who, at = who_of[label], step_rank[code]
    order = np.lexsort((np.arange(len(keep)), at, who))
    if not len(order):
        return
    who, at, place = who[order], at[order], place[order]
    cut = np.flatnonzero((np.diff(who) != 0) | (np.diff(at) != 0)) + 1
    bounds = [0, *cut.tolist(), len(order)]
    whos = list(index)

    def steps(lo: int, hi: int) -> Iterator[tuple[int, Step]]:
        for a, b in zip(bounds[lo:hi], bounds[lo + 1 : hi + 1]):
            s = Step()
            for r in map(table.__getitem__, place[a:b].tolist()):
                if r.kind == "stage":
                    s.stages.append(r)
                elif s.step is None or r.dur > s.step.dur:
                    s.step = r
            step = values[by_value[int(at[a])]]
            assert step is not None  # (counted steps)
            yield step, s

    firsts = [0, *(i + 1 for i in range(len(bounds) - 2) if who[bounds[i + 1]] != who[bounds[i]])]
    for lo, hi in zip(firsts, [*firsts[1:], len(bounds) - 1]):
        if hi > lo:
            yield whos[int(who[bounds[lo]])], steps(lo, hi)


def traces_of(captures: Captures, tables: Tables, settings: Settings) -> dict[Who, list[TraceData]]:
    out: dict[Who, list[TraceData]] = defaultdict(list)
    for t in captures.traces:
        source = t.clash_label
        out[(t.rank, source if isinstance(source, str) else "")].append(t)
    return out
