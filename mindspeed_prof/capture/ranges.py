"""``RangeTap``: the profiler's step and stage ranges, and where every range goes while recording.

Step and stage ranges are opened and closed by the profiler's hooks; custom ranges
(``mstx.range``) by the trainer. While anything listens (the flight recorder, a capture's range
file), every range is kept in one ``RangeBuffer``, which ``drain`` hands to the listeners at step
boundaries. While a capture runs, its backend's other sinks (``record_function``, NVTX, torch_npu
mstx) get the step and stage ranges too. This module adds sinks to ``mstx`` and removes only its
own.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from time import perf_counter_ns
from typing import Any, ContextManager, NamedTuple, cast

from mindspeed_prof import mstx
from mindspeed_prof.capture.buffer import STEP_RANGE, Event, RangeBuffer
from mindspeed_prof.mstx import RangeSink

__all__ = ["Listener", "OpenRange", "RangeTap"]

#: Takes the events recorded during ``step``.
Listener = Callable[["int | None", list[Event]], None]
#: Threads with open ranges before those that ended are looked for (and forgotten).
_THREADS = 64
#: ``.tid``: this thread's native id, asked once (``get_native_id`` is a system call each time,
#: and the step hooks need it twice a step).
_local = threading.local()


def _new_local_in_child() -> None:
    """After a fork, the child's one thread has an id of its own: nothing inherited is kept."""
    global _local
    _local = threading.local()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_new_local_in_child)


class OpenRange(NamedTuple):
    """A step or stage range not closed yet, the thread that opened it, and the capture sinks'
    ranges entered with it."""

    kind: str
    name: str
    start_ns: int
    tid: int
    entered: tuple[ContextManager[object], ...]


#: An open step: its start (ns), the thread that opened it, the capture sinks' ranges entered
#: with it (a plain tuple: one is made per step).
OpenStep = tuple[int, int, tuple[ContextManager[object], ...]]
#: ``OpenRange`` made from its fields' tuple without a Python call (one is made per step).
_open_range = cast(
    Callable[[tuple[str, str, int, int, tuple[ContextManager[object], ...]]], OpenRange],
    functools.partial(tuple.__new__, OpenRange),
)


class RangeTap:
    """Opens and closes the step and stage ranges; feeds the buffer's listeners.

    Open ranges are kept per thread: two threads' stages may overlap in any order, and a
    range is closed wherever it is in its thread's ranges (the innermost of its name), or, when
    its thread has none of that name, the one another thread opened last (a hook-driven
    trainer may end a stage on another thread). A range is recorded on the thread that opened
    it. Steps are kept apart, in the order they opened (every thread's): a step's hooks, twice
    a step, touch only that list, and pair the same way. Threads that ended with ranges still
    open are forgotten once many threads are seen.
    The caller serializes calls (the profiler's lock); custom ranges need no lock.

    ``on_error(what, err)`` is told about a sink that fails (the profiler decides what then).
    """

    def __init__(
        self,
        on_error: Callable[[str, Exception], None],
        counter: Callable[[str, Any], None] | None = None,
    ) -> None:
        self._on_error = on_error
        #: Gets ``mstx.count``'s counts while the buffer records (always after ``count_always``).
        self._counter, self._always = counter, False
        self._open: dict[int, list[OpenRange]] = {}  # native thread id -> its ranges, in order
        self._steps: list[OpenStep] = []  # open steps, every thread's, in the order opened
        self.buffer: RangeBuffer | None = None
        self._listeners: list[Listener] = []
        self._keys: dict[tuple[str, str], int] = {}
        self._step_key = -1  # the step range's key in the buffer (-1: not asked yet)
        self._capture_sinks: list[RangeSink] = []
        self._added: list[RangeSink] = []

    # -- step and stage ranges ------------------------------------------------------------
    @property
    def open_threads(self) -> set[int]:
        """The threads with a range open now. A thread keeps its (empty) list of open ranges
        until it is seen to have ended (with ``_THREADS`` threads known): a step costs no
        list made and dropped."""
        stepping = {tid for _, tid, _ in list(self._steps)}
        return {tid for tid, rs in list(self._open.items()) if rs} | stepping

    @property
    def in_step(self) -> bool:
        """A step range is open (a stage's failure is dumped when its step ends)."""
        return bool(self._steps)

    @property
    def recording(self) -> bool:
        """Ranges (and counts) go to the buffer's listeners."""
        return bool(self._listeners)

    def here(self) -> tuple[bool, str | None]:
        """Whether a step is open (on any thread), and the innermost stage open on the calling
        thread (None: none)."""
        try:
            tid = _local.tid
        except AttributeError:
            tid = _local.tid = threading.get_native_id()
        steps = list(self._steps)
        # a stage opened before this thread's innermost step is outside it: not the step's
        after = next((start for start, opener, _ in reversed(steps) if opener == tid), None)
        stage = next((r.name for r in reversed(self._open.get(tid, ())) if r.kind == "stage"), None)
        if stage is not None and after is not None:
            found = next(r for r in reversed(self._open[tid]) if r.kind == "stage")
            if found.start_ns < after:
                stage = None
        return bool(steps), stage

    @property
    def open_count(self) -> int:
        """Ranges open now, every thread's."""
        return sum(len(rs) for rs in list(self._open.values())) + len(self._steps)

    def open_step(self, step: int | None) -> None:
        """A step begins (``kind`` step: ``open`` comes here)."""
        entered: tuple[ContextManager[object], ...] = ()
        if self._capture_sinks:
            entered = self._enter_sinks("step", STEP_RANGE, step)
        try:
            tid = _local.tid
        except AttributeError:
            tid = _local.tid = threading.get_native_id()
        steps = self._steps
        if len(steps) >= _THREADS:  # steps left open by threads that ended
            self._forget_ended_threads()
        steps.append((perf_counter_ns(), tid, entered))

    def close_step(self) -> int | None:
        """The step ends: this thread's innermost open step, else the one another thread
        opened last. Its duration in ns, or None when no step is open."""
        steps = self._steps
        if not steps:
            return None
        try:
            tid = _local.tid
        except AttributeError:
            tid = _local.tid = threading.get_native_id()
        found = steps[-1]
        if found[1] == tid:  # the usual case: this thread's, opened last
            steps.pop()
        else:
            found = next((r for r in reversed(steps) if r[1] == tid), found)
            steps.remove(found)
        start, opener, entered = found
        if entered:
            self._exit_sinks(entered)
        end = perf_counter_ns()
        buffer = self.buffer
        if self._listeners and buffer is not None:
            key = self._step_key
            if key < 0:
                key = self._step_key = buffer.key(STEP_RANGE, "step")
            buffer.events.append((key, opener, start, end))
        return end - start

    def open(self, kind: str, name: str, step: int | None) -> None:
        if kind == "step":
            self.open_step(step)
            return
        entered: tuple[ContextManager[object], ...] = ()
        if self._capture_sinks:
            entered = self._enter_sinks(kind, name, step)
        try:
            tid = _local.tid
        except AttributeError:
            tid = _local.tid = threading.get_native_id()
        ranges = self._open.get(tid)
        if ranges is None:
            if len(self._open) >= _THREADS:
                self._forget_ended_threads()
            ranges = self._open[tid] = []
        ranges.append(_open_range((kind, name, perf_counter_ns(), tid, entered)))

    def close(self, kind: str, name: str) -> int | None:
        """End the open range ``name`` of ``kind`` (see the class); its duration in ns, or None
        when no such range is open."""
        if kind == "step":
            return self.close_step() if name == STEP_RANGE else None
        try:
            tid = _local.tid
        except AttributeError:
            tid = _local.tid = threading.get_native_id()
        ranges = self._open.get(tid)
        found = ranges[-1] if ranges else None  # the usual case: this thread's innermost
        if found is None or found.kind != kind or found.name != name:
            found = self._find(kind, name, tid)
            if found is None:
                return None
            ranges = self._open[found.tid]
        assert ranges is not None  # it holds found
        if ranges[-1] is found:
            ranges.pop()
        else:
            ranges.remove(found)
        _, _, start, opener, entered = found  # one unpacking: a field read each costs more
        if entered:
            self._exit_sinks(entered)
        end = perf_counter_ns()
        buffer = self.buffer
        if self._listeners and buffer is not None:
            key = self._keys.get((name, kind))
            if key is None:
                key = self._keys[(name, kind)] = buffer.key(name, kind)
            buffer.events.append((key, opener, start, end))
        return end - start

    def _exit_sinks(self, entered: tuple[ContextManager[object], ...]) -> None:
        for cm in reversed(entered):
            try:
                cm.__exit__(None, None, None)
            except Exception as err:
                self._on_error("range", err)

    def _enter_sinks(
        self, kind: str, name: str, step: int | None
    ) -> tuple[ContextManager[object], ...]:
        """The capture sinks' ranges for a step or stage, entered (those that were, when one
        fails)."""
        label = f"{STEP_RANGE}#{step}" if kind == "step" else name
        entered: list[ContextManager[object]] = []
        try:
            for sink in self._capture_sinks:
                cm = sink.range(label, kind)
                cm.__enter__()
                entered.append(cm)
        except Exception as err:
            self._on_error("range", err)
        return tuple(entered)

    def _find(self, kind: str, name: str, tid: int) -> OpenRange | None:
        mine = self._open.get(tid, ())
        for r in reversed(mine):
            if r.kind == kind and r.name == name:
                return r
        others = [
            r
            for rs in self._open.values()
            if rs is not mine
            for r in rs
            if r.kind == kind and r.name == name
        ]
        return max(others, key=lambda r: r.start_ns, default=None)

    def _forget_ended_threads(self) -> None:
        """Drop the open ranges of threads that ended without closing them."""
        alive = {t.native_id for t in threading.enumerate()}
        for tid in [tid for tid in self._open if tid not in alive]:
            for r in self._open.pop(tid):
                self._exit_quietly(r)
        for step in [s for s in self._steps if s[1] not in alive]:
            self._steps.remove(step)
            self._exit_all(step[2])

    # -- the buffer and its listeners -----------------------------------------------------
    def shared_buffer(self) -> RangeBuffer:
        """The buffer every listener's ranges are recorded in (made on first use)."""
        if self.buffer is None:
            self.buffer = RangeBuffer()
        return self.buffer

    def listen(self, listener: Listener) -> RangeBuffer:
        """Hand ``listener`` every range from now on (at each ``drain``); the shared buffer."""
        buffer = self.shared_buffer()
        if not self._listeners:
            self._hook([buffer])
            if self._counter is not None:
                mstx.add_counter(self._counter)
        if listener not in self._listeners:
            self._listeners.append(listener)
        return buffer

    def unlisten(self, listener: Listener) -> None:
        self._listeners = [li for li in self._listeners if li != listener]
        if not self._listeners and self.buffer is not None:
            self._unhook([self.buffer])
            if not self._always:
                self._uncount()

    def count_always(self) -> None:
        """``mstx.count`` reaches the counter whether or not anything records, until ``stop``
        (a part of the profiler takes every count)."""
        self._always = True
        if self._counter is not None:
            mstx.add_counter(self._counter)

    def _uncount(self) -> None:
        if self._counter is not None:
            mstx.remove_counter(self._counter)

    def drain(self, step: int | None) -> None:
        """What the buffer holds, recorded during ``step``, to every listener."""
        buffer = self.buffer
        if buffer is None:
            return
        held = buffer.events  # what ``buffer.take()`` does, without its call (every step end)
        n = len(held)
        if not n:
            return
        events = held[:n]  # other threads may append meanwhile: only these n are removed
        del held[:n]
        for listener in self._listeners:  # unlisten makes a new list: this one stays whole
            try:
                listener(step, events)
            except Exception as err:  # a range file that cannot be written: not the others
                self.unlisten(listener)
                self._on_error("flush", err)

    # -- a capture's sinks ----------------------------------------------------------------
    def attach(self, sinks: list[RangeSink]) -> None:
        """A capture's sinks: every range (custom ones through ``mstx``) until ``detach``."""
        self._capture_sinks = list(sinks)
        self._hook(self._capture_sinks)

    def detach(self) -> None:
        """End the capture sinks' ranges still open and stop sending to those sinks."""
        for ranges in list(self._open.values()):
            for i in reversed(range(len(ranges))):
                r = ranges[i]
                if r.entered:
                    ranges[i] = r._replace(entered=())
                    self._exit_quietly(r)
        steps = self._steps
        for i in reversed(range(len(steps))):
            start, tid, entered = steps[i]
            if entered:
                steps[i] = (start, tid, ())
                self._exit_all(entered)
        self._unhook(self._capture_sinks)
        self._capture_sinks = []

    @staticmethod
    def _exit_quietly(r: OpenRange) -> None:
        RangeTap._exit_all(r.entered)

    @staticmethod
    def _exit_all(entered: tuple[ContextManager[object], ...]) -> None:
        for cm in reversed(entered):
            try:
                cm.__exit__(None, None, None)
            except Exception:  # the capture is ending anyway
                pass

    def stop(self) -> None:
        """Nothing is recorded any more: every sink removed, every listener dropped."""
        self.detach()
        self._listeners = []
        self._unhook(list(self._added))
        self._uncount()

    def disown(self) -> None:
        """In a forked child: its sinks taken out of ``mstx``, everything forgotten; no range
        is ended, written or handed to a listener."""
        for sink in self._added:
            mstx.remove_sink(sink)
        self._uncount()
        self._added, self._capture_sinks, self._listeners = [], [], []
        self._open, self._steps = {}, []
        self.buffer, self._step_key = None, -1

    def _hook(self, sinks: list[RangeSink]) -> None:
        for sink in sinks:
            if not any(s is sink for s in self._added):
                self._added.append(sink)
                mstx.add_sink(sink)

    def _unhook(self, sinks: list[RangeSink]) -> None:
        for sink in sinks:
            mstx.remove_sink(sink)
            self._added = [s for s in self._added if s is not sink]
