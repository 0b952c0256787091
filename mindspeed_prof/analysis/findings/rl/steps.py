"""What the RL rules read: each rank's counted steps with their stage ranges, and the captures
they came from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import Range, TraceData
from mindspeed_prof.analysis.readers.range_table import of_kind

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["GENERATE", "Step", "Who", "steps_of", "traces_of", "who_order", "who_text"]


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


def traces_of(captures: Captures, tables: Tables, settings: Settings) -> dict[Who, list[TraceData]]:
    out: dict[Who, list[TraceData]] = defaultdict(list)
    for t in captures.traces:
        source = t.clash_label
        out[(t.rank, source if isinstance(source, str) else "")].append(t)
    return out
