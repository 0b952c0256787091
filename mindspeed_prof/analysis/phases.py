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
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.held_rows import HeldRows, NamedCells
from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.rows import Row
from mindspeed_prof.config.schema import TRANSITIONS, phase_of

if TYPE_CHECKING:
    import numpy as np

__all__ = ["PRIORITY", "PhaseRow", "PhaseTable", "phase_rows", "split_step"]

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


#: ``PhaseRow``'s times, in its order: each a column of ``PhaseTable``.
_TIMES = ("step_ms", "generation_ms", "training_ms", "transition_ms", "other_ms", "uncovered_ms")


class PhaseTable(HeldRows[PhaseRow]):
    """``PhaseRow``s held as columns (a range file has one a step): ``whos`` the (rank,
    source) of each ``who`` code, ``steps``, one column a time of ``_TIMES``, ``transitions``
    each row's, ``warmup``."""

    __slots__ = ("_codes", "_times", "steps", "transitions", "warmup", "who", "whos")

    def __init__(self) -> None:
        self.whos: list[tuple[int | None, str]] = []
        self._codes: dict[tuple[int | None, str], int] = {}
        self.who = array("i")
        self.steps: list[int] = []
        self._times = tuple(array("d") for _ in _TIMES)
        self.transitions = NamedCells()
        self.warmup = bytearray()

    def append(self, row: PhaseRow) -> None:
        who = (row.rank, row.source)
        code = self._codes.get(who)
        if code is None:
            code = self._codes[who] = len(self.whos)
            self.whos.append(who)
        self.who.append(code)
        self.steps.append(row.step)
        for col, name in zip(self._times, _TIMES):
            col.append(getattr(row, name))
        self.transitions.append(row.transitions)
        self.warmup.append(row.warmup)

    def _len(self) -> int:
        return len(self.steps)

    def _row(self, i: int) -> PhaseRow:
        rank, source = self.whos[self.who[i]]
        return PhaseRow(
            rank=rank,
            source=source,
            step=self.steps[i],
            **{name: col[i] for col, name in zip(self._times, _TIMES)},
            transitions=self.transitions.row(i),
            warmup=bool(self.warmup[i]),
        )


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
) -> PhaseTable:
    """Per rank (and source) and step that has its own step range, the step split into its
    parts (``split_step``), in rank then step order; ``warmup``: (rank, source, step) of
    warmup steps."""
    # each step's and stage's place in ``ranges``, grouped by (rank, step) in numpy: a range
    # file holds millions, and a dict per step took more than the rows made
    import numpy as np

    cols = columns(ranges, "step", "stage", stepped=True)
    table, labels = cols.table, cols.table.labels
    dur = cols.dura
    kept = np.flatnonzero(~(dur < 0))  # (NaN kept, as ``dur < 0`` did)
    dur = dur[kept]
    place = kept if cols.at is None else cols.at[kept]
    index: dict[tuple[int | None, str], int] = {}
    who_of = np.zeros(len(labels) or 1, dtype=np.int64)
    is_step = np.zeros(len(labels) or 1, dtype=bool)
    for i, lab in enumerate(labels):
        who_of[i] = index.setdefault((lab[0], lab[3]), len(index))
        is_step[i] = lab[1] == "step"
    whos, values = list(index), table.steps
    n_steps = max(len(values), 1)
    label, step = cols.label[kept], cols.step[kept].astype(np.int64)
    del cols, kept
    key = who_of[label] * n_steps + step
    steps_at = np.flatnonzero(is_step[label])
    # per (rank, step): its longest step range, the first of equal ones (a NaN one: as read)
    if np.isnan(dur[steps_at]).any():
        best: dict[int, tuple[float, int]] = {}
        for k, d, i in zip(key[steps_at].tolist(), dur[steps_at].tolist(), steps_at.tolist()):
            if k not in best or d > best[k][0]:
                best[k] = (d, i)
        chosen = np.array([i for _, i in best.values()], dtype=np.int64)
    else:
        order = np.lexsort((steps_at, -dur[steps_at], key[steps_at]))
        by = key[steps_at][order]
        chosen = steps_at[order][np.r_[True, by[1:] != by[:-1]] if len(by) else []]
    # in rank then step order
    who_rank = np.zeros(len(whos) or 1, dtype=np.int64)
    who_rank[sorted(range(len(whos)), key=lambda w: (rank_order(whos[w][0]), whos[w][1]))] = (
        np.arange(len(whos))
    )
    numbered = [(v, i) for i, v in enumerate(values) if v is not None]
    step_rank = np.zeros(n_steps, dtype=np.int64)
    step_rank[[i for _, i in sorted(numbered)]] = np.arange(len(numbered))
    chosen = chosen[np.lexsort((step_rank[step[chosen]], who_rank[who_of[label[chosen]]]))]
    # each (rank, step)'s stages, in the ranges' order
    stages_at = np.flatnonzero(~is_step[label])
    stages_at = stages_at[np.argsort(key[stages_at], kind="stable")]
    stage_keys = key[stages_at]
    lo = np.searchsorted(stage_keys, key[chosen], side="left")
    hi = np.searchsorted(stage_keys, key[chosen], side="right")
    stage_places = place[stages_at]
    del stages_at, stage_keys, dur
    out = PhaseTable()
    for at, a, b in _in_chunks(chosen, lo, hi):
        w, v = whos[int(who_of[label[at]])], values[int(step[at])]
        assert v is not None  # (stepped)
        key_ = (w[0], w[1], v)
        step_range = table[int(place[at])]
        us = split_step(step_range, [table[i] for i in stage_places[a:b].tolist()])
        out.append(
            PhaseRow(
                rank=key_[0],
                source=key_[1],
                step=key_[2],
                step_ms=step_range.dur / 1000.0,
                generation_ms=us["generation"] / 1000.0,
                training_ms=us["training"] / 1000.0,
                transition_ms=us["transition"] / 1000.0,
                other_ms=us["other"] / 1000.0,
                uncovered_ms=us["uncovered"] / 1000.0,
                transitions={
                    name: us[f"t:{name}"] / 1000.0 for name in TRANSITIONS if f"t:{name}" in us
                },
                warmup=key_ in (warmup or set()),
            )
        )
    return out


#: Steps ``phase_rows`` reads a time (its lists are this long, whatever the file's size).
CHUNK = 1 << 14


def _in_chunks(*cols: np.ndarray) -> Iterator[tuple[int, ...]]:
    """The columns' values a row at a time, as ints, ``CHUNK`` rows' lists at a time."""
    for lo in range(0, len(cols[0]), CHUNK):
        yield from zip(*(c[lo : lo + CHUNK].tolist() for c in cols))
