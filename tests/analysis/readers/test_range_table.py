"""``RangeTable``: ranges held as columns behave as the list of ``Range`` they replace."""

from __future__ import annotations

import math
from array import array

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.range_table import RangeTable, of_kind, stepped

_TIMES = st.floats(allow_nan=False, width=64)
_RANGES = st.lists(
    st.builds(
        Range,
        st.none() | st.integers(-3, 2**40),
        st.sampled_from(["step", "stage", "range"]),
        st.text(max_size=4),
        st.none() | st.integers(-(2**63), 2**64),
        _TIMES,
        _TIMES,
        st.sampled_from(["", "host-a"]),
        st.sampled_from(["", "7", "\u00e9"]),
        st.none() | _TIMES,
    ),
    max_size=30,
)


@given(_RANGES, st.data())
def test_a_table_reads_as_its_list(ranges: list[Range], data: st.DataObject) -> None:
    table = RangeTable.of(ranges)
    assert len(table) == len(ranges) and bool(table) == bool(ranges)
    assert list(table) == ranges and table == ranges
    assert [tuple(map(type, r)) for r in table] == [tuple(map(type, r)) for r in ranges]
    if ranges:
        i = data.draw(st.integers(-len(ranges), len(ranges) - 1))
        assert table[i] == ranges[i]
    assert list(table[1::2]) == ranges[1::2]
    assert list(of_kind(table, "stage", "step")) == of_kind(ranges, "stage", "step")
    assert list(stepped(table)) == stepped(ranges)
    labels, steps, cols = table.columns()
    assert RangeTable.from_columns(labels, steps, [bytes(c) for c in cols]) == ranges


@given(_RANGES, _RANGES, st.data())
def test_a_table_changes_as_its_list(a: list[Range], b: list[Range], data: st.DataObject) -> None:
    table, want = RangeTable.of(a), list(a)
    table += RangeTable.of(b)
    want += b
    assert table == want
    if want:
        i = data.draw(st.integers(-len(want), len(want) - 1))
        table[i], want[i] = want[0], want[0]
        del table[i], want[i]
        assert table == want
    table.insert(0, Range(1, "step", "s", 1, 0.0, 1.0))
    want.insert(0, Range(1, "step", "s", 1, 0.0, 1.0))
    assert table == want


@given(_RANGES, _RANGES, st.data())
def test_a_table_holds_bare_times_only_once_a_range_has_one(
    a: list[Range], b: list[Range], data: st.DataObject
) -> None:
    """A range file's ranges never know a bare time: their table keeps no column of NaN for
    them (8 of its 32 bytes a range); once one range knows it, every range has its place."""
    unknown = [r._replace(bare=None) for r in a]
    table = RangeTable.of(unknown)
    assert not len(table.bare)
    table.extend_coded(
        np.array([table.code((r.rank, r.kind, r.name, r.source, r.tid)) for r in unknown]),
        np.array([table.step_code(r.step) for r in unknown]),
        np.array([r.ts for r in unknown], dtype=np.float64),
        np.array([r.dur for r in unknown], dtype=np.float64),
    )
    want = unknown + unknown
    assert not len(table.bare) and list(table) == want
    for more in (b, RangeTable.of(b)):
        grown = RangeTable.of(want)
        grown += more
        assert grown == want + b
        assert len(grown.bare) == (len(grown) if any(r.bare is not None for r in b) else 0)
    labels, steps, cols = table.columns()
    assert RangeTable.from_columns(labels, steps, [bytes(c) for c in cols]) == want
    # (an entry cached before: a NaN a range)
    held = [bytes(c) for c in cols[:4]] + [array("d", [math.nan] * len(want)).tobytes()]
    assert RangeTable.from_columns(labels, steps, held) == want
