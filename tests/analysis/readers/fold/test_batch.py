"""A batch folded in columns (``fold_batch``) gives what one event at a time gives."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.device.launches import Launches
from mindspeed_prof.analysis.readers.events import Event, EventArgs, number
from mindspeed_prof.analysis.readers.fold import Collector
from mindspeed_prof.analysis.readers.fold import device as fold_device
from mindspeed_prof.analysis.readers.fold.batch import floats, match, split
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.testing.kineto import cuda_events


def _event(d: dict[str, Any]) -> Event:
    a = d.get("args") or {}
    return Event(
        ph=d.get("ph", "X"),
        cat=d.get("cat", ""),
        name=d.get("name", ""),
        ts=d.get("ts"),
        dur=d.get("dur"),
        tid=d.get("tid"),
        pid=d.get("pid"),
        args=EventArgs(correlation=a.get("correlation"), stream=a.get("stream")) if a else None,
    )


def _fold(events: list[Event], batch: int) -> TraceData:
    data = TraceData(Path("t.json"), "torch", 0, "", 0)
    c = Collector()
    for i in range(0, len(events), batch):
        c.add(events[i : i + batch])
    c.finish(data, None)
    return data


def _same(a: TraceData, b: TraceData) -> None:
    assert a.ranges == b.ranges and a.ops == b.ops and a.kernels == b.kernels
    assert a.runtime == b.runtime and a.device == b.device and a.problems == b.problems
    assert a.stream_idle == b.stream_idle and a.launch_stats == b.launch_stats
    assert a.classified == b.classified and a.notes == b.notes


def test_floats_read_numbers_as_number_does() -> None:
    got = floats([1, 2.5, "3.5", None, float("inf"), "x", float("nan"), 2**70])
    assert got[:3].tolist() == [1.0, 2.5, 3.5] and got[7] == float(2**70)
    assert np.isnan(got[3:7]).all()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.none(),
            st.integers(-(2**62), 2**62),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        max_size=30,
    )
)
def test_floats_of_numbers_and_nones_are_number_of_each(values: list[Any]) -> None:
    """Numbers with None among them (an instant event has no dur) as ``number`` reads each."""
    want = [number(v) for v in values]
    got = floats(values).tolist()
    assert [None if g != g else g for g in got] == want


def test_split_sorts_events_by_what_they_are() -> None:
    events = [
        _event(e)
        for e in (
            {"cat": "kernel", "ts": 1, "dur": 2},
            {"cat": "cuda_runtime", "ts": 1, "dur": 1},
            {"cat": "cpu_op", "ts": 1, "dur": 1},
            {"cat": "kernel", "ts": 1},
            {"cat": "kernel", "ts": 1, "dur": -1},
            {"cat": "kernel", "ts": 1, "dur": 1e12},
            {"cat": "mtia_ccp_events", "ts": 1, "dur": 1},
            {"ph": "i", "name": "[memory]", "ts": 1, "args": {"stream": 1}},
            {"ph": "i", "name": "other", "ts": 1},
            {"cat": "gpu_user_annotation", "ts": 1, "dur": 1},
        )
    ]
    sp = split(events)
    assert (sp.device.tolist(), sp.runtime.tolist(), sp.host.tolist()) == ([0], [1], [2, 7])
    assert (sp.untimed.tolist(), sp.negative.tolist(), sp.endless.tolist(), sp.unread.tolist()) == (
        [3],
        [4],
        [5],
        [6],
    )


def test_match_takes_the_last_launch_before_each_op() -> None:
    got = match(
        np.array([0, 2, 5]),
        [7, 8, 7],
        np.array([10.0, 20.0, 30.0]),
        np.array([1.0, 2.0, 3.0]),
        np.array([1, 3, 6]),
        [7, 8, 7],
        Launches(),
    )
    assert got is not None
    assert got[0].tolist() == [10.0, 20.0, 30.0] and got[1].tolist() == [1.0, 2.0, 3.0]
    assert got[2].all()
    kept = Launches()  # an earlier batch's launch
    kept.update([9], np.array([5.0]), np.array([0.5]))
    got = match(np.array([4]), [9], np.array([40.0]), np.array([4.0]), np.array([1]), [9], kept)
    assert got is not None and got[0].tolist() == [5.0]  # its own launch comes after it
    got = match(np.zeros(0, int), [], np.zeros(0), np.zeros(0), np.array([1]), [3], Launches())
    assert got is not None and got[2].tolist() == [False]  # no launch before it: it waits
    assert np.isnan(got[0]).all() and np.isnan(got[1]).all()
    assert (
        match(
            np.array([0]), ["a"], np.array([1.0]), np.array([1.0]), np.array([1]), ["a"], Launches()
        )
        is None
    )  # ids that are not integers: one at a time


@pytest.mark.parametrize("batch", [3, 50, 10_000])
def test_any_batch_size_folds_as_one_event_at_a_time(batch: int) -> None:
    events = [_event(e) for e in cuda_events(steps=3, kernels_per_stage=8, seed=2)]
    _same(_fold(events, batch), _fold(events, 1))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.integers(2, 9))
def test_shuffled_launches_and_overflow_fold_alike(seed: int, batch: int, pending: int) -> None:
    """Kernels before their launches (waiting), launches kept over ``PENDING`` (their older
    half dropped mid-batch): batches of any size give what one event at a time gives."""
    rng = random.Random(seed)
    events = [_event(e) for e in cuda_events(steps=2, kernels_per_stage=6, seed=seed % 7)]
    window = rng.randint(1, 12)
    for i in range(0, len(events), window):  # shuffled a window at a time
        part = events[i : i + window]
        rng.shuffle(part)
        events[i : i + window] = part
    old = fold_device.PENDING
    fold_device.PENDING = pending
    try:
        _same(_fold(events, batch), _fold(events, 1))
    finally:
        fold_device.PENDING = old


def _fold_each(events: list[Event], batch: int, monkeypatch: pytest.MonkeyPatch) -> TraceData:
    """``_fold`` with every device segment taken one event at a time (the reference)."""
    with monkeypatch.context() as m:
        m.setattr(fold_device, "match", lambda *_: None)
        return _fold(events, batch)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(2, 40), st.floats(0, 0.5))
def test_ops_waiting_for_launches_fold_as_one_at_a_time(
    seed: int, batch: int, pending: int, lost: float
) -> None:
    """Kernels before their launches, in this batch or a later one, and kernels whose launch
    the file lacks (launched before the capture began: they wait to the end): the columns give
    what one event at a time gives, ops waiting from earlier batches or not."""
    rng = random.Random(seed)
    events = [_event(e) for e in cuda_events(steps=2, kernels_per_stage=6, seed=seed % 7)]
    events = [e for e in events if e.cat != "cuda_runtime" or rng.random() >= lost]
    window = rng.randint(1, 30)
    for i in range(0, len(events), window):
        part = events[i : i + window]
        rng.shuffle(part)
        events[i : i + window] = part
    old = fold_device.PENDING
    fold_device.PENDING = pending
    try:
        with pytest.MonkeyPatch.context() as mp:
            _same(_fold(events, batch), _fold_each(events, batch, mp))
    finally:
        fold_device.PENDING = old


def test_ops_waiting_at_the_end_keep_no_launch() -> None:
    """A kernel whose launch the file lacks counts from minus infinity (launched before the
    capture), in columns as one at a time; its launch found in a later batch, from it."""
    events = [_event(e) for e in cuda_events(steps=2, kernels_per_stage=4, seed=1)]
    kernels = [i for i, e in enumerate(events) if e.cat == "kernel" and e.args is not None]
    launch = next(
        i
        for i, e in enumerate(events)
        if e.cat == "cuda_runtime"
        and e.args is not None
        and e.args.correlation == events[kernels[0]].args.correlation  # type: ignore[union-attr]
    )
    gone = events[:launch] + events[launch + 1 :]
    moved = [events[kernels[0]], *(e for i, e in enumerate(events) if i != kernels[0])]
    with pytest.MonkeyPatch.context() as mp:
        for case in (gone, moved):
            for batch in (1, 5, 10_000):
                _same(_fold(case, batch), _fold_each(case, batch, mp))
