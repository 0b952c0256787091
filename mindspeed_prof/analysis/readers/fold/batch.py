"""A batch of events sorted for ``fold.Collector`` in columns, and its device ops matched to
their launches in numpy: the same results as taking the events one at a time, in file order.

``split`` reads each event's fields once (list comprehensions) and decides in numpy what each
is: untimed, out of range, device work, a runtime call, unread device work, or a host event
(a step, range or op, and ``[memory]`` events), which the collector folds one at a time.

``match`` gives each device op its launch: the last launch call with its correlation id before
it in the batch, else the one the collector kept from earlier batches; the ops it finds none
for are marked, for the collector to give them the first launch after them or keep them
waiting. It answers for integer ids; ``None`` otherwise, and the collector takes those events
one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mindspeed_prof.analysis.readers.device.launches import Launches, int_ids
from mindspeed_prof.analysis.readers.events import (
    DEVICE_CATS,
    HOST_CATS,
    RUNTIME_CATS,
    UNREAD_DEVICE,
    Corr,
    Event,
    Number,
    number,
)

__all__ = ["MAX_DUR_US", "Skipped", "Split", "floats", "match", "split"]

#: Events longer than this (28 hours, in us) are not times: named in ``problems``, left out.
MAX_DUR_US = 1e11
_NAN = float("nan")
_DEVICE, _RUNTIME, _UNREAD, _SKIP, _OTHER, _HOST = range(6)
_ROUTE: dict[str, int] = {
    **dict.fromkeys(HOST_CATS, _HOST),
    **dict.fromkeys(DEVICE_CATS, _DEVICE),
    **dict.fromkeys(RUNTIME_CATS, _RUNTIME),
    **dict.fromkeys(UNREAD_DEVICE, _UNREAD),
    "gpu_user_annotation": _SKIP,
}
_PH = {"X": 0, "i": 1, "C": 3}  # complete, instant, counter (``readers.counters``)
_NUMERIC = frozenset({int, float, type(None)})  # numpy reads None as NaN


def floats(values: list[Number]) -> np.ndarray:
    """``number`` of each value as a float64 column, NaN where it gives None (``number`` never
    gives NaN or infinity)."""
    if set(map(type, values)) <= _NUMERIC:
        try:
            out = np.array(values, dtype=np.float64)
        except OverflowError:
            out = None
        if out is not None:
            out[~np.isfinite(out)] = np.nan
            return out
    return np.array([np.nan if v is None else v for v in map(number, values)], dtype=np.float64)


@dataclass
class Split:
    """What each event of a batch is (indices in file order) and its times."""

    ts: np.ndarray
    dur: np.ndarray
    untimed: np.ndarray
    negative: np.ndarray
    endless: np.ndarray
    device: np.ndarray
    runtime: np.ndarray
    unread: np.ndarray
    host: np.ndarray  # complete host events and ``[memory]`` events, in file order
    counter: np.ndarray  # ``C`` events (``readers.counters`` keeps those of its category)
    host_op: np.ndarray  # of ``host``: complete events of a host op's category (``HOST_CATS``)


def split(events: list[Event]) -> Split:
    ph = np.fromiter(
        map(_PH.get, [e.ph for e in events], [2] * len(events)), dtype=np.int8, count=len(events)
    )
    route = np.fromiter(
        map(_ROUTE.get, [e.cat for e in events], [_OTHER] * len(events)),
        dtype=np.int8,
        count=len(events),
    )
    ts = floats([e.ts for e in events])
    dur = floats([e.dur for e in events])
    x = ph == 0
    timed = ~(np.isnan(ts) | np.isnan(dur))
    negative = x & timed & (dur < 0)
    endless = x & timed & (dur > MAX_DUR_US)
    ok = x & timed & ~negative & ~endless
    memory = np.flatnonzero(ph == 1)
    memory = (
        memory[
            [events[i].name == "[memory]" and events[i].args is not None for i in memory.tolist()]
        ]
        if len(memory)
        else memory
    )
    host = np.flatnonzero(ok & ((route == _OTHER) | (route == _HOST)))
    if len(memory):
        host = np.sort(np.concatenate([host, memory]))
    return Split(
        ts,
        dur,
        np.flatnonzero(x & ~timed),
        np.flatnonzero(negative),
        np.flatnonzero(endless),
        np.flatnonzero(ok & (route == _DEVICE)),
        np.flatnonzero(ok & (route == _RUNTIME)),
        np.flatnonzero(ok & (route == _UNREAD)),
        host,
        np.flatnonzero(ph == 3),
        (ph[host] == 0) & (route[host] == _HOST),
    )


def match(
    r_pos: np.ndarray,
    r_corr: list[Corr],
    r_ts: np.ndarray,
    r_call: np.ndarray,
    d_pos: np.ndarray,
    d_corr: list[Corr],
    launches: Launches,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Each device op's launch time and counted call duration (``d_*``: ops with an id, at
    file positions ``d_pos``; ``r_*``: launch calls) and whether it has one (no launch before
    it: NaN, NaN, False), or None when that needs the one at a time path (see the module's
    note)."""
    rc, dc = int_ids(r_corr), int_ids(d_corr)
    if rc is None or dc is None:
        return None
    nr, nd = len(rc), len(dc)
    launch = np.empty(nd, dtype=np.float64)
    call = np.empty(nd, dtype=np.float64)
    ok = np.zeros(nd, dtype=bool)
    if nr and nd:
        corr = np.concatenate([rc, dc])
        order = np.lexsort((np.concatenate([r_pos, d_pos]), corr))
        s_corr = corr[order]
        marker = np.where(order < nr, np.arange(len(order)), -1)
        last = np.maximum.accumulate(marker)  # the last launch at or before, in (id, position)
        where = np.empty(len(order), dtype=np.intp)
        where[order] = np.arange(len(order))
        r = last[where[nr:]]
        ok = (r >= 0) & (s_corr[np.maximum(r, 0)] == dc)
        ri = order[np.maximum(r, 0)]
        launch[ok] = r_ts[ri[ok]]
        call[ok] = r_call[ri[ok]]
    launch[~ok] = call[~ok] = _NAN
    if len(launches) and not ok.all():
        miss = np.flatnonzero(~ok)
        hit, ts, dur = launches.find(dc[miss])
        launch[miss[hit]], call[miss[hit]] = ts[hit], dur[hit]
        ok[miss[hit]] = True
    return launch, call, ok


class Skipped:
    """Events of one kind left out: how many, and the first one's name."""

    __slots__ = ("count", "first", "what")

    def __init__(self, what: str) -> None:
        self.what, self.count, self.first = what, 0, ""

    def add(self, events: list[Event], idx: np.ndarray) -> None:
        if len(idx):
            if not self.count:
                self.first = events[int(idx[0])].name
            self.count += len(idx)

    def problem(self, path: object) -> str | None:
        return (
            f"{path}: {self.count} {self.what}, ignored (first: {self.first[:60]!r})"
            if self.count
            else None
        )
