"""A timeline's size budget: which operators to merge, and whose to leave out, so it fits.

The Perfetto UI parses a JSON trace inside the browser tab (its trace processor is WebAssembly,
with a 4 GB address space, and a JSON event takes several times its text size once parsed), so a
merged trace must stay well below that. ``plan`` decides from the statistics of a first pass
(``Stats``: per rank-step cell, operator bytes by duration bin; per thread and cell, counts):

1. merge operators shorter than a threshold, per thread, into ``merged: N ops`` slices: the
   smallest threshold (of ``EDGES``, up to ``CAP_US``) whose estimated size fits;
2. if none does, keep the operators (merged at ``CAP_US``) of the slowest rank-step cells only,
   as many as fit: the others keep their ``ALWAYS`` longest operators alone.

Steps, stages and custom ranges always stay, and so do the ``ALWAYS`` longest operators of every
rank; if those alone exceed the budget, ``BudgetError``.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.timeline.event import Thread

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "ALWAYS",
    "CAP_US",
    "DEFAULT_MB",
    "BudgetError",
    "BudgetFacts",
    "Plan",
    "Stats",
    "Tally",
    "budget_facts",
    "budget_line",
    "event_bytes",
    "plan",
]

#: The default budget, in MB of uncompressed JSON: Perfetto's JSON importer holds the parsed
#: trace in the tab's WebAssembly memory (4 GB at most), several times the text's size.
DEFAULT_MB = 256
#: Operators per rank that are never merged or left out: its longest.
ALWAYS = 16
#: The longest merge threshold (us): past it, a merged slice would hide whole kernels.
CAP_US = 1000.0
#: Bin edges (us) of operator durations: 0, then 0.1 us to 10 s, ten per decade.
EDGES: list[float] = [0.0] + [round(10 ** (e / 10), 6) for e in range(-10, 71)]
_BINS = len(EDGES)
#: What one written slice costs beyond its name and category, and one merged slice in all.
_EVENT = 84
MERGED_BYTES = 130
_NONE = float("-inf")  # the step of an operator in none, as ``Stats.longest`` orders it
#: Threads whose counts ``plan`` turns into arrays at once (each a row of ``_BINS`` floats
#: and a few temporaries of it: about 5 MB a block, whatever the number of ranks).
_ROWS = 1024


class _Facts(TypedDict):
    merged_below_us: float
    merged_operators: int
    merged_slices: int
    left_out_operators: int
    always_kept_per_rank: int


class BudgetFacts(_Facts, total=False):
    """What the budget did (``otherData.budget`` of the trace): operators merged below
    ``merged_below_us`` into slices, left out, kept per rank; ``max_bytes`` the budget,
    ``operators_of`` the [rank, step] cells whose operators were kept."""

    max_bytes: int
    operators_of: list[list[str | int | None]]


@dataclass
class Tally:
    """What the budget did: operators merged, slices they became, operators left out."""

    merged: int = 0
    slices: int = 0
    left_out: int = 0


def budget_facts(
    plan: Plan, tally: Tally, max_bytes: int | None, ranks: dict[int, int | None]
) -> BudgetFacts:
    """What ``plan`` did, as ``tally`` counted it (``ranks``: each track's rank, by pid)."""
    facts: BudgetFacts = {
        "merged_below_us": plan.below_us,
        "merged_operators": tally.merged,
        "merged_slices": tally.slices,
        "left_out_operators": tally.left_out,
        "always_kept_per_rank": ALWAYS,
    }
    if max_bytes is not None:
        facts["max_bytes"] = max_bytes
    if plan.full is not None:
        facts["operators_of"] = [[rank_label(ranks.get(pid)), step] for pid, step in plan.chosen]
    return facts


class BudgetError(ValueError):
    """Steps, stages, ranges and the longest operators alone exceed the budget."""


def event_bytes(name: str, cat: str) -> int:
    """The estimated size of one written operator slice."""
    return _EVENT + len(name) + len(cat)


Cell = tuple[int, int | None]  # (track pid, step or None)


@dataclass
class Stats:
    """What the first pass counted: per cell, operator bytes by duration bin; per (cell,
    thread), operators by bin; per track, its longest operators; per cell, its step's length."""

    cell_bytes: dict[Cell, list[float]] = field(default_factory=dict)
    thread_counts: dict[tuple[Cell, Thread], list[int]] = field(default_factory=dict)
    #: per track, a heap of (dur, size, the step as a number, cell): a step of None is
    #: before any (a cell's None is not ordered against a number: ties raised TypeError)
    longest: dict[int, list[tuple[float, int, float, Cell]]] = field(default_factory=dict)
    step_us: dict[Cell, float] = field(default_factory=dict)
    operators: int = 0

    def add(
        self, pid: int, step: int | None, thread: Thread, name: str, cat: str, dur: float
    ) -> None:
        cell = (pid, step)
        b = bisect_right(EDGES, dur) - 1 if dur > 0 else 0
        size = event_bytes(name, cat)
        row = self.cell_bytes.get(cell)
        if row is None:
            row = self.cell_bytes[cell] = [0.0] * _BINS
        row[b] += size
        counts = self.thread_counts.get((cell, thread))
        if counts is None:
            counts = self.thread_counts[(cell, thread)] = [0] * _BINS
        counts[b] += 1
        top = self.longest.setdefault(pid, [])
        item = (dur, size, _NONE if step is None else step, cell)
        if len(top) < ALWAYS:
            heapq.heappush(top, item)
        elif dur > top[0][0]:
            heapq.heapreplace(top, item)
        self.operators += 1


@dataclass
class Plan:
    """How the detail is written: operators shorter than ``below_us`` merged (0: none); per
    track, the length from which an operator always stays; the cells whose operators are
    written (None: all; the others keep only those that always stay), slowest first."""

    below_us: float = 0.0
    always_us: dict[int, float] = field(default_factory=dict)
    full: frozenset[Cell] | None = None
    estimate: int = 0
    chosen: tuple[Cell, ...] = ()  # ``full``, slowest first

    @property
    def active(self) -> bool:
        return self.below_us > 0 or self.full is not None


def plan(stats: Stats, fixed: int, budget: int) -> Plan:
    """The least merging, then the most cells, that fit ``budget`` bytes with ``fixed`` bytes of
    headers, steps, stages and ranges."""
    import numpy as np

    always = {
        pid: min(d for d, *_ in top) for pid, top in stats.longest.items() if len(top) >= ALWAYS
    }
    cells = list(stats.cell_bytes)
    if not cells:
        return Plan(estimate=fixed)
    index = {c: i for i, c in enumerate(cells)}
    n = len(cells)
    hist = np.array([stats.cell_bytes[c] for c in cells])
    kept = _from_bin(hist)  # (cells, thresholds): bytes of operators at least EDGES[k] long
    runs = np.zeros_like(kept)
    rows = list(stats.thread_counts)
    for lo in range(0, len(rows), _ROWS):  # a block of threads at a time: flat in the ranks
        block = rows[lo : lo + _ROWS]
        counts = np.array([stats.thread_counts[r] for r in block], dtype=np.float64)
        k_kept = _from_bin(counts)
        k_short = counts.sum(axis=1, keepdims=True) - k_kept
        # runs of short operators: at most one more than twice the kept (nesting splits a run
        # at a kept slice's start and end); expected, were the kept ones scattered,
        # s (k + 1) / (s + k)
        scattered = 1.5 * k_short * (k_kept + 1) / np.maximum(k_short + k_kept, 1)
        np.add.at(
            runs,
            [index[c] for c, _ in block],
            np.minimum(np.minimum(k_short, 2 * k_kept + 1), scattered),
        )
    own = np.zeros((n, _BINS + 1))  # always-kept bytes below each threshold
    own_n = np.zeros((n, _BINS + 1))  # and how many: each splits a run in two
    own_total = np.zeros(n)
    for top in stats.longest.values():
        for dur, size, _, cell in top if len(top) >= ALWAYS else ():
            b = bisect_right(EDGES, dur) - 1 if dur > 0 else 0
            own[index[cell], b + 1 :] += size
            own_n[index[cell], b + 1 :] += 1
            own_total[index[cell]] += size
    size_in = kept + (runs + 2 * own_n) * MERGED_BYTES + own
    totals = fixed + size_in.sum(axis=0)
    cap = bisect_right(EDGES, CAP_US) - 1
    for k in range(cap + 1):
        if totals[k] <= budget:
            return Plan(EDGES[k], always if k else {}, None, int(totals[k]))
    order = sorted(range(n), key=lambda i: (-stats.step_us.get(cells[i], 0.0), i))
    base = fixed + own_total.sum()
    if base > budget:
        raise BudgetError(
            f"steps, stages, ranges and the {ALWAYS} longest operators of every "
            f"rank alone take {base / 1e6:,.0f} MB, over the budget of "
            f"{budget / 1e6:,.0f} MB"
        )
    extra = np.cumsum([size_in[i, cap] - own_total[i] for i in order])
    fit = int(np.searchsorted(extra, budget - base, side="right"))
    estimate = int(base + (extra[fit - 1] if fit else 0))
    chosen = tuple(cells[i] for i in order[:fit])
    return Plan(EDGES[cap], always, frozenset(chosen), estimate, chosen)


def _from_bin(hist: np.ndarray) -> np.ndarray:
    """Column k: the sum of bins k.. (k = 0..bins; the last column, nothing)."""
    import numpy as np

    rev = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]
    return np.concatenate([rev, np.zeros((hist.shape[0], 1))], axis=1)


def budget_line(facts: BudgetFacts, max_mb: float) -> str:
    """One line on what the budget merged and left out."""
    parts = []
    if facts["merged_operators"]:
        parts.append(
            f"{facts['merged_operators']:,} operators shorter than "
            f"{facts['merged_below_us']:g} us merged into {facts['merged_slices']:,} "
            "slices"
        )
    if facts["left_out_operators"]:
        parts.append(
            f"{facts['left_out_operators']:,} operators left out (kept: those of "
            f"{len(facts.get('operators_of', [])):,} slowest rank-steps, and the "
            f"{facts['always_kept_per_rank']} longest of every rank)"
        )
    return f"to fit --max-mb {max_mb:g}: " + ("; ".join(parts) or "nothing merged")
