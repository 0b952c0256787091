"""The shared fold of every trace reader: events in, a capture's ``TraceData`` out.

``Collector`` takes Chrome trace events a batch at a time (Kineto JSON, our range files, the db
export's rows and torch_npu's trace_view turned into events) and keeps only what the analysis
needs: ranges, op self times, kernel and runtime totals, the device breakdown and memory.
"""

from __future__ import annotations

import bisect
import heapq
import math
from array import array
from typing import Any

from mindspeed_prof.analysis.readers.classify import CONFIG_RULE, classifier
from mindspeed_prof.analysis.readers.counters import CounterFold
from mindspeed_prof.analysis.readers.device import breakdown, merge
from mindspeed_prof.analysis.readers.device_ops import DeviceOps
from mindspeed_prof.analysis.readers.device_streams import LAUNCH_CALLS, stream_facts
from mindspeed_prof.analysis.readers.events import (
    DEVICE_CATS,
    HOST_CATS,
    RUNTIME_CATS,
    STEP_NAME,
    UNREAD_DEVICE,
    Event,
)
from mindspeed_prof.analysis.readers.events import number as _num
from mindspeed_prof.analysis.readers.intervals import covered
from mindspeed_prof.analysis.readers.model import (
    Memory,
    Range,
    Tally,
    TraceData,
    merge_tallies,
    tally,
)
from mindspeed_prof.config.schema import STAGES
from mindspeed_prof.config.validate import pattern_problem

__all__ = ["PENDING", "REORDER", "Collector", "bare_times", "collect"]

_STAGES = frozenset(STAGES)
#: Host ops of a thread are put back in start order through a heap of this many (torch writes
#: them sorted already); ops further out of order are named in ``notes``.
REORDER = 4096
#: Launches waiting for their device op (and device ops for their launch): over this many, the
#: older half is dropped, and ops that then miss their launch are named in ``problems``.
PENDING = 1 << 16
#: Host ops nested deeper than this on one thread (real traces nest a few dozen deep; a file of
#: ops that all start together would otherwise nest without end) close the innermost first.
MAX_DEPTH = 512
#: Events longer than this (28 hours, in us) are not times: named in ``problems``, left out.
MAX_DUR_US = 1e11
_NAN = float("nan")
#: A thread's heap holds items of one shape, ``(ts, kind, order, seq, what)``, in start order:
#: an op (``_OP``: ``order`` minus its duration, longer first; ``what`` its name) comes before
#: an allocation at the same time (``_ALLOC``: ``what`` its (bytes, device type)).
_OP, _ALLOC = 0, 1


class _Thread:
    """One host thread: its ops (and ``[memory]`` events) put back in start order through a
    heap of ``REORDER``, ops nested on a stack for their self times."""

    __slots__ = ("deep", "heap", "late", "last", "ops", "stack")

    def __init__(self) -> None:
        self.heap: list[tuple[Any, ...]] = []
        self.stack: list[list[Any]] = []  # [end, self_us, name]
        self.ops: dict[str, Tally] = {}  # name -> calls, self time
        self.last = float("-inf")
        self.late = 0
        self.deep = 0  # ops that found the stack MAX_DEPTH deep


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
        self.threads: dict[Any, _Thread] = {}
        self.kernels: dict[str, Tally] = {}
        self.runtime: dict[str, Tally] = {}
        self.device = DeviceOps()
        self.launches: dict[Any, tuple[float, float]] = {}  # correlation -> start, counted dur
        self.waiting: dict[Any, list[tuple[Any, int]]] = {}  # correlation -> ops without launch
        self.dropped = 0  # device ops dropped while waiting for their launch
        self.forgot = False  # launches dropped: a later device op may miss its own
        self.saw_launch = False  # the trace records launches (correlation ids on runtime calls)
        #: Device ops are kept relative to the first one's start: at epoch microseconds a double
        #: holds 0.25 us steps, so an end summed there would round; relative, ``ts + dur`` is exact.
        self.origin: float | None = None
        #: Host ops (and allocations) likewise, relative to the first one's start.
        self.host_origin: float | None = None
        self.untimed: list[Any] = [0, ""]
        self.negative: list[Any] = [0, ""]
        self.endless: list[Any] = [0, ""]
        self.memory = tuple(array("d") for _ in range(4))  # ts, allocated, reserved, device
        self.allocs: tuple[dict[str, Tally], dict[str, Tally]] = ({}, {})  # all, device
        self.seq = 0
        self.unread: dict[str, int] = {}  # UNREAD_DEVICE category -> events
        self.tops = (array("d"), array("d"))  # start, end of each top-level host op
        self.counts = CounterFold()  # ``C`` events of category ``count`` (``readers.counters``)

    def _host(self, ts: float) -> float:
        """``ts`` relative to the first host op's start (exact near it: Sterbenz)."""
        if self.host_origin is None:
            self.host_origin = ts
        return ts - self.host_origin

    def _thread(self, key: Any) -> _Thread:
        thread = self.threads.get(key)
        if thread is None:
            thread = self.threads[key] = _Thread()
        return thread

    def _push(self, thread: _Thread, item: tuple[Any, ...]) -> None:
        heapq.heappush(thread.heap, item)
        if len(thread.heap) > REORDER:
            self._take(thread, heapq.heappop(thread.heap))

    def _take(self, thread: _Thread, item: tuple[Any, ...]) -> None:
        """The thread's next item in start order: an op, or an allocation that the innermost
        op still open at its time made."""
        ts, kind, order, _, what = item
        stack = thread.stack
        if ts < thread.last:
            thread.late += 1
        thread.last = ts
        if kind == _ALLOC:
            size, dev = what
            for end, _, name in reversed(stack):
                if end >= ts:
                    tally(self.allocs[0], name, 1, size)
                    if dev == 1:
                        tally(self.allocs[1], name, 1, size)
                    break
            return
        dur = -order
        while stack and stack[-1][0] <= ts:
            self._pop(thread)
        if len(stack) >= MAX_DEPTH:
            thread.deep += 1
            self._pop(thread)
        if stack:
            stack[-1][1] -= min(dur, stack[-1][0] - ts)
        else:  # a top-level op: together they are the time the host ran operators
            self.tops[0].append(ts)
            self.tops[1].append(ts + dur)
        stack.append([ts + dur, dur, what])

    @staticmethod
    def _pop(thread: _Thread) -> None:
        _, self_us, name = thread.stack.pop()
        tally(thread.ops, name, 1, max(self_us, 0.0))

    def _launched(self, corr: Any, ts: float, call: float) -> None:
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
        args = ev.args
        corr = args.correlation if args else None
        stream = (ev.pid, args.stream if args and args.stream is not None else ev.tid)
        tally(self.kernels, ev.name, 1, dur)
        launch = self.launches.get(corr) if corr is not None else None
        if self.origin is None:
            self.origin = ts
        ts -= self.origin  # exact for times near origin (Sterbenz), as a trace's are
        collective = args is not None and args.collective is not None
        where = (self.device.add(stream, ts, ts + dur, ev.name, ts, collective=collective)
                 if launch is None else
                 self.device.add(stream, ts, ts + dur, ev.name, launch[0] - self.origin,
                                 launch[1], collective))
        if launch is None and corr is not None:  # its launch may come later in the file
            self.waiting.setdefault(corr, []).append(where)
            if len(self.waiting) > PENDING:
                kept = _newer_half(self.waiting)
                self.dropped += sum(len(w) for c, w in self.waiting.items() if c not in kept)
                self.waiting = kept

    def add(self, events: list[Event]) -> None:
        """Fold a batch of events in (in file order)."""
        for ev in events:
            if ev.ph == "i" and ev.name == "[memory]" and ev.args is not None:
                ts = _num(ev.ts)
                if ts is not None:
                    a = ev.args
                    size, dev = _num(a.bytes) or 0.0, _num(a.device_type)
                    for col, value in zip(self.memory, (ts, _num(a.allocated),
                                                        _num(a.reserved), dev)):
                        col.append(_NAN if value is None else value)
                    if size > 0:
                        self.seq += 1
                        self._push(self._thread((ev.pid, ev.tid)),
                                   (self._host(ts), _ALLOC, 0.0, self.seq, (size, dev)))
                continue
            if ev.ph != "X":
                if ev.ph == "C":
                    self.counts.add(ev)
                continue
            ts, dur = _num(ev.ts), _num(ev.dur)
            if ts is None or dur is None:
                _count(self.untimed, ev.name)
                continue
            if dur < 0:
                _count(self.negative, ev.name)
                continue
            if dur > MAX_DUR_US:
                _count(self.endless, ev.name)
                continue
            cat = ev.cat
            if cat == "gpu_user_annotation":  # Kineto's device-side copy of host annotations
                continue
            if cat in UNREAD_DEVICE:
                self.unread[cat] = self.unread.get(cat, 0) + 1
                continue
            if cat in DEVICE_CATS:
                self._device_op(ev, ts, dur)
                continue
            if cat in RUNTIME_CATS:
                tally(self.runtime, ev.name, 1, dur)
                if ev.args is not None and ev.args.correlation is not None:
                    self._launched(ev.args.correlation, ts,
                                   dur if ev.name in LAUNCH_CALLS else _NAN)
                continue
            m = STEP_NAME.match(ev.name)
            if m:
                self.steps.append((ts, ts + dur, int(m.group(1)), dur))
            elif ev.name in _STAGES or cat in ("user_annotation", "stage", "step", "iteration"):
                step = _num(ev.args.step) if ev.args is not None else None
                self.annotations.append((ev.name, ts, dur, int(step) if step is not None
                                         else None, str(ev.tid)))
            elif cat in HOST_CATS:
                self.seq += 1
                self._push(self._thread((ev.pid, ev.tid)),
                           (self._host(ts), _OP, -dur, self.seq, ev.name))

    def finish(self, data: TraceData, default_step: Any) -> None:
        """Fill ``data`` (its ranges, ops, kernels, runtime, device, memory, problems)."""
        late = deep = 0
        for thread in self.threads.values():
            while thread.heap:
                self._take(thread, heapq.heappop(thread.heap))
            while thread.stack:
                self._pop(thread)
            late += thread.late
            deep += thread.deep
            merge_tallies(data.ops, thread.ops)
        merge_tallies(data.kernels, self.kernels)
        merge_tallies(data.runtime, self.runtime)
        steps = sorted(self.steps)
        starts = [s[0] for s in steps]
        fallback = default_step if isinstance(default_step, int) else None
        for ts, _, n, dur in steps:  # its own dur: ``end - ts`` rounds at epoch microseconds
            data.ranges.append(Range(data.rank, "step", f"ProfilerStep#{n}", n, ts, dur))
        for name, ts, dur, step, tid in self.annotations:
            if step is None:
                i = bisect.bisect_right(starts, ts) - 1
                step = steps[i][2] if i >= 0 and ts <= steps[i][1] else fallback
            data.ranges.append(Range(data.rank, "stage" if name in _STAGES else "range", name,
                                     step, ts, dur, tid=tid))
        if self.tops[0]:
            data.ranges = bare_times(data.ranges, list(zip(*self.tops)),
                                     self.host_origin or 0.0)  # host ops are kept relative
        self._device_rows(data, [(n, s, d) for s, _, n, d in steps])
        data.counters, skipped = self.counts.finish(data.path)
        data.problems.extend(skipped)
        if self.memory[0]:
            data.memory = self._memory(data.ranges)
        for what, (count, first) in (("complete events ('X') without ts or dur", self.untimed),
                                     ("events end before they start (negative dur)",
                                      self.negative),
                                     (f"events last longer than {MAX_DUR_US / 3.6e9:.0f} hours",
                                      self.endless)):
            if count:
                data.problems.append(f"{data.path}: {count} {what}, ignored "
                                     f"(first: {first[:60]!r})")
        if late:
            data.notes.append(f"{data.path}: {late:,} host ops out of order; self times "
                              "approximate")
        if deep:
            data.notes.append(f"{data.path}: {deep:,} host ops nested over {MAX_DEPTH} deep; "
                              "self times approximate")
        for cat, count in self.unread.items():
            data.notes.append(f"{data.path}: {count:,} {UNREAD_DEVICE[cat]}, not read as "
                              "device time")
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
        data.classified = self.device.classify(classifier(self.comm_kernels,
                                                          self._recorded(data)))
        try:
            data.device = breakdown(self.device, steps, stages)
            data.stream_idle, data.launch_stats = stream_facts(self.device, steps)
            clashes = self.device.comm_clashes()
        finally:
            self.device.close()
        if not steps:
            data.notes.append(f"{data.path}: no ProfilerStep ranges; {self.device.count:,} "
                              "device events form one row")
            for row in data.device:
                row.whole = row.stage is None
        if clashes:
            data.problems.append(f"{data.path}: {len(clashes)} collectives overlap another on "
                                 f"the same stream (first: {clashes[0][:60]!r}); their time is "
                                 "counted once")
        missed = self.dropped + (sum(map(len, self.waiting.values())) if self.forgot else 0)
        if missed:
            data.problems.append(f"{data.path}: launches and their device ops lie far apart in "
                                 f"the file (over {PENDING} waiting): {missed} device ops may "
                                 "count from their own start instead of their launch")

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
        data.problems.append(f"{data.path}: its {CONFIG_RULE} ({str(given)[:60]!r}) is "
                             f"{problem}; device kernels classified without it")
        return ""

    def _memory(self, ranges: list[Range]) -> Memory:
        from mindspeed_prof.analysis.readers.memory import from_events

        ts, allocated, reserved, dev = self.memory
        device = any(d == 1 for d in dev)  # with a GPU in the trace only device memory counts
        keep = [i for i in range(len(ts)) if dev[i] == 1] if device else range(len(ts))
        order = sorted(keep, key=ts.__getitem__)
        points = [(ts[i], allocated[i]) for i in order if allocated[i] == allocated[i]]
        peak_reserved = max((reserved[i] for i in keep if reserved[i] == reserved[i]),
                            default=None)
        return from_events(points, peak_reserved, self.allocs[1 if device else 0], ranges)


def bare_times(ranges: list[Range], ops: list[tuple[float, float]],
               origin: float = 0.0) -> list[Range]:
    """``ranges`` with each stage and custom range's ``bare`` time: its length less the part
    that host operators (``ops``, on any thread, their times relative to ``origin``) cover."""
    merged = merge(ops)
    starts = [a for a, _ in merged]

    def bare(r: Range) -> float:
        lo = r.ts - origin
        return max(r.dur - covered(merged, lo, lo + r.dur, starts), 0.0)

    return [r._replace(bare=bare(r)) if r.kind in ("stage", "range") else r for r in ranges]


def _newer_half(entries: dict[Any, Any]) -> dict[Any, Any]:
    """The later half of ``entries`` (in insertion order): dropping them half at a time costs
    O(1) an entry (a dict emptied from its front one key at a time rescans the gap each time)."""
    items = list(entries.items())
    return dict(items[len(items) // 2:])


def _count(slot: list[Any], name: str) -> None:
    if not slot[0]:
        slot[1] = name
    slot[0] += 1


def collect(data: TraceData, events: list[Event], default_step: Any) -> None:
    """``Collector`` over one list of events (readers that hold them all: db, torch_npu)."""
    fold = Collector()
    fold.add(events)
    fold.finish(data, default_step)
