"""Stage and custom ranges (``prof.stage``, ``mstx.range``, ``mstx_timer_decorator``, user
annotations) per name and rank, and the time in them that no host operator ran."""

from __future__ import annotations

import statistics
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.readers import Range
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.range_cols import columns
from mindspeed_prof.analysis.readers.range_table import RangeTable, as_table, of_kind
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

#: How many of the ranges that hold a stage's no-op time ``no_op_rows`` names.
NO_OP_RANGES = 3


def stage_order(name: str) -> tuple[int, str]:
    """The RL loop's order of stages, then the transitions (``STAGE_ORDER``), other names after
    them by name."""
    return (STAGE_ORDER.index(name) if name in STAGE_ORDER else len(STAGE_ORDER), name)


def stage_rows(ranges: Sequence[Range]) -> list[StageRow]:
    """Per stage and rank of ``ranges``: executions, total, mean and max milliseconds, and the
    time no host operator ran (where every execution's is known)."""
    # per stage: its runs' milliseconds and known bare times (not the ranges: a range file
    # holds millions)
    times: dict[tuple[str, int | None, str], tuple[list[float], list[float]]] = {}
    stages = columns(ranges, "stage")
    for name, rank, source, dur, bare in stages.rows("names", "ranks", "sources", "dur", "bare"):
        slot = times.get(key := (name, rank, source))
        if slot is None:
            slot = times[key] = ([], [])
        slot[0].append(dur / 1000.0)
        if bare is not None:
            slot[1].append(bare)
    out = []
    for (stage, rank, source), (ms, bare) in sorted(
        times.items(), key=lambda kv: (stage_order(kv[0][0]), rank_order(kv[0][1]), kv[0][2])
    ):
        out.append(
            StageRow(
                stage=stage,
                rank=rank,
                source=source,
                count=len(ms),
                total_ms=sum(ms),
                mean_ms=sum(ms) / len(ms),
                max_ms=max(ms),
                no_op_ms=sum(bare) / 1000.0 if len(bare) == len(ms) else None,
            )
        )
    return out


def p95(values: list[float]) -> float:
    """95th percentile, interpolated between the closest ranks (the value itself for one)."""
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[18]


def _times(ranges: Sequence[Range]) -> tuple[Sequence[float], Sequence[float]]:
    """Each range's start and length, as columns (a ``RangeTable``'s own)."""
    if isinstance(ranges, RangeTable):
        return ranges.ts, ranges.dur
    return [r.ts for r in ranges], [r.dur for r in ranges]


def nesting(ranges: Sequence[Range]) -> Iterator[tuple[int, int]]:
    """``(parent, child)`` index pairs of ``ranges``: each range and the one it lies directly
    in on its thread (same rank, source and thread)."""
    by_thread: dict[tuple[int | None, str, str], array[int]] = defaultdict(lambda: array("q"))
    for i, rank, source, tid in columns(ranges).rows("at", "ranks", "sources", "tids"):
        by_thread[(rank, source, tid)].append(i)
    import numpy as np

    starts, durs = _times(ranges)
    start_col = np.asarray(starts, dtype=np.float64)
    dur_col = np.asarray(durs, dtype=np.float64)
    for ids in by_thread.values():
        idx = _by_start(start_col, dur_col, ids)
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


def _by_start(starts: np.ndarray, durs: np.ndarray, idx: array[int]) -> array[int]:
    """``idx`` in the order of their ranges' start, the longest first where two start together
    (a stable sort: ties keep ``idx``'s order); sorted as columns, not a key object per range
    (a range file holds millions)."""
    import numpy as np

    at = np.frombuffer(idx, dtype=np.int64) if len(idx) else np.zeros(0, np.int64)
    ts, dur = starts[at], durs[at]
    order = np.lexsort((-dur, ts))
    del ts, dur
    return array("q", np.frombuffer(idx, dtype=np.int64)[order].tobytes())


def self_times(ranges: Sequence[Range]) -> list[float]:
    """Each range's duration minus that of the ranges directly nested in it on its thread (us);
    the overlap from the gap between starts, never ``ts + dur`` (at epoch microseconds it
    rounds)."""
    return _self_times(ranges).tolist()


def _self_times(ranges: Sequence[Range]) -> array[float]:
    """``self_times`` as a column (a range file holds millions)."""
    starts, durs = _times(ranges)
    out = array("d", durs)
    for p, c in nesting(ranges):
        out[p] -= min(durs[c], durs[p] - (starts[c] - starts[p]))
    import numpy as np

    if len(out):
        col = np.frombuffer(out, dtype=np.float64)
        col[col < 0.0] = 0.0  # (``max(v, 0.0)``: NaN stays)
    return out


#: Ranges ``stage_of`` places at a time (its columns are this long, whatever the file's size).
STAGE_OF_SLICE = 1 << 14


def stage_of(ranges: Sequence[Range], stages: Sequence[Range]) -> list[str | None]:
    """The stage (same rank) whose run holds each range's start, or None."""
    import numpy as np

    by_rank: dict[int | None, tuple[array[float], array[float], list[str]]] = {}
    for rank, ts_, dur_, name in columns(stages).rows("ranks", "ts", "dur", "names"):
        cols = by_rank.get(rank)
        if cols is None:
            cols = by_rank[rank] = (array("d"), array("d"), [])
        cols[0].append(ts_)
        cols[1].append(dur_)
        cols[2].append(name)
    # per rank: its stages' starts in order (a stable sort, as ``list.sort``), their ends and
    # names (-1: none); the ranges placed a slice at a time, their starts and ranks as columns
    code = {rank: i for i, rank in enumerate(by_rank)}
    runs = []
    for ts_, dur_, names_ in by_rank.values():  # in the order of ``code``
        at = np.array(ts_, dtype=np.float64)
        order = np.argsort(at, kind="stable")
        runs.append(
            (
                at[order],
                (at + np.array(dur_, dtype=np.float64))[order],
                np.array([*(names_[i] for i in order.tolist()), None], dtype=object),
            )
        )
        del at, order
    out: list[str | None] = []
    placed = columns(ranges)
    placed_ts = placed.tsa
    rank_code = np.array([code.get(lab[0], -1) for lab in placed.table.labels] or [-1], np.int64)
    for lo in range(0, len(placed), STAGE_OF_SLICE):
        hi = lo + STAGE_OF_SLICE
        which, ts = rank_code[placed.label[lo:hi]], placed_ts[lo:hi]
        names = np.full(len(ts), None, dtype=object)
        for c, (starts, ends, named) in enumerate(runs):
            mine = np.flatnonzero(which == c)
            at = ts[mine]
            i = np.searchsorted(starts, at, side="right") - 1  # as ``bisect_right``
            held = (i >= 0) & (at <= ends[np.maximum(i, 0)])
            names[mine] = named[np.where(held, i, -1)]
        out += names.tolist()
    return out


def range_rows(ranges: Sequence[Range]) -> list[RangeRow]:
    """Per (name, rank): count, total, self, mean, p95 and max ms and the stage(s) it ran in;
    sorted by total."""
    import numpy as np

    custom = of_kind(ranges, "range")
    n = len(custom)
    selfs = np.frombuffer(_self_times(custom), dtype=np.float64) / 1e3
    stages = stage_of(custom, of_kind(ranges, "stage"))
    # per (name, rank), in columns (a range file holds millions): its runs' places in order
    cols = columns(custom)
    labels = cols.table.labels
    # each label's (name, rank) numbered in the order the ranges first hold it
    first = np.full(len(labels), n, dtype=np.int64)
    np.minimum.at(first, cols.label, np.arange(n, dtype=np.int64))
    keys: dict[tuple[str, int | None], int] = {}
    key_of = np.zeros(len(labels) or 1, dtype=np.int32)
    for code in np.argsort(first, kind="stable").tolist():
        if first[code] < n:
            rank, _, name, _, _ = labels[code]
            key_of[code] = keys.setdefault((name, rank), len(keys))
    group = key_of[cols.label]
    order = np.argsort(group, kind="stable").astype(np.int32)
    bounds = np.searchsorted(group[order], np.arange(len(keys) + 1)).tolist()
    del group
    ms_all = cols.dura / 1e3
    rows = []
    for (name, rank), g in keys.items():
        idx = order[bounds[g] : bounds[g + 1]]
        ms, owns = ms_all[idx].tolist(), selfs[idx].tolist()  # summed in order, as before
        where = {stages[i] for i in idx.tolist()}
        rows.append(
            RangeRow(
                name=name,
                rank=rank,
                stage=", ".join(sorted(s for s in where if s is not None)) or None,
                count=len(ms),
                total_ms=sum(ms),
                self_ms=sum(owns),
                mean_ms=sum(ms) / len(ms),
                p95_ms=p95(ms),
                max_ms=max(ms),
            )
        )
    return sorted(rows, key=lambda r: (-r.total_ms, r.name, rank_order(r.rank)))


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
    if not len(table) or np.isnan(np.frombuffer(table.bare, dtype=np.float64)).all():
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
