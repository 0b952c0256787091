"""``Launches`` keeps what a dict of correlation id -> (start, call) would, in the same order."""

from __future__ import annotations

import itertools
from typing import Union

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.device.launches import Launches

_Id = Union[int, str]
_ids = st.one_of(st.integers(0, 30), st.integers(2**63, 2**64), st.sampled_from(["a", "7"]))
_int_ids = st.integers(0, 30)
_op: st.SearchStrategy[tuple[str, list[_Id]]] = st.one_of(
    st.tuples(st.just("update"), st.lists(_int_ids, max_size=12)),
    st.tuples(st.just("update"), st.lists(_ids, max_size=6)),
    st.tuples(st.just("halve"), st.just([])),
    st.tuples(st.just("fills"), st.lists(_ids, max_size=12)),
)


def _fills(kept: dict[_Id, tuple[float, float]], ids: list[_Id], room: int) -> int | None:
    seen: set[_Id] = set()
    for k, c in enumerate(ids):
        if c not in kept and c not in seen:
            seen.add(c)
            room -= 1
            if room < 0:
                return k
    return None


@settings(max_examples=200, deadline=None)
@given(st.lists(_op, max_size=25), st.lists(_ids, max_size=10), st.integers(0, 6))
def test_launches_act_as_a_dict_halved_in_order(
    ops: list[tuple[str, list[_Id]]], probe: list[_Id], room: int
) -> None:
    ours, model = Launches(), dict[_Id, tuple[float, float]]()
    step = itertools.count()
    for what, ids in ops:
        if what == "update":
            ts = np.array([float(next(step)) for _ in ids])
            call = ts / 2
            ours.update(ids, ts, call)
            model.update(zip(ids, zip(ts.tolist(), call.tolist())))
        elif what == "halve":
            ours.halve()
            model = dict(itertools.islice(model.items(), len(model) // 2, None))
        else:
            assert ours.fills_at([0, *ids], 1, room) == (
                None if (k := _fills(model, ids, room)) is None else k + 1
            )
        assert len(ours) == len(model)
    ok, ts, call = ours.find(probe)
    want = [model.get(c) for c in probe]
    assert ok.tolist() == [w is not None for w in want]
    assert [(a, b) for a, b, hit in zip(ts.tolist(), call.tolist(), ok) if hit] == [
        w for w in want if w is not None
    ]
    for c in probe:
        assert ours.get(c) == model.get(c)
    ours.halve()  # what is left is in the dict's order: halving again keeps the same
    model = dict(itertools.islice(model.items(), len(model) // 2, None))
    assert [c for c in model if ours.get(c) is not None] == list(model)
    assert len(ours) == len(model)
