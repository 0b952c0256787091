"""``range_cols``: the passes that read a table's columns give what a pass over its ``Range``
tuples gives, across the slices they read a table in."""

from __future__ import annotations

import bisect
from collections import defaultdict
from unittest import mock

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis import ranges as ranges_mod
from mindspeed_prof.analysis.judgement.cells import Rows, per_step
from mindspeed_prof.analysis.judgement.judge import step_cells
from mindspeed_prof.analysis.ranges import p95, stage_order
from mindspeed_prof.analysis.readers import range_cols
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_cols import columns, steps_in
from mindspeed_prof.analysis.readers.range_table import RangeTable
from mindspeed_prof.analysis.rows import RangeRow, StageRow

_TIMES = st.floats(-1e6, 1e6) | st.just(float("nan"))
_RANGES = st.lists(
    st.builds(
        Range,
        st.none() | st.integers(0, 3),
        st.sampled_from(["step", "stage", "range"]),
        st.sampled_from(["a", "b", "actor_generate", "c"]),
        st.none() | st.integers(0, 4) | st.just(2**70),
        _TIMES,
        _TIMES,
        st.sampled_from(["", "host-a"]),
        st.sampled_from(["", "7"]),
        st.none() | st.floats(-1e6, 1e6),  # (a table holds an unknown bare time as NaN)
    ),
    max_size=40,
)
_FIELDS = {
    "ranks": 0,
    "kinds": 1,
    "names": 2,
    "steps": 3,
    "ts": 4,
    "dur": 5,
    "sources": 6,
    "tids": 7,
    "bare": 8,
}


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN, of the same type."""
    return type(a) is type(b) and (a == b or a != a and b != b)


@given(_RANGES, st.sets(st.sampled_from(["step", "stage", "range"])), st.booleans())
def test_columns_give_the_fields_of_the_kept_ranges_in_order(
    ranges: list[Range], kinds: set[str], stepped: bool
) -> None:
    table = RangeTable.of(ranges)
    want = [
        (i, r)
        for i, r in enumerate(ranges)
        if (not kinds or r.kind in kinds) and (not stepped or r.step is not None)
    ]
    with mock.patch.object(range_cols, "CHUNK", 3):  # several slices
        cols = columns(table, *sorted(kinds), stepped=stepped)
        got = list(cols.rows("at", *_FIELDS))
    assert len(cols) == len(want) == len(got)
    for (i, r), row in zip(want, got):
        assert row[0] == i
        assert all(_same(v, r[_FIELDS[f]]) for f, v in zip(_FIELDS, row[1:]))
    assert steps_in(table, *kinds) == {r.step for _, r in want if r.step is not None}


def _per_step(ranges: list[Range], kind: str) -> dict[str, dict[int, dict[object, float]]]:
    """``per_step`` as a pass over the tuples (what it was)."""
    out: dict[str, dict[int, dict[object, float]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(float))
    )
    for r in ranges:
        if r.kind == kind and r.step is not None and r.dur >= 0:
            out[r.name][r.step][(r.rank, r.source)] += r.dur / 1000.0
    return out


@given(_RANGES)
def test_cells_from_columns_are_the_cells_from_tuples(ranges: list[Range]) -> None:
    table = RangeTable.of(ranges)
    with mock.patch.object(range_cols, "CHUNK", 2):
        for kind in ("step", "stage", "range"):
            want = _per_step(ranges, kind)
            assert per_step(table, kind) == want
            rows = Rows[str]().add(table, kind, str)
            assert list(rows) == list(want) and all(rows[k] == want[k] for k in want)
            for k in want:  # steps and ranks in the same order too
                assert [(s, list(by)) for s, by in rows[k].items()] == [
                    (s, list(by)) for s, by in want[k].items()
                ]
        steps: dict[int, dict[object, float]] = defaultdict(lambda: defaultdict(float))
        for cells in _per_step(ranges, "step").values():
            for step, by in cells.items():
                for who, ms in by.items():
                    steps[step][who] += ms
        assert step_cells(table) == steps


@given(_RANGES, _RANGES)
def test_stage_of_in_slices_is_the_run_holding_each_start(
    ranges: list[Range], stages: list[Range]
) -> None:
    stages = [r for r in stages if r.ts == r.ts and r.dur == r.dur]
    runs: dict[int | None, list[Range]] = defaultdict(list)
    for s in stages:
        runs[s.rank].append(s)
    want = []
    for r in ranges:
        mine = sorted(runs.get(r.rank, []), key=lambda s: s.ts)
        i = bisect.bisect_right([s.ts for s in mine], r.ts) - 1
        held = i >= 0 and r.ts <= mine[i].ts + mine[i].dur
        want.append(mine[i].name if held else None)
    with mock.patch.object(ranges_mod, "STAGE_OF_SLICE", 3):
        assert ranges_mod.stage_of(RangeTable.of(ranges), RangeTable.of(stages)) == want


@given(_RANGES, _RANGES)
def test_columns_added_at_once_are_the_ranges_added_one_by_one(
    a: list[Range], b: list[Range]
) -> None:
    b = [r._replace(bare=None) for r in b]
    table = RangeTable.of(a)
    table.extend_coded(
        np.array([table.code((r.rank, r.kind, r.name, r.source, r.tid)) for r in b]),
        np.array([table.step_code(r.step) for r in b]),
        np.array([r.ts for r in b], dtype=np.float64),
        np.array([r.dur for r in b], dtype=np.float64),
    )
    want = RangeTable.of(a + b)
    assert table.labels == want.labels and table.steps == want.steps
    assert [bytes(c) for c in table.columns()[2]] == [bytes(c) for c in want.columns()[2]]


def _selfs(custom: list[Range]) -> list[float]:
    """Self times as a pass over the tuples (what it was): per thread in order of start, the
    longest first, each range's children off its time."""
    out = [r.dur for r in custom]
    by: dict[tuple[object, ...], list[int]] = defaultdict(list)
    for i, r in enumerate(custom):
        by[(r.rank, r.source, r.tid)].append(i)
    for ids in by.values():
        ids.sort(key=lambda i: (custom[i].ts, -custom[i].dur))
        base, stack = custom[ids[0]].ts, list[tuple[int, float]]()
        for i in ids:
            ts = custom[i].ts - base
            while stack and stack[-1][1] <= ts:
                stack.pop()
            if stack:
                p = stack[-1][0]
                out[p] -= min(custom[i].dur, custom[p].dur - (custom[i].ts - custom[p].ts))
            stack.append((i, ts + custom[i].dur))
    return [max(v, 0.0) for v in out]


def _range_rows(ranges: list[Range]) -> list[RangeRow]:
    """``range_rows`` as a pass over the tuples (what it was)."""
    custom = [r for r in ranges if r.kind == "range"]
    selfs = _selfs(custom)
    runs: dict[int | None, list[Range]] = defaultdict(list)
    for s in sorted((r for r in ranges if r.kind == "stage"), key=lambda s: s.ts):
        runs[s.rank].append(s)
    groups: dict[tuple[str, int | None], list[int]] = defaultdict(list)
    for i, r in enumerate(custom):
        groups[(r.name, r.rank)].append(i)
    rows = []
    for (name, rank), ids in groups.items():
        ms = [custom[i].dur / 1e3 for i in ids]
        where = set()
        for i in ids:
            mine = runs.get(rank, [])
            at = bisect.bisect_right([s.ts for s in mine], custom[i].ts) - 1
            if at >= 0 and custom[i].ts <= mine[at].ts + mine[at].dur:
                where.add(mine[at].name)
        rows.append(
            RangeRow(
                name=name,
                rank=rank,
                stage=", ".join(sorted(where)) or None,
                count=len(ms),
                total_ms=sum(ms),
                self_ms=sum(selfs[i] / 1e3 for i in ids),
                mean_ms=sum(ms) / len(ms),
                p95_ms=p95(ms),
                max_ms=max(ms),
            )
        )
    return sorted(rows, key=lambda r: (-r.total_ms, r.name, rank_order(r.rank)))


def _stage_rows(ranges: list[Range]) -> list[StageRow]:
    """``stage_rows`` as a pass over the tuples (what it was)."""
    times: dict[tuple[str, int | None, str], tuple[list[float], list[float]]] = {}
    for r in ranges:
        if r.kind == "stage":
            ms, bare = times.setdefault((r.name, r.rank, r.source), ([], []))
            ms.append(r.dur / 1000.0)
            if r.bare is not None:
                bare.append(r.bare)
    return [
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
        for (stage, rank, source), (ms, bare) in sorted(
            times.items(), key=lambda kv: (stage_order(kv[0][0]), rank_order(kv[0][1]), kv[0][2])
        )
    ]


_STEADY = st.floats(-1e6, 1e6)
_TIMED = st.lists(
    st.builds(
        Range,
        st.none() | st.integers(0, 2),
        st.sampled_from(["stage", "range", "step"]),
        st.sampled_from(["a", "b", "actor_generate"]),
        st.none() | st.integers(0, 3),
        _STEADY | st.sampled_from([0.0, 1.5, 3.0]),  # (ties: ranges starting together)
        _STEADY | st.sampled_from([0.0, 1.5, 3.0]),
        st.sampled_from(["", "host-a"]),
        st.sampled_from(["", "7"]),
        st.none() | st.floats(-1e6, 1e6),
    ),
    max_size=60,
)


@given(_TIMED)
def test_range_and_stage_rows_in_chunks_are_the_rows_of_the_tuples(ranges: list[Range]) -> None:
    """Sums in the same order (the same floats), p95 from the same two order statistics, the
    same stages, whatever the chunks a table is read in."""
    table = RangeTable.of(ranges)
    with mock.patch.object(range_cols, "CHUNK", 4):
        assert ranges_mod.range_rows(table) == _range_rows(ranges)
        assert ranges_mod.stage_rows(table) == _stage_rows(ranges)
