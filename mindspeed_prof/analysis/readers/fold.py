"""The shared fold of every trace reader: events in, a capture's ``TraceData`` out.

``Collector`` takes Chrome trace events a batch at a time (Kineto JSON, our range files, the db
export's rows and torch_npu's trace_view turned into events) and keeps only what the analysis
needs: ranges, op self times, kernel and runtime totals, the device breakdown and memory.
"""

from __future__ import annotations

import bisect
import itertools
import math
from typing import TypeVar

import numpy as np

from mindspeed_prof.analysis.readers.classify import CONFIG_RULE, classifier
from mindspeed_prof.analysis.readers.counters import CounterFold
from mindspeed_prof.analysis.readers.device.breakdown import breakdown
from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.readers.device.streams import LAUNCH_CALLS, stream_facts
from mindspeed_prof.analysis.readers.events import (
    HOST_CATS,
    NAMES,
    PLAIN,
    STAGE,
    UNREAD_DEVICE,
    Corr,
    Event,
    Lane,
    name_kind,
)
from mindspeed_prof.analysis.readers.events import number as _num
from mindspeed_prof.analysis.readers.fold_batch import MAX_DUR_US, Skipped, Split, match, split
from mindspeed_prof.analysis.readers.host_ops import MAX_DEPTH, REORDER, HostOps
from mindspeed_prof.analysis.readers.intervals import bare_times, bare_times_of_columns
from mindspeed_prof.analysis.readers.memory_facts import MemoryEvents
from mindspeed_prof.analysis.readers.model import Range, TraceData, merge_tallies
from mindspeed_prof.analysis.readers.totals import Totals
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.config.validate import pattern_problem

__all__ = ["MAX_DEPTH", "MAX_DUR_US", "PENDING", "REORDER", "Collector", "bare_times", "collect"]

_STAGES = frozenset(STAGES)
#: Launches waiting for their device op (and device ops for their launch): over this many, the
#: older half is dropped, and ops that then miss their launch are named in ``problems``.
PENDING = 1 << 16
_NAN = float("nan")
_RANGE_CATS = ("user_annotation", "stage", "step", "iteration")  # iteration: prof.iteration
_K = TypeVar("_K")
_V = TypeVar("_V")
#: Where ``DeviceOps.add`` put an op: its stream and its index there.
_Where = tuple[Lane, int]


class Collector:
    """Ranges, op self times, device and memory facts of a trace, fed events a batch at a time.

    Memory holds steps and ranges (a few per step), totals per name, a reorder heap and a stack
    per host thread, the last ``PENDING`` launches, and device ops a block per stream (the rest
    wait in a temporary file, ``DeviceOps``). ``[memory]`` events are kept, 32 bytes each: only
    they grow with the trace (as do the steps). ``finish`` fills a ``TraceData``; problems (events
    without times, negative durations, device activity without steps, collectives overlapping on
    one stream, host ops out of order beyond the heap) are named in ``data.problems``.
    ``comm_kernels``: the user's pattern of communication kernels (``--comm-kernels``); the
    one the capture records (its metadata's ``comm_kernels``) is read at ``finish``.
    """

    def __init__(self, comm_kernels: str = "") -> None:
        self.comm_kernels = comm_kernels
        self.steps: list[tuple[float, float, int, float]] = []  # start, end, number, dur
        self.annotations: list[tuple[str, float, float, int | None, str]] = []
        self.host = HostOps()
        self.kernels = Totals[str]()  # by name: runs, device us
        self.runtime = Totals[str]()  # by name: calls, us
        self.device = DeviceOps()
        self.launches: dict[Corr, tuple[float, float]] = {}  # correlation -> start, counted dur
        self.waiting: dict[Corr, list[_Where]] = {}  # correlation -> ops without launch
        self.dropped = 0  # device ops dropped while waiting for their launch
        self.forgot = False  # launches dropped: a later device op may miss its own
        self.saw_launch = False  # the trace records launches (correlation ids on runtime calls)
        #: Device ops are kept relative to the first one's start: at epoch microseconds a double
        #: holds 0.25 us steps, so an end summed there would round; relative, ``ts + dur`` is exact.
        self.origin: float | None = None
        self.untimed = Skipped("complete events ('X') without ts or dur")
        self.negative = Skipped("events end before they start (negative dur)")
        self.endless = Skipped(f"events last longer than {MAX_DUR_US / 3.6e9:.0f} hours")
        self.memory = MemoryEvents()
        self.unread: dict[str, int] = {}  # UNREAD_DEVICE category -> events
        self.counts = CounterFold()  # ``C`` events of category ``count`` (``readers.counters``)

    def _launched(self, corr: Corr, ts: float, call: float) -> None:
        """A launch call at ``ts``; ``call`` its duration where ``LAUNCH_CALLS`` counts it
        (NaN otherwise)."""
        self.launches[corr] = (ts, call)
        self.saw_launch = True
        if len(self.launches) > PENDING:  # kept after a match: a graph launches many kernels
            self.launches = _newer_half(self.launches)
            self.forgot = True
        for where in self.waiting.pop(corr, ()):  # a waiting op has set ``origin``
            self.device.set_launch(where, ts - (self.origin or 0.0), call)

    def _device_op(self, ev: Event, ts: float, dur: float) -> None:
        """A device op, one at a time (its kernel's tally is the batch's)."""
        args = ev.args
        name = ev.name
        if self.origin is None:
            self.origin = ts
        origin = self.origin
        ts -= origin  # exact for times near origin (Sterbenz), as a trace's are
        if args is None:
            self.device.add((ev.pid, ev.tid), ts, ts + dur, name, ts)
            return
        corr = args.correlation
        stream = (ev.pid, args.stream if args.stream is not None else ev.tid)
        collective = args.collective is not None
        launch = self.launches.get(corr) if corr is not None else None
        if launch is not None:
            self.device.add(stream, ts, ts + dur, name, launch[0] - origin, launch[1], collective)
            return
        where = self.device.add(stream, ts, ts + dur, name, ts, collective=collective)
        if corr is not None:  # its launch may come later in the file
            self.waiting.setdefault(corr, []).append(where)
            if len(self.waiting) > PENDING:
                kept = _newer_half(self.waiting)
                self.dropped += sum(len(w) for c, w in self.waiting.items() if c not in kept)
                self.waiting = kept

    def add(self, events: list[Event]) -> None:
        """Fold a batch of events in (in file order)."""
        if not events:
            return
        sp = split(events)
        for i in sp.counter.tolist():
            self.counts.add(events[i])
        self.untimed.add(events, sp.untimed)
        self.negative.add(events, sp.negative)
        self.endless.add(events, sp.endless)
        for i in sp.unread.tolist():
            cat = events[i].cat
            self.unread[cat] = self.unread.get(cat, 0) + 1
        if len(sp.host):
            self._host(events, sp)
        devs = [events[i] for i in sp.device.tolist()]
        calls = [events[i] for i in sp.runtime.tolist()]
        self.kernels.add([e.name for e in devs], sp.dur[sp.device])
        self.runtime.add(r_names := [e.name for e in calls], sp.dur[sp.runtime])
        if devs or calls:
            self._launches(events, sp, devs, calls, r_names)

    def _host(self, events: list[Event], sp: Split) -> None:
        """The batch's host events: ops, ranges, ``[memory]`` events."""
        names, op = NAMES, self.host.op
        for i, ts, dur in zip(sp.host.tolist(), sp.ts[sp.host].tolist(), sp.dur[sp.host].tolist()):
            ev = events[i]
            if ev.ph != "X":
                alloc = self.memory.add(ev)
                if alloc is not None:
                    self.host.alloc((ev.pid, ev.tid), *alloc)
                continue
            cat, name = ev.cat, ev.name
            what = names.get(name)
            if what is PLAIN and cat in HOST_CATS:  # the usual: a host op
                op((ev.pid, ev.tid), ts, dur, name)
            else:
                self._host_event(ev, cat, ts, dur)
        self.host.flush()

    def _launches(
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
                self.launches = _newer_half(self.launches)
                self.forgot = True
            r_lo, d_lo = r_hi, d_hi

    def _overflow(self, corr: list[Corr], lo: int) -> tuple[int, bool]:
        """Where the next segment of launch calls ends: after the one whose new id takes the
        launches kept over ``PENDING`` (and True), else at the end (and False)."""
        room = PENDING - len(self.launches)
        if len(corr) - lo <= room:
            return len(corr), False
        launches = self.launches
        seen: set[Corr] = set()
        for k in range(lo, len(corr)):
            c = corr[k]
            if c not in launches and c not in seen:
                seen.add(c)
                room -= 1
                if room < 0:
                    return k + 1, True
        return len(corr), False

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
        got = None
        if not self.waiting:
            with_id = d_pos[has] if len(d_pos) else d_pos
            got = match(
                r_pos,
                r_corr,
                r_ts,
                r_call,
                with_id,
                [c for c in d_corr if c is not None],
                self.launches,
            )
        if got is None:  # one at a time
            self._segment_each(events, sp, r_pos, r_corr, r_call, d_pos)
            return
        if len(r_corr):
            self.launches.update(zip(r_corr, zip(r_ts.tolist(), r_call.tolist())))
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
        launch[mask] = got[0] - origin
        call[mask] = got[1]
        streams = [e.tid if a is None or a.stream is None else a.stream for e, a in zip(evs, args)]
        names = [
            e.name if a is None or a.collective is None else (e.name, True)
            for e, a in zip(evs, args)
        ]
        self.device.extend([e.pid for e in evs], streams, ts, end, launch, call, names)

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

    def _host_event(self, ev: Event, cat: str, ts: float, dur: float) -> None:
        """A complete event that is neither device work nor a runtime call: a step, a stage
        or custom range, or a host op."""
        name = ev.name
        what = NAMES.get(name)
        if what is None:
            what = name_kind(name)
        if what.__class__ is int:
            self.steps.append((ts, ts + dur, what, dur))
        elif what is STAGE or cat in _RANGE_CATS:
            step = _num(ev.args.step) if ev.args is not None else None
            self.annotations.append(
                (name, ts, dur, int(step) if step is not None else None, str(ev.tid))
            )
        elif cat in HOST_CATS:
            self.host.op((ev.pid, ev.tid), ts, dur, name)

    def finish(self, data: TraceData, default_step: object) -> None:
        """Fill ``data`` (its ranges, ops, kernels, runtime, device, memory, problems)."""
        late, deep = self.host.finish(data.ops)
        merge_tallies(data.kernels, self.kernels.as_dict())
        merge_tallies(data.runtime, self.runtime.as_dict())
        steps = sorted(self.steps)
        starts = [s[0] for s in steps]
        fallback = default_step if isinstance(default_step, int) else None
        for ts, _, n, dur in steps:  # its own dur: ``end - ts`` rounds at epoch microseconds
            data.ranges.append(Range(data.rank, "step", f"ProfilerStep#{n}", n, ts, dur))
        for name, ts, dur, step, tid in self.annotations:
            if step is None:
                i = bisect.bisect_right(starts, ts) - 1
                step = steps[i][2] if i >= 0 and ts <= steps[i][1] else fallback
            data.ranges.append(
                Range(
                    data.rank, "stage" if name in _STAGES else "range", name, step, ts, dur, tid=tid
                )
            )
        if self.host.tops[0]:
            data.ranges = bare_times_of_columns(
                data.ranges, *self.host.tops, self.host.origin or 0.0
            )  # host ops are kept relative
        self._device_rows(data, [(n, s, d) for s, _, n, d in steps])
        data.counters, skipped = self.counts.finish(data.path)
        data.problems.extend(skipped)
        if len(self.memory):
            data.memory = self.memory.memory(self.host.allocs[self.memory.on_device()], data.ranges)
        data.problems.extend(
            p
            for p in (s.problem(data.path) for s in (self.untimed, self.negative, self.endless))
            if p
        )
        if late:
            data.notes.append(
                f"{data.path}: {late:,} host ops out of order; self times approximate"
            )
        if deep:
            data.notes.append(
                f"{data.path}: {deep:,} host ops nested over {MAX_DEPTH} deep; "
                "self times approximate"
            )
        for cat, count in self.unread.items():
            data.notes.append(
                f"{data.path}: {count:,} {UNREAD_DEVICE[cat]}, not read as device time"
            )
        if self.unread:
            data.meta.unread_device = dict(self.unread)

    def _device_rows(self, data: TraceData, steps: list[tuple[int, float, float]]) -> None:
        """The per-step device breakdown, and what in it is doubtful. ``steps``: (number,
        start, duration), made relative to ``origin`` here as the device ops are."""
        if not self.device.count:
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
                    self.device.set_launch(where, -math.inf)
        data.classified = self.device.classify(classifier(self.comm_kernels, self._recorded(data)))
        try:
            data.device = breakdown(self.device, steps, stages)
            data.stream_idle, data.launch_stats = stream_facts(self.device, steps)
            clashes = self.device.comm_clashes()
        finally:
            self.device.close()
        if not steps:
            data.notes.append(
                f"{data.path}: no ProfilerStep ranges; {self.device.count:,} "
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


def collect(data: TraceData, events: list[Event], default_step: object) -> None:
    """``Collector`` over one list of events (readers that hold them all: db, torch_npu)."""
    fold = Collector()
    fold.add(events)
    fold.finish(data, default_step)
