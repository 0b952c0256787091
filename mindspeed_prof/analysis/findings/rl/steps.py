"""What the RL rules share: each rank's counted steps with their stage ranges, the captures
they came from, and the words their findings use."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import files_text
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import Range, TraceData

if TYPE_CHECKING:
    from mindspeed_prof.analysis.result import Analysis

__all__ = [
    "DETAIL_LINES",
    "GENERATE",
    "HIGH_SHARE",
    "MEDIUM_SHARE",
    "Step",
    "Who",
    "of_ranks",
    "ranks_of",
    "source_of",
    "steps_of",
    "steps_text",
    "traces_of",
    "who_text",
]


#: Shares of the step at which an RL finding is medium, then high.
MEDIUM_SHARE, HIGH_SHARE = 0.05, 0.20
#: The generation stage.
GENERATE = "actor_generate"
DETAIL_LINES = 4

Who = tuple[int | None, str]  # rank, source


def who_text(w: Who) -> str:
    return f"rank {rank_label(*w)}"


@dataclass
class Step:
    """One rank's step: its own range (the longest, if several) and its stage ranges."""

    step: Range | None = None
    stages: list[Range] = field(default_factory=list)


def steps_of(result: Analysis) -> dict[Who, dict[int, Step]]:
    """Per rank (and source) and counted step, the step range and stage ranges."""
    out: dict[Who, dict[int, Step]] = defaultdict(dict)
    for r in result.counted():
        if r.step is None or r.kind not in ("step", "stage") or r.dur < 0:
            continue
        s = out[(r.rank, r.source)].setdefault(r.step, Step())
        if r.kind == "stage":
            s.stages.append(r)
        elif s.step is None or r.dur > s.step.dur:
            s.step = r
    return out


def traces_of(result: Analysis) -> dict[Who, list[TraceData]]:
    out: dict[Who, list[TraceData]] = defaultdict(list)
    for t in result.traces:
        source = t.clash_label
        out[(t.rank, source if isinstance(source, str) else "")].append(t)
    return out


def source_of(result: Analysis, who: list[Who], what: str = "step and stage ranges") -> str:
    traces = traces_of(result)
    return files_text(result, [t for w in who for t in traces.get(w, [])], what)


def ranks_of(who: list[Who]) -> list[int | None]:
    return sorted({w[0] for w in who}, key=rank_order)


def of_ranks(hits: list[Who]) -> str:
    return f"{who_text(hits[0])}" + (f" (of {len(hits)} ranks)" if len(hits) > 1 else "")


def steps_text(steps: list[int]) -> str:
    return f"step {steps[0]}" if len(steps) == 1 else f"steps {ranks_text(steps)}"
