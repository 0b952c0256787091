"""The shared fold of every trace reader: events in, a capture's ``TraceData`` out.

``Collector`` takes Chrome trace events a batch at a time (Kineto JSON, our range files, the db
export's rows and torch_npu's trace_view turned into events) and keeps only what the analysis
needs: ranges, op self times, kernel and runtime totals, the device breakdown and memory. Its
host side is ``host_ops``, its device side ``fold.device``.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator
from itertools import repeat
from operator import is_

import numpy as np

from mindspeed_prof.analysis.readers.counters import CounterFold
from mindspeed_prof.analysis.readers.events import (
    HOST_CATS,
    NAMES,
    PLAIN,
    STAGE,
    UNREAD_DEVICE,
    Event,
    Id,
    name_kind,
)
from mindspeed_prof.analysis.readers.events import number as _num
from mindspeed_prof.analysis.readers.fold.batch import MAX_DUR_US, Skipped, Split, split
from mindspeed_prof.analysis.readers.fold.device import DeviceFold
from mindspeed_prof.analysis.readers.host_ops import MAX_DEPTH, HostOps
from mindspeed_prof.analysis.readers.host_tops import bare_times
from mindspeed_prof.analysis.readers.memory_facts import MemoryEvents
from mindspeed_prof.analysis.readers.model import TraceData, merge_tallies
from mindspeed_prof.analysis.readers.phases import stage_of
from mindspeed_prof.analysis.readers.range_table import Label, RangeTable
from mindspeed_prof.analysis.readers.totals import Totals

__all__ = ["Annotations", "Collector", "collect"]

_RANGE_CATS = ("user_annotation", "stage", "step", "iteration")  # iteration: prof.iteration


class Annotations:
    """Stage and custom ranges as they are read, in compact columns (a range file is nothing
    else): 24 bytes a range. Its name and thread are one code into ``keys`` (each distinct
    pair once, the thread as text), its step one into ``steps`` (each distinct step once, None
    among them: a range the trace did not give one), its times in ``array``s."""

    __slots__ = ("_keys", "_steps", "dur", "key", "keys", "step", "steps", "ts")

    def __init__(self) -> None:
        self.keys: list[tuple[str, str]] = []
        self._keys: dict[tuple[str, Id], int] = {}
        self.steps: list[int | None] = []
        self._steps: dict[int | None, int] = {}
        self.key, self.step = array("i"), array("i")
        self.ts, self.dur = array("d"), array("d")

    def extend(
        self,
        names: list[str],
        tids: list[Id],
        ts: np.ndarray,
        dur: np.ndarray,
        steps: list[int | None],
    ) -> None:
        """Ranges in the order read: each one's name, thread, start, length and step."""
        codes = list(map(self._keys.get, zip(names, tids)))
        if None in codes:
            codes = [self._key(n, t) if c is None else c for c, n, t in zip(codes, names, tids)]
        at = list(map(self._steps.get, steps))
        if None in at:
            at = [self._step(s) if c is None else c for c, s in zip(at, steps)]
        self.key.extend(codes)  # type: ignore[arg-type]
        self.step.extend(at)  # type: ignore[arg-type]
        self.ts.frombytes(np.ascontiguousarray(ts, dtype=np.float64).tobytes())
        self.dur.frombytes(np.ascontiguousarray(dur, dtype=np.float64).tobytes())

    def _key(self, name: str, tid: Id) -> int:
        at = self._keys.get((name, tid))
        if at is None:
            at = self._keys[(name, tid)] = len(self.keys)
            self.keys.append((name, str(tid)))
        return at

    def _step(self, step: int | None) -> int:
        at = self._steps.get(step)
        if at is None:
            at = self._steps[step] = len(self.steps)
            self.steps.append(step)
        return at

    def drain(self, size: int = 1 << 16) -> Iterator[tuple[np.ndarray, ...]]:
        """The columns (key, step, ts, dur) as numpy arrays, ``size`` ranges at a time, each
        slice let go of once read (what is made of them is not held beside them all)."""
        cols = (self.key, self.step, self.ts, self.dur)
        while len(self.ts):  # let go of 16 slices at a time (each cut moves the rest)
            for lo in range(0, min(len(self.ts), 16 * size), size):
                yield tuple(np.array(c[lo : lo + size]) for c in cols)
            for c in cols:
                del c[: 16 * size]


def _label(rank: int | None, name: str, tid: str) -> Label:
    """A range's label: a stage where the name is one (ours, verl's, or another framework's
    name for one), else a custom range."""
    stage = stage_of(name)
    return (
        (rank, "range", name, "", tid) if stage is None else (rank, "stage", stage or name, "", tid)
    )


class Collector:
    """Ranges, op self times, device and memory facts of a trace, fed events a batch at a time.

    Memory holds steps and ranges (a few per step), totals per name, a reorder heap and a stack
    per host thread, the last ``PENDING`` launches, and device ops a block per stream (the rest
    wait in a temporary file, ``DeviceOps``). ``[memory]`` events are kept, 32 bytes each: only
    they grow with the trace (as do the steps). ``finish`` fills a ``TraceData``; problems (events
    without times, negative durations, device activity without steps, collectives overlapping on
    one stream, host ops out of order beyond the heap) are named in ``data.problems``.
    ``comm_kernels``: the user's pattern of communication kernels (``DeviceFold``).
    """

    def __init__(self, comm_kernels: str = "") -> None:
        self.steps: list[tuple[float, float, int, float]] = []  # start, end, number, dur
        self.annotations = Annotations()
        self.host = HostOps()
        self.kernels = Totals[str]()  # by name: runs, device us
        self.runtime = Totals[str]()  # by name: calls, us
        self.device = DeviceFold(comm_kernels)
        self.untimed = Skipped("complete events ('X') without ts or dur")
        self.negative = Skipped("events end before they start (negative dur)")
        self.endless = Skipped(f"events last longer than {MAX_DUR_US / 3.6e9:.0f} hours")
        self.memory = MemoryEvents()
        self.unread: dict[str, int] = {}  # UNREAD_DEVICE category -> events
        self.counts = CounterFold()  # ``C`` events of category ``count`` (``readers.counters``)

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
            self.device.add(events, sp, devs, calls, r_names)

    def _host(self, events: list[Event], sp: Split) -> None:
        """The batch's host events: ops (the usual ones in columns), ranges, ``[memory]``
        events."""
        host = self.host
        host.start(len(events))
        idx = sp.host
        evs = [events[i] for i in idx.tolist()]
        names = [e.name for e in evs]
        kinds = list(map(NAMES.get, names))
        if kinds.count(None) > 64:  # many names not seen yet (or past ``NAMES_MAX``)
            seen = {n: name_kind(n) for n in {n for n, k in zip(names, kinds) if k is None}}
            kinds = [seen[n] if k is None else k for n, k in zip(names, kinds)]
        usual = sp.host_op & np.fromiter(map(is_, kinds, repeat(PLAIN)), dtype=bool, count=len(evs))
        ts, dur = sp.ts[idx], sp.dur[idx]
        at = np.flatnonzero(usual)
        if len(at):  # the usual: a host op (``HostOps.ops``)
            ops = [evs[j] for j in at.tolist()]
            host.ops(
                [e.pid for e in ops],
                [e.tid for e in ops],
                ts[at],
                dur[at],
                [e.name for e in ops],
                idx[at],
            )
        ranges: list[int] = []  # the stage and custom ranges, added together
        for j in np.flatnonzero(~usual).tolist():
            ev = evs[j]
            if ev.ph != "X":
                alloc = self.memory.add(ev)
                if alloc is not None:
                    host.alloc((ev.pid, ev.tid), *alloc, at=int(idx[j]))
                continue
            what = kinds[j]
            if what is None:
                what = name_kind(ev.name)
            if what.__class__ is int:  # a step
                t, d = float(ts[j]), float(dur[j])
                self.steps.append((t, t + d, what, d))
            elif what is STAGE or ev.cat in _RANGE_CATS:
                ranges.append(j)
            elif ev.cat in HOST_CATS:
                host.op((ev.pid, ev.tid), float(ts[j]), float(dur[j]), ev.name, int(idx[j]))
        if ranges:
            found = [evs[j] for j in ranges]
            steps = [_num(e.args.step) if e.args is not None else None for e in found]
            self.annotations.extend(
                [e.name for e in found],
                [e.tid for e in found],
                ts[ranges],
                dur[ranges],
                [int(s) if s is not None else None for s in steps],
            )
        host.flush()

    def finish(self, data: TraceData, default_step: object) -> None:
        """Fill ``data`` (its ranges, ops, kernels, runtime, device, memory, problems)."""
        late, deep = self.host.finish(data.ops)
        merge_tallies(data.kernels, self.kernels.as_dict())
        merge_tallies(data.runtime, self.runtime.as_dict())
        steps = sorted(self.steps)
        starts = [s[0] for s in steps]
        fallback = default_step if isinstance(default_step, int) else None
        ranges = RangeTable.of(data.ranges)
        for ts, _, n, dur in steps:  # its own dur: ``end - ts`` rounds at epoch microseconds
            ranges.add(data.rank, "step", f"ProfilerStep#{n}", n, ts, dur)
        ann = self.annotations
        # each (name, thread)'s label, coded in the order first read, as each range was
        labels = np.array(
            [ranges.code(_label(data.rank, name, tid)) for name, tid in ann.keys], dtype=np.intc
        )
        # a range without a step is in the step whose range holds its start (else the
        # capture's own); steps are coded in the order their first ranges were read
        unknown = ann._steps.get(None)
        known = (
            np.array([ranges.step_code(s) for s in ann.steps], dtype=np.intc)
            if unknown is None
            else None
        )
        for key, step, ts_, dur_ in ann.drain():  # (not held twice)
            if known is None:
                of_step = [ann.steps[c] for c in step.tolist()]
                for j in np.flatnonzero(step == unknown).tolist():
                    i = bisect.bisect_right(starts, ts_[j]) - 1
                    of_step[j] = steps[i][2] if i >= 0 and ts_[j] <= steps[i][1] else fallback
                codes = np.array(list(map(ranges.step_code, of_step)), dtype=np.intc)
            else:
                codes = known[step]
            ranges.extend_coded(labels[key], codes, ts_, dur_)
        data.ranges = ranges
        if self.host.any_tops():  # host ops are kept relative to their origin
            try:
                tops = self.host.tops()
                data.ranges = RangeTable.of(bare_times(ranges, tops, self.host.origin or 0.0))
            finally:
                self.host.close()
        self.device.finish(data, [(n, s, d) for s, _, n, d in steps])
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


def collect(data: TraceData, events: list[Event], default_step: object) -> None:
    """``Collector`` over one list of events (readers that hold them all: db, torch_npu)."""
    fold = Collector()
    fold.add(events)
    fold.finish(data, default_step)
