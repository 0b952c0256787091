"""Bare times from top-level host ops swept a slice at a time from disk: the same floats as the
union of all of them in memory (``device.breakdown.merge`` and ``intervals.covered``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.host_tops import bare_times, pieces
from mindspeed_prof.analysis.readers.intervals import bare_times as bare_times_in_memory
from mindspeed_prof.analysis.readers.intervals import merge
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.spill import Spilled

#: Tenths: sums of them round, so a different order of summing would show.
_T = st.integers(0, 400).map(lambda n: n / 10)
_SPAN = st.tuples(_T, st.integers(0, 60).map(lambda n: n / 10)).map(lambda t: (t[0], t[0] + t[1]))


def _runs(threads: list[list[tuple[float, float]]], block: int) -> list[Spilled]:
    out = []
    for spans in threads:
        run = Spilled("dd", block=block)
        for k, (lo, hi) in enumerate(spans):
            run.cols[0].append(lo)
            run.cols[1].append(hi)
            if k % 3 == 2:
                run.settle()
        run.settle()
        out.append(run)
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(_SPAN, max_size=30), max_size=3), st.integers(1, 6), st.booleans())
def test_pieces_are_the_union(threads, block, presort) -> None:
    if presort:  # as host ops come: each thread's in start order
        threads = [sorted(spans) for spans in threads]
    got = [p for lo, hi in pieces(_runs(threads, block)) for p in zip(lo.tolist(), hi.tolist())]
    assert got == merge([s for spans in threads for s in spans])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(_SPAN, max_size=30), min_size=1, max_size=3),
    st.lists(st.tuples(st.sampled_from(["stage", "range", "step"]), _SPAN), max_size=8),
    st.integers(1, 6),
    st.sampled_from([0.0, 0.3, 1e6 + 0.1]),
)
def test_bare_times_are_those_of_the_whole_union(threads, ranges, block, origin) -> None:
    threads = [sorted(spans) for spans in threads]
    given_ranges = [
        Range(0, kind, f"r{k}", None, lo + origin, hi - lo)
        for k, (kind, (lo, hi)) in enumerate(ranges)
    ]
    want = bare_times_in_memory(given_ranges, [s for spans in threads for s in spans], origin)
    assert bare_times(given_ranges, _runs(threads, block), origin) == want
