"""A producer's events folded a batch at a time into spans (``X`` events, and ``B``/``E`` pairs
matched per process and thread: an ``E`` ends the latest open ``B`` of its thread, as Chrome's
trace format says), then into ranges: a whole step (``phases.is_step``) is a step range, a
name ``phases.stage_of`` knows is that stage, any other a custom range; each stage and range
is in the step of its process that holds its start."""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Mapping

from mindspeed_prof.analysis.readers.events import number
from mindspeed_prof.analysis.readers.fold.batch import MAX_DUR_US
from mindspeed_prof.analysis.readers.generic.events import AnyId, Event
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.analysis.readers.phases import is_step, stage_of

__all__ = ["MAX_SPANS", "Fold", "Span"]

#: The most duration events kept as ranges; the rest are counted in a note.
MAX_SPANS = 2_000_000
#: A span: pid, tid, name, start (us), duration (us), the step its args name.
Span = tuple[AnyId, AnyId, str, float, float, object]
_NUMBER = re.compile(r"(\d+)\s*$")
_META_NAMES = ("process_name", "process_labels")


class _Miss:
    """Events of one kind left out: how many, the first one's name."""

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.count, self.first = 0, ""

    def add(self, name: str) -> None:
        if not self.count:
            self.first = name
        self.count += 1


def _name(ev: Event) -> str:
    return "" if ev.name is None else str(ev.name)


class Fold:
    """Spans, process names and what could not be read, from events in file order."""

    def __init__(self) -> None:
        self.events = 0
        self.spans: list[Span] = []
        self.dropped = 0  # spans past MAX_SPANS
        self.names: dict[AnyId, str] = {}
        self.labels: dict[AnyId, str] = {}
        self.open: dict[tuple[AnyId, AnyId], list[tuple[str, float, object]]] = defaultdict(list)
        self.pairs = 0
        self.counters = 0
        self.counter_names: set[str] = set()
        self.instants = 0
        self.unmatched = _Miss()  # ``E`` with no open ``B`` on its thread
        self.untimed = _Miss()
        self.negative = _Miss()
        self.endless = _Miss()

    def add(self, events: list[Event]) -> None:
        self.events += len(events)
        for ev in events:
            ph = ev.ph
            if ph == "X":
                self._complete(ev)
            elif ph == "B" or ph == "E":
                self._begin_end(ev, ph)
            elif ph == "C":
                self.counters += 1
                self.counter_names.add(_name(ev))
            elif ph in ("i", "I", "R"):
                self.instants += 1
            elif ph == "M" and ev.args is not None and ev.args.name is not None:
                if _name(ev) == "process_name":
                    self.names[ev.pid] = str(ev.args.name)
                elif _name(ev) == "process_labels":
                    self.labels[ev.pid] = str(ev.args.name)

    def _keep(self, span: Span) -> None:
        if len(self.spans) < MAX_SPANS:
            self.spans.append(span)
        else:
            self.dropped += 1

    def _timed(self, ev: Event, ts: float | None, dur: float | None) -> bool:
        if ts is None or dur is None:
            self.untimed.add(_name(ev))
        elif dur < 0:
            self.negative.add(_name(ev))
        elif dur > MAX_DUR_US:
            self.endless.add(_name(ev))
        else:
            return True
        return False

    def _complete(self, ev: Event) -> None:
        ts, dur = number(ev.ts), number(ev.dur)
        if self._timed(ev, ts, dur):
            step = ev.args.step if ev.args is not None else None
            self._keep((ev.pid, ev.tid, _name(ev), ts, dur, step))  # type: ignore[arg-type]

    def _begin_end(self, ev: Event, ph: str) -> None:
        ts = number(ev.ts)
        lane = (ev.pid, ev.tid)
        if ph == "B":
            if ts is None:
                self.untimed.add(_name(ev))
                return
            self.open[lane].append((_name(ev), ts, ev.args.step if ev.args is not None else None))
            return
        stack = self.open.get(lane)
        if not stack:
            self.unmatched.add(_name(ev) or "(no name)")
            return
        name, start, step = stack.pop()
        if ts is None:
            self.untimed.add(name)
            return
        if self._timed(ev, start, ts - start):
            self.pairs += 1
            self._keep((ev.pid, ev.tid, name or _name(ev), start, ts - start, step))

    def unclosed(self) -> _Miss:
        """``B`` events never ended (a capture cut short): how many, the first one's name."""
        miss = _Miss()
        for stack in self.open.values():
            for name, _, _ in stack:
                miss.add(name)
        return miss

    def problems(self, path: object) -> list[str]:
        """One line per kind of event left out, naming the file and the first one."""
        out = []
        for miss, what in (
            (self.unmatched, "end events ('E') match no begin ('B') on their thread"),
            (self.unclosed(), "begin events ('B') never end"),
            (self.untimed, "duration events without a time"),
            (self.negative, "events end before they start"),
            (self.endless, f"events last longer than {MAX_DUR_US / 3.6e9:.0f} hours"),
        ):
            if miss.count:
                out.append(f"{path}: {miss.count:,} {what}, ignored (first: {miss.first[:60]!r})")
        return out

    def ranges(self, ranks: Mapping[AnyId, int | None]) -> list[Range]:
        """Every span as a range of its process's rank (``ranks``, by pid)."""
        steps: dict[AnyId, list[tuple[float, float, int]]] = defaultdict(list)
        rest: list[tuple[Span, str | None]] = []
        for span in sorted(self.spans, key=lambda s: s[3]):
            if is_step(span[2]):
                steps[span[0]].append((span[3], span[3] + span[4], _step_number(span, steps)))
            else:
                rest.append((span, stage_of(span[2])))
        out = [
            Range(ranks.get(pid), "step", f"step {n}", n, ts, end - ts)
            for pid, spans in steps.items()
            for ts, end, n in spans
        ]
        starts = {pid: [s[0] for s in spans] for pid, spans in steps.items()}
        for (pid, tid, name, ts, dur, _), stage in rest:
            step = None
            i = bisect.bisect_right(starts.get(pid, []), ts) - 1
            if i >= 0 and ts <= steps[pid][i][1]:
                step = steps[pid][i][2]
            kind = "stage" if stage is not None else "range"
            out.append(Range(ranks.get(pid), kind, stage or name, step, ts, dur, tid=str(tid)))
        return out


def _step_number(span: Span, steps: Mapping[AnyId, list[tuple[float, float, int]]]) -> int:
    """A step's number: its args' ``step``, else a number ending its name, else the next after
    its process's steps so far (1 for the first)."""
    given = number(span[5])  # type: ignore[arg-type]
    if given is not None and given >= 0 and given == int(given):
        return int(given)
    m = _NUMBER.search(span[2])
    if m:
        return int(m.group(1))
    before = steps.get(span[0], [])
    return before[-1][2] + 1 if before else 1
