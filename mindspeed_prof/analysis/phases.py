"""Each rank's step split into the three parts of an RL step: generation, training (log-probs,
values, updates) and the transitions between them (weight sync, resharding, offload and onload,
the engine's sleep and wake), with the time in stages of no phase (``other``: reward scoring,
the trainer's own) and the time no stage covers (``uncovered``).

The parts add up to the step: where stages overlap (two threads, a stage inside another), each
instant of the step counts once, for the first phase in ``PRIORITY`` that runs then.
"""

from __future__ import annotations

import functools
import operator
from array import array
from collections import defaultdict
from collections.abc import Iterable, Sequence

from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.readers.range_table import of_kind
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.config.schema import TRANSITIONS, phase_of

__all__ = ["PRIORITY", "PhaseRow", "phase_rows", "split_step"]

#: Which phase an instant counts for where stages of several phases overlap: the transition
#: (the cost this table is there to show) first, then generation, training, other stages.
PRIORITY: tuple[str, ...] = ("transition", "generation", "training", "other")


class PhaseRow(Row, kw_only=True):
    """One rank's step split into its parts (ms): ``generation_ms``, ``training_ms``,
    ``transition_ms`` (``transitions``: each transition's part of it), ``other_ms`` (stages of no
    phase) and ``uncovered_ms`` (no stage); they add up to ``step_ms``, the step's own length.
    ``warmup``: a warmup step (left out of the findings unless asked)."""

    rank: int | None
    source: str = ""
    step: int
    step_ms: float
    generation_ms: float
    training_ms: float
    transition_ms: float
    other_ms: float
    uncovered_ms: float
    transitions: dict[str, float] = {}
    warmup: bool = False


def _phase(name: str) -> str:
    return phase_of(name) or "other"


@functools.lru_cache(maxsize=4096)
def _order(name: str) -> tuple[int, int, str]:
    """Which stage an instant counts for where several run: ``PRIORITY``'s order of their
    phases, then ``TRANSITIONS``' order, then the name (computed once a name)."""
    return (
        PRIORITY.index(_phase(name)),
        TRANSITIONS.index(name) if name in TRANSITIONS else 0,
        name,
    )


def _winner(active: dict[str, int]) -> str | None:
    """The stage an instant counts for, of the stages running then (name -> open count)."""
    return min((n for n, k in active.items() if k > 0), key=_order, default=None)


_AT = operator.itemgetter(0, 1)  # an edge's time, then ends before starts


def split_step(step: Range, stages: Iterable[Range]) -> dict[str, float]:
    """The step's microseconds per part: each of ``PRIORITY`` and ``uncovered``, and each
    transition by name (``t:<name>``); stages are clipped to the step. Times are taken
    relative to the step's start (at epoch microseconds ``ts + dur`` rounds)."""
    lo, hi = 0.0, step.dur
    edges: list[tuple[float, int, str]] = []
    for r in stages:
        a, b = max(r.ts - step.ts, lo), min(r.ts - step.ts + r.dur, hi)
        if b > a:
            edges += [(a, 1, r.name), (b, -1, r.name)]
    out: dict[str, float] = dict.fromkeys((*PRIORITY, "uncovered"), 0.0)
    active: dict[str, int] = defaultdict(int)
    at = lo
    for t, delta, name in sorted(edges, key=_AT):
        winner = _winner(active)
        if t > at and winner is not None:
            phase = _phase(winner)
            out[phase] += t - at
            if phase == "transition":
                out[f"t:{winner}"] = out.get(f"t:{winner}", 0.0) + t - at
        at = max(at, t)
        active[name] += delta
    out["uncovered"] = max(step.dur - sum(out[p] for p in PRIORITY), 0.0)
    return out


def phase_rows(
    ranges: Sequence[Range], warmup: set[tuple[int | None, str, int]] | None = None
) -> list[PhaseRow]:
    """Per rank (and source) and step that has its own step range, the step split into its
    parts (``split_step``), in rank then step order; ``warmup``: (rank, source, step) of
    warmup steps."""
    # each step's and stage's place in ``ranges``, not the range (a range file holds millions)
    steps: dict[tuple[int | None, str, int], tuple[float, int]] = {}  # dur, place
    stages: dict[tuple[int | None, str, int], array[int]] = defaultdict(lambda: array("q"))
    ranges = of_kind(ranges, "step", "stage")
    cols = columns(ranges, stepped=True)
    for i, rank, source, step, kind, dur in cols.rows(
        "at", "ranks", "sources", "steps", "kinds", "dur"
    ):
        if dur < 0:
            continue
        key = (rank, source, step)
        if kind == "step":
            if key not in steps or dur > steps[key][0]:
                steps[key] = (dur, i)
        else:
            stages[key].append(i)
    out = []
    for key in sorted(steps, key=lambda k: (rank_order(k[0]), k[1], k[2])):
        step = ranges[steps[key][1]]
        us = split_step(step, [ranges[i] for i in stages.get(key, ())])
        out.append(
            PhaseRow(
                rank=key[0],
                source=key[1],
                step=key[2],
                step_ms=step.dur / 1000.0,
                generation_ms=us["generation"] / 1000.0,
                training_ms=us["training"] / 1000.0,
                transition_ms=us["transition"] / 1000.0,
                other_ms=us["other"] / 1000.0,
                uncovered_ms=us["uncovered"] / 1000.0,
                transitions={
                    name: us[f"t:{name}"] / 1000.0 for name in TRANSITIONS if f"t:{name}" in us
                },
                warmup=key in (warmup or set()),
            )
        )
    return out
