"""Stage and custom ranges (``prof.stage``, ``mstx.range``, ``mstx_timer_decorator``, user
annotations) per name and rank, and the time in them that no host operator ran."""

from __future__ import annotations

import statistics
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.range_cols import (
    Groups,
    by_start,
    column,
    distinct,
    spans,
    threads,
)
from mindspeed_prof.analysis.readers.range_table import Label, RangeTable, as_table
from mindspeed_prof.analysis.rows import NoOpRow, RangeRow, StageRow
from mindspeed_prof.config.schema import STAGE_ORDER

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "NO_OP_RANGES",
    "STAGE_OF_SLICE",
    "nesting",
    "no_op_rows",
    "p95",
    "range_rows",
    "self_bare",
    "self_times",
    "stage_of",
    "stage_order",
    "stage_rows",
    "with_bare",
]

K = TypeVar("K")

#: How many of the ranges that hold a stage's no-op time ``no_op_rows`` names.
NO_OP_RANGES = 3


def stage_order(name: str) -> tuple[int, str]:
    """The RL loop's order of stages, then the transitions (``STAGE_ORDER``), other names after
    them by name."""
    return (STAGE_ORDER.index(name) if name in STAGE_ORDER else len(STAGE_ORDER), name)


def _keyed(table: RangeTable, kind: str, key: Callable[[Label], K]) -> tuple[np.ndarray, list[K]]:
    """Per label of ``table``, the index of its key among those of ``kind``'s labels (-1:
    another kind), and the keys."""
    import numpy as np

    keys: dict[K, int] = {}
    of = [keys.setdefault(key(lab), len(keys)) if lab[1] == kind else -1 for lab in table.labels]
    return np.array(of or [-1], dtype=np.int64), list(keys)


def stage_rows(ranges: Sequence[Range]) -> list[StageRow]:
    """Per stage and rank of ``ranges``: executions, total, mean and max milliseconds, and the
    time no host operator ran (where every execution's is known)."""
    import numpy as np

    # per stage, a chunk of the ranges at a time (a range file holds millions): its runs'
    # milliseconds and known bare times summed in order
    table = as_table(ranges)
    of, keys = _keyed(table, "stage", lambda lab: (lab[2], lab[0], lab[3]))
    runs, known = Groups(len(keys)), Groups(len(keys))
    label, dur = column(table.label, np.int32), column(table.dur, np.float64)
    bare = column(table.bare, np.float64) if len(table.bare) else None  # (None: all unknown)
    for lo, hi in spans(len(table)):
        group = of[label[lo:hi]]
        mine = group >= 0
        group = group[mine]
        runs.add(group, dur[lo:hi][mine] / 1000.0)
        if bare is not None:
            bares = bare[lo:hi][mine]
            ok = ~np.isnan(bares)
            known.add(group[ok], bares[ok])
    out = []
    for k in sorted(
        np.flatnonzero(runs.count).tolist(),
        key=lambda k: (stage_order(keys[k][0]), rank_order(keys[k][1]), keys[k][2]),
    ):
        stage, rank, source = keys[k]
        count, total = int(runs.count[k]), float(runs.sums[0, k])
        out.append(
            StageRow(
                stage=stage,
                rank=rank,
                source=source,
                count=count,
                total_ms=total,
                mean_ms=total / count,
                max_ms=float(runs.most[k]),
                no_op_ms=float(known.sums[0, k]) / 1000.0 if known.count[k] == count else None,
            )
        )
    return out


def p95(values: list[float]) -> float:
    """95th percentile, interpolated between the closest ranks (the value itself for one)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def _p95_at(count: int) -> tuple[int, int]:
    """Of ``count`` values sorted, the first of the two ``p95`` interpolates between and its
    weight's twentieths (``statistics.quantiles``' inclusive formula)."""
    return divmod(19 * (count - 1), 20)


def nesting(ranges: Sequence[Range]) -> Iterator[tuple[int, int]]:
    """``(parent, child)`` index pairs of ``ranges``: each range and the one it lies directly
    in on its thread (same rank, source and thread)."""
    return _nested(as_table(ranges), None)


def _nested(table: RangeTable, kind: str | None) -> Iterator[tuple[int, int]]:
    """``nesting`` of the ranges of ``kind`` (any: None) in ``table``, as places in it."""
    import numpy as np

    starts, durs = table.ts, table.dur
    start_col, dur_col = column(starts, np.float64), column(durs, np.float64)
    for ids in threads(table, kind):
        idx = by_start(start_col, dur_col, ids)
        # relative to the thread's first start: at epoch microseconds ``ts + dur`` would round
        base = starts[idx[0]]
        stack: list[tuple[int, float]] = []  # (index, end)
        for i in idx:
            ts = starts[i] - base
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack:
                yield stack[-1][0], i
            stack.append((i, ts + durs[i]))


def self_times(ranges: Sequence[Range]) -> list[float]:
    """Each range's duration minus that of the ranges directly nested in it on its thread (us);
    the overlap from the gap between starts, never ``ts + dur`` (at epoch microseconds it
    rounds)."""
    return _self_times(as_table(ranges), None).tolist()


def _self_times(table: RangeTable, kind: str | None) -> array[float]:
    """``self_times`` of the ranges of ``kind`` (any: None) as a column of the table's places
    (the others': their duration)."""
    import numpy as np

    starts, durs = table.ts, table.dur
    out = array("d", durs)
    for p, c in _nested(table, kind):
        out[p] -= min(durs[c], durs[p] - (starts[c] - starts[p]))
    if len(out):
        col = np.frombuffer(out, dtype=np.float64)
        col[col < 0.0] = 0.0  # (``max(v, 0.0)``: NaN stays)
    return out


#: Ranges ``stage_of`` places at a time (its columns are this long, whatever the file's size).
STAGE_OF_SLICE = 1 << 14


class _Stages:
    """The runs of some stages per rank, in order of start, to place ranges of a table in:
    ``names`` the stages' names, ``codes`` each range's stage as an index into them."""

    def __init__(self, table: RangeTable, stages: Sequence[Range], kind: str | None) -> None:
        import numpy as np

        held = as_table(stages)
        labels = held.labels
        ranks = {r: i for i, r in enumerate(dict.fromkeys(lab[0] for lab in labels))}
        names = {s: i for i, s in enumerate(dict.fromkeys(lab[2] for lab in labels))}
        self.names = list(names)
        label = column(held.label, np.int32)
        keep = np.array([kind in (None, lab[1]) for lab in labels] or [False])[label]
        label = label[keep]
        rank = np.array([ranks[lab[0]] for lab in labels] or [0], dtype=np.int32)[label]
        name = np.array([names[lab[2]] for lab in labels] or [0], dtype=np.int32)[label]
        ts = column(held.ts, np.float64)[keep]
        end = ts + column(held.dur, np.float64)[keep]
        del label, keep
        # per rank its stages' starts in order (a stable sort, as ``list.sort``), ends, names
        if not _ascending(rank, ts):
            order = np.lexsort((ts, rank))
            rank, ts, end, name = rank[order], ts[order], end[order], name[order]
            del order
        cut = np.searchsorted(rank, np.arange(len(ranks) + 1)).tolist()
        self.runs = [(ts[a:b], end[a:b], name[a:b]) for a, b in zip(cut, cut[1:])]
        self.rank = np.array([ranks.get(lab[0], -1) for lab in table.labels] or [-1], np.int64)

    def codes(self, label: np.ndarray, ts: np.ndarray) -> np.ndarray:
        """For ranges of these labels and starts, the stage (of their rank) whose run holds
        the start: its index in ``names``, -1 where none."""
        import numpy as np

        which = self.rank[label]
        out = np.full(len(ts), -1, dtype=np.int32)
        for c in distinct(which).tolist():
            if c < 0 or not len(self.runs[c][0]):
                continue
            starts, ends, named = self.runs[c]
            mine = np.flatnonzero(which == c)
            at = ts[mine]
            i = np.searchsorted(starts, at, side="right") - 1  # as ``bisect_right``
            held = (i >= 0) & (at <= ends[np.maximum(i, 0)])
            out[mine] = np.where(held, named[np.maximum(i, 0)], -1)
        return out


def _ascending(rank: np.ndarray, ts: np.ndarray) -> bool:
    """Whether stages are in order of rank, then start (as one rank's written as they start)."""
    same = rank[:-1] == rank[1:]
    return bool(((rank[:-1] < rank[1:]) | same & (ts[:-1] <= ts[1:])).all())


def stage_of(ranges: Sequence[Range], stages: Sequence[Range]) -> list[str | None]:
    """The stage (same rank) whose run holds each range's start, or None."""
    import numpy as np

    table = as_table(ranges)
    places = _Stages(table, stages, None)
    names = np.array([*places.names, None], dtype=object)  # (-1: None)
    label, ts = column(table.label, np.int32), column(table.ts, np.float64)
    out: list[str | None] = []
    for lo in range(0, len(table), STAGE_OF_SLICE):
        hi = lo + STAGE_OF_SLICE
        out += names[places.codes(label[lo:hi], ts[lo:hi])].tolist()
    return out


def range_rows(ranges: Sequence[Range]) -> list[RangeRow]:
    """Per (name, rank): count, total, self, mean, p95 and max ms and the stage(s) it ran in;
    sorted by total."""
    import numpy as np

    # per (name, rank), a chunk of the ranges at a time (a range file holds millions): its runs'
    # and self milliseconds summed in order, the largest twentieth of its runs (for the p95)
    # and the stages its runs started in
    table = as_table(ranges)
    of, keys = _keyed(table, "range", lambda lab: (lab[2], lab[0]))
    label = column(table.label, np.int32)
    dur, ts = column(table.dur, np.float64), column(table.ts, np.float64)
    counts = np.zeros(len(table.labels), dtype=np.int64)
    for lo, hi in spans(len(table)):
        counts += np.bincount(label[lo:hi], minlength=len(counts))
    count = np.zeros(len(keys), dtype=np.int64)
    held_by = of[: len(counts)] >= 0  # (labels of custom ranges)
    np.add.at(count, of[: len(counts)][held_by], counts[held_by])
    top = [count[k] - _p95_at(count[k])[0] if count[k] > 1 else 1 for k in range(len(keys))]
    held: list[list[np.ndarray]] = [[] for _ in keys]
    selfs = np.frombuffer(_self_times(table, "range"), dtype=np.float64)
    places = _Stages(table, table, "stage")
    runs, first, where = Groups(len(keys), 2), np.full(len(keys), len(table)), set()
    for lo, hi in spans(len(table)):
        group = of[label[lo:hi]]
        mine = np.flatnonzero(group >= 0)
        group, ms = group[mine], dur[lo:hi][mine] / 1e3
        runs.add(group, ms, selfs[lo:hi][mine] / 1e3)
        stage = places.codes(label[lo:hi][mine], ts[lo:hi][mine])
        where.update(distinct(group * (len(places.names) + 1) + stage + 1).tolist())
        order = np.argsort(group, kind="stable")
        present, at = np.unique(group[order], return_index=True)
        ends = [*at[1:].tolist(), len(order)]
        for k, a, b in zip(present.tolist(), at.tolist(), ends):
            first[k] = min(first[k], lo + int(mine[order[a]]))
            held[k].append(ms[order[a:b]])
            if sum(map(len, held[k])) > 2 * top[k] + 64:
                held[k] = [_largest(held[k], top[k])]
    width = len(places.names) + 1  # (stage codes from -1)
    ran: dict[int, set[int]] = defaultdict(set)
    for s in where:
        ran[s // width].add(s % width - 1)
    rows = []
    for k in np.argsort(first, kind="stable").tolist():
        if not count[k]:
            continue
        name, rank = keys[k]
        n, total = int(count[k]), float(runs.sums[0, k])
        _, delta = _p95_at(n)
        low = np.sort(_largest(held[k], top[k]))[:2].tolist()
        rows.append(
            RangeRow(
                name=name,
                rank=rank,
                stage=", ".join(sorted(places.names[s] for s in ran[k] if s >= 0)) or None,
                count=n,
                total_ms=total,
                self_ms=float(runs.sums[1, k]),
                mean_ms=total / n,
                p95_ms=(low[0] * (20 - delta) + low[1] * delta) / 20 if n > 1 else low[0],
                max_ms=float(runs.most[k]),
            )
        )
    return sorted(rows, key=lambda r: (-r.total_ms, r.name, rank_order(r.rank)))


def _largest(parts: list[np.ndarray], keep: int) -> np.ndarray:
    """The ``keep`` largest of the values in ``parts``."""
    import numpy as np

    values = np.concatenate(parts)
    return np.partition(values, len(values) - keep)[len(values) - keep :]


def with_bare(spans: list[Range], traced: list[Range]) -> list[Range]:
    """A range file's ranges with the ``bare`` times (no host operator running) of the same
    capture's op trace: the n-th run of a stage or range in a step takes the n-th run's there
    (the two files keep time on different clocks, never in a different order)."""
    bare: dict[tuple[str, str, int | None], list[float | None]] = defaultdict(list)
    for r in sorted(traced, key=lambda r: r.ts):
        if r.kind in ("stage", "range"):
            bare[(r.kind, r.name, r.step)].append(r.bare)
    if not bare:
        return spans
    seen: dict[tuple[str, str, int | None], int] = defaultdict(int)
    out = list(spans)  # in their own order
    for j in sorted(range(len(spans)), key=lambda j: spans[j].ts):
        r = spans[j]
        key = (r.kind, r.name, r.step)
        runs, i = bare.get(key, []), seen[key]
        seen[key] += 1
        if i < len(runs) and runs[i] is not None:
            out[j] = r._replace(bare=runs[i])
    return out


def self_bare(ranges: Sequence[Range]) -> list[float]:
    """Each range's ``bare`` time (us; 0 unknown) less that of the ranges directly nested in it
    on its thread: where the time no operator ran is, innermost first."""
    out = [r.bare or 0.0 for r in ranges]
    for p, c in nesting(ranges):
        out[p] -= ranges[c].bare or 0.0
    return [max(v, 0.0) for v in out]


def no_op_rows(ranges: Sequence[Range]) -> list[NoOpRow]:
    """Per stage and rank, in captures that record host operators: the time no operator ran
    and the custom ranges inside the stage that hold it (``NO_OP_RANGES`` of them)."""
    import numpy as np

    table = as_table(ranges)
    known = column(table.bare, np.float64)
    if not len(known) or all(np.isnan(known[lo:hi]).all() for lo, hi in spans(len(table))):
        return []  # (no bare time known: a range file's ranges are not read one at a time)
    stages = [r for r in table if r.kind == "stage" and r.bare is not None]
    if not stages:
        return []
    custom = [r for r in table if r.kind == "range" and r.bare is not None]
    held: dict[tuple[str, int | None, str], dict[str, float]] = defaultdict(
        lambda: defaultdict(float)
    )
    for r, own, stage in zip(custom, self_bare(custom), stage_of(custom, stages)):
        if stage is not None and own > 0:
            held[(stage, r.rank, r.source)][r.name] += own / 1000.0
    runs: dict[tuple[str, int | None, str], list[Range]] = defaultdict(list)
    for r in stages:
        runs[(r.name, r.rank, r.source)].append(r)
    out = []
    for (stage, rank, source), rs in sorted(
        runs.items(), key=lambda kv: (stage_order(kv[0][0]), rank_order(kv[0][1]), kv[0][2])
    ):
        total = sum(r.dur for r in rs) / 1000.0
        bare = sum(r.bare or 0.0 for r in rs) / 1000.0
        top = sorted(held.get((stage, rank, source), {}).items(), key=lambda kv: -kv[1])
        out.append(
            NoOpRow(
                stage=stage,
                rank=rank,
                source=source,
                count=len(rs),
                total_ms=total,
                no_op_ms=bare,
                share=min(bare / total, 1.0) if total > 0 else 0.0,
                ranges=dict(top[:NO_OP_RANGES]),
            )
        )
    return out
