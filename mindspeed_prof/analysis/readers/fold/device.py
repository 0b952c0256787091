"""``fold.Collector``'s device side: device ops tied to the launch calls that started them,
and the per-step device breakdown they make.

A device op counts from its launch: the runtime call with its correlation id, before or after
it in the file.
"""

from __future__ import annotations

import itertools
import math
from typing import TypeVar

import numpy as np

from mindspeed_prof.analysis.readers.classify import CONFIG_RULE, classifier
from mindspeed_prof.analysis.readers.device.breakdown import breakdown
from mindspeed_prof.analysis.readers.device.launches import Launches
from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.readers.device.streams import LAUNCH_CALLS, stream_facts
from mindspeed_prof.analysis.readers.events import Corr, Event, Id, Lane
from mindspeed_prof.analysis.readers.fold.batch import Split, match
from mindspeed_prof.analysis.readers.model import TraceData

__all__ = ["PENDING", "DeviceFold"]

#: Launches waiting for their device op (and device ops for their launch): over this many, the
#: older half is dropped, and ops that then miss their launch are named in ``problems``.
PENDING = 1 << 16
_NAN = float("nan")
_K = TypeVar("_K")
_V = TypeVar("_V")
#: Where ``DeviceOps.add`` put an op: its stream and its index there.
_Where = tuple[Lane, int]


class DeviceFold:
    """Device ops a block per stream (``ops``, the rest in a temporary file) with the launch
    each counts from, the last ``PENDING`` launches, and the ops still waiting for theirs.
    ``comm_kernels``: the user's pattern of communication kernels (``--comm-kernels``); the
    one the capture records (its metadata's ``comm_kernels``) is read at ``finish``.
    """

    def __init__(self, comm_kernels: str = "") -> None:
        self.comm_kernels = comm_kernels
        self.ops = DeviceOps()
        self.launches = Launches()  # correlation -> start, counted dur
        self.waiting: dict[Corr, list[_Where]] = {}  # correlation -> ops without launch
        self.dropped = 0  # device ops dropped while waiting for their launch
        self.forgot = False  # launches dropped: a later device op may miss its own
        self.saw_launch = False  # the trace records launches (correlation ids on runtime calls)
        #: Device ops are kept relative to the first one's start: at epoch microseconds a double
        #: holds 0.25 us steps, so an end summed there would round; relative, ``ts + dur`` is exact.
        self.origin: float | None = None

    def add(
        self,
        events: list[Event],
        sp: Split,
        devs: list[Event],
        calls: list[Event],
        r_names: list[str],
    ) -> None:
        """The batch's launch calls and device ops, in segments that end where the launches
        kept would overflow ``PENDING`` (their older half is dropped there)."""
        corrs = [None if a is None else a.correlation for a in [e.args for e in calls]]
        counted = np.array([n in LAUNCH_CALLS for n in r_names], dtype=bool)
        r_pos = sp.runtime
        r_corr: list[Corr] = [c for c in corrs if c is not None]
        if len(r_corr) < len(corrs):  # calls without a correlation id launch nothing known
            keep = [c is not None for c in corrs]
            r_pos, counted = r_pos[keep], counted[keep]
        r_idx = r_pos.tolist()
        r_ts = sp.ts[r_pos]
        r_call = np.where(counted, sp.dur[r_pos], _NAN)
        d_pos = sp.device
        if len(d_pos) and self.origin is None:
            self.origin = float(sp.ts[d_pos[0]])
        r_lo = d_lo = 0
        while r_lo < len(r_idx) or d_lo < len(d_pos):
            r_hi, full = self._overflow(r_corr, r_lo)
            end = r_idx[r_hi - 1] + 1 if full else len(events)
            d_hi = int(np.searchsorted(d_pos, end))
            self._segment(
                events,
                sp,
                r_pos[r_lo:r_hi],
                r_corr[r_lo:r_hi],
                r_ts[r_lo:r_hi],
                r_call[r_lo:r_hi],
                d_pos[d_lo:d_hi],
                devs[d_lo:d_hi],
            )
            if len(self.launches) > PENDING:
                self.launches.halve()
                self.forgot = True
            r_lo, d_lo = r_hi, d_hi

    def _overflow(self, corr: list[Corr], lo: int) -> tuple[int, bool]:
        """Where the next segment of launch calls ends: after the one whose new id takes the
        launches kept over ``PENDING`` (and True), else at the end (and False)."""
        room = PENDING - len(self.launches)
        if len(corr) - lo <= room:
            return len(corr), False
        k = self.launches.fills_at(corr, lo, room)
        return (len(corr), False) if k is None else (k + 1, True)

    def _segment(
        self,
        events: list[Event],
        sp: Split,
        r_pos: np.ndarray,
        r_corr: list[Corr],
        r_ts: np.ndarray,
        r_call: np.ndarray,
        d_pos: np.ndarray,
        evs: list[Event],
    ) -> None:
        args = [e.args for e in evs]
        d_corr = [None if a is None else a.correlation for a in args]
        has = [c is not None for c in d_corr]
        ids = [c for c in d_corr if c is not None]
        with_id = d_pos[has] if len(d_pos) else d_pos
        got = match(r_pos, r_corr, r_ts, r_call, with_id, ids, self.launches)
        late = None if got is None else self._late(got, r_corr, r_ts, r_call, ids)
        if got is None or late is None:  # one at a time
            self._segment_each(events, sp, r_pos, r_corr, r_call, d_pos)
            return
        if len(r_corr):
            self.launches.update(r_corr, r_ts, r_call)
            self.saw_launch = True
        if not len(d_pos):
            return
        origin = self.origin
        assert origin is not None
        ts = sp.ts[d_pos] - origin  # exact for times near origin (Sterbenz)
        end = ts + sp.dur[d_pos]
        launch = ts.copy()
        call = np.full(len(d_pos), _NAN)
        mask = np.array(has, dtype=bool)
        found = got[2]
        launch[mask] = np.where(found, got[0] - origin, ts[mask])
        call[mask] = got[1]
        streams = [e.tid if a is None or a.stream is None else a.stream for e, a in zip(evs, args)]
        names = [
            e.name if a is None or a.collective is None else (e.name, True)
            for e, a in zip(evs, args)
        ]
        pids = [e.pid for e in evs]
        if late:  # where the ops that wait will be, before ``extend`` puts them there
            at = np.flatnonzero(mask)[np.flatnonzero(~found)].tolist()
            wheres = self._wheres(pids, streams, at)
        self.ops.extend(pids, streams, ts, end, launch, call, names)
        if late:
            for j, where in zip(at, wheres):
                self.waiting.setdefault(d_corr[j], []).append(where)

    def _late(
        self,
        got: tuple[np.ndarray, np.ndarray, np.ndarray],
        r_corr: list[Corr],
        r_ts: np.ndarray,
        r_call: np.ndarray,
        ids: list[Corr],
    ) -> bool | None:
        """Ops ``match`` found no launch before: each takes the first launch of its id in the
        segment (all come after it), as do the ops still waiting from earlier batches (which
        leave ``waiting``: set here); ``got`` is filled in. True where some ops are left to wait
        (not put in ``waiting`` yet), False where none; None where the waiting might pass
        ``PENDING`` (the one at a time path drops some there)."""
        launch, call, found = got
        missing = np.flatnonzero(~found).tolist()
        if not missing and not self.waiting:
            return False
        first: dict[Corr, int] = {}
        for k, c in enumerate(r_corr):
            if c not in first:
                first[c] = k
        # the waits a launch here ends: ``_launched`` pops them at the first launch of their id
        ends = [c for c in self.waiting if c in first]
        if len(self.waiting) + len(missing) > PENDING:  # it may pass it mid-segment
            return None
        origin = self.origin or 0.0
        for c in ends:
            k = first[c]
            ts, dur = float(r_ts[k]), float(r_call[k])
            for where in self.waiting.pop(c):
                self.ops.set_launch(where, ts - origin, dur)
        left = False
        for j in missing:
            after = first.get(ids[j])
            if after is None:
                left = True
            else:
                launch[j], call[j] = r_ts[after], r_call[after]
                found[j] = True
        return left

    def _wheres(self, pids: list[Id], streams: list[Id], at: list[int]) -> list[_Where]:
        """Where ``DeviceOps.extend`` will put the ops at ``at`` (indices into the segment's
        ops, in order): their stream and their index there."""
        out: list[_Where] = []
        counts: dict[Lane, int] = {}
        want = iter(at)
        nxt = next(want, None)
        for k, key in enumerate(zip(pids, streams)):
            n = counts.get(key)
            if n is None:
                col = self.ops.streams.get(key)
                n = col.n if col is not None else 0
            counts[key] = n + 1
            if k == nxt:
                out.append((key, n))
                nxt = next(want, None)
                if nxt is None:
                    break
        return out

    def _segment_each(
        self,
        events: list[Event],
        sp: Split,
        r_pos: np.ndarray,
        r_corr: list[Corr],
        r_call: np.ndarray,
        d_pos: np.ndarray,
    ) -> None:
        """A segment one event at a time, in file order."""
        calls = dict(zip(r_pos.tolist(), zip(r_corr, r_call.tolist())))
        for i in sorted([*calls, *d_pos.tolist()]):
            hit = calls.get(i)
            if hit is None:
                self._device_op(events[i], float(sp.ts[i]), float(sp.dur[i]))
            else:
                self._launched(hit[0], float(sp.ts[i]), hit[1])

    def _launched(self, corr: Corr, ts: float, call: float) -> None:
        """A launch call at ``ts``; ``call`` its duration where ``LAUNCH_CALLS`` counts it
        (NaN otherwise)."""
        self.launches.update([corr], np.array([ts]), np.array([call]))
        self.saw_launch = True
        if len(self.launches) > PENDING:  # kept after a match: a graph launches many kernels
            self.launches.halve()
            self.forgot = True
        for where in self.waiting.pop(corr, ()):  # a waiting op has set ``origin``
            self.ops.set_launch(where, ts - (self.origin or 0.0), call)

    def _device_op(self, ev: Event, ts: float, dur: float) -> None:
        """A device op, one at a time (its kernel's tally is the batch's)."""
        args = ev.args
        name = ev.name
        if self.origin is None:
            self.origin = ts
        origin = self.origin
        ts -= origin  # exact for times near origin (Sterbenz), as a trace's are
        if args is None:
            self.ops.add((ev.pid, ev.tid), ts, ts + dur, name, ts)
            return
        corr = args.correlation
        stream = (ev.pid, args.stream if args.stream is not None else ev.tid)
        collective = args.collective is not None
        launch = self.launches.get(corr) if corr is not None else None
        if launch is not None:
            self.ops.add(stream, ts, ts + dur, name, launch[0] - origin, launch[1], collective)
            return
        where = self.ops.add(stream, ts, ts + dur, name, ts, collective=collective)
        if corr is not None:  # its launch may come later in the file
            self.waiting.setdefault(corr, []).append(where)
            if len(self.waiting) > PENDING:
                kept = _newer_half(self.waiting)
                self.dropped += sum(len(w) for c, w in self.waiting.items() if c not in kept)
                self.waiting = kept

    def finish(self, data: TraceData, steps: list[tuple[int, float, float]]) -> None:
        """The per-step device breakdown, and what in it is doubtful. ``steps``: (number,
        start, duration), made relative to ``origin`` here as the device ops are."""
        if not self.ops.count:
            return
        o = self.origin or 0.0
        steps = [(n, lo - o, lo - o + dur) for n, lo, dur in steps]
        stages = [(r.name, r.step, r.ts - o, r.dur) for r in data.ranges if r.kind == "stage"]
        if self.saw_launch and not self.forgot:
            # Ops whose correlation id no launch in the file carries were launched before the
            # capture began (an earlier step's work still running) or by a call it did not
            # record: no traced step launched them, so they go to the row without a step.
            for waiting in self.waiting.values():
                for where in waiting:
                    self.ops.set_launch(where, -math.inf)
        data.classified = self.ops.classify(classifier(self.comm_kernels, self._recorded(data)))
        try:
            data.device = breakdown(self.ops, steps, stages)
            data.stream_idle, data.launch_stats = stream_facts(self.ops, steps)
            clashes = self.ops.comm_clashes()
        finally:
            self.ops.close()
        if not steps:
            data.notes.append(
                f"{data.path}: no ProfilerStep ranges; {self.ops.count:,} "
                "device events form one row"
            )
            for row in data.device:
                row.whole = row.stage is None
        if clashes:
            data.problems.append(
                f"{data.path}: {len(clashes)} collectives overlap another on "
                f"the same stream (first: {clashes[0][:60]!r}); their time is "
                "counted once"
            )
        missed = self.dropped + (sum(map(len, self.waiting.values())) if self.forgot else 0)
        if missed:
            data.problems.append(
                f"{data.path}: launches and their device ops lie far apart in "
                f"the file (over {PENDING} waiting): {missed} device ops may "
                "count from their own start instead of their launch"
            )

    @staticmethod
    def _recorded(data: TraceData) -> str:
        """The communication pattern the capture records (``comm_kernels`` in its metadata),
        "" when none; one that is no pattern is a problem, and left out."""
        given = data.meta.comm_kernels
        if not given:
            return ""
        from mindspeed_prof.config.validate import pattern_problem

        problem = pattern_problem(given) if isinstance(given, str) else "not a string"
        if problem is None:
            return str(given)
        data.problems.append(
            f"{data.path}: its {CONFIG_RULE} ({str(given)[:60]!r}) is "
            f"{problem}; device kernels classified without it"
        )
        return ""


def _newer_half(entries: dict[_K, _V]) -> dict[_K, _V]:
    """The later half of ``entries`` (in insertion order): dropping them half at a time costs
    O(1) an entry (a dict emptied from its front one key at a time rescans the gap each time)."""
    return dict(itertools.islice(entries.items(), len(entries) // 2, None))
