"""torch_npu's ``trace_view.json``: host ranges and ops, kernels, HCCL ops, overlap analysis."""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Union

import msgspec

from mindspeed_prof.analysis.readers.events import Event, Id, Number
from mindspeed_prof.analysis.readers.model import CommRow, DeviceRow, NpuFacts, TraceData, tally
from mindspeed_prof.analysis.readers.npu.facts import COPY_TASKS, api_name, facts
from mindspeed_prof.analysis.readers.npu.facts_groups import LaunchOrder, TaskGroups
from mindspeed_prof.analysis.readers.npu.tasks import is_control
from mindspeed_prof.analysis.readers.npu.text import comm_family, device_row, kernel_name
from mindspeed_prof.analysis.readers.stream import TraceStream

__all__ = ["ASCEND", "LaneSpan", "ascend_trace", "read_trace_view", "stage_device_rows"]

#: A pid or tid as torch_npu writes it (a float in some versions' files).
_Pid = Union[int, float, str, None]  # noqa: UP007 - a runtime alias
#: Processes torch_npu writes for the device; everything else (Python, ...) is the host.
_DEVICE = frozenset(
    {
        "Ascend Hardware",
        "HCCL",
        "Overlap Analysis",
        "NPU MEM",
        "HBM",
        "LLC",
        "Acc PMU",
        "QoS",
        "Stars Soc Info",
        "AI Core Freq",
        "CANN",
        "AI Core",
        "Device",
        "SIO",
        "PCIe",
        "HCCS",
        "NIC",
        "RoCE",
    }
)
#: Processes only torch_npu's trace_view.json has: a list of events naming one is torch_npu's.
ASCEND = frozenset({"Ascend Hardware", "CANN", "HCCL", "Overlap Analysis"})
#: Start and end (absolute us) and the exact duration of an Overlap Analysis lane's interval.
LaneSpan = tuple[float, float, float]
_OVERLAP = ("Computing", "Communication", "Communication(Not Overlapped)", "Free")
#: The lanes whose sum is torch_npu's Stage (Communication overlaps Computing).
_PARTITION = ("Computing", "Communication(Not Overlapped)", "Free")


class _Args(msgspec.Struct):
    name: object = None
    #: An HCCL task's link and size (what byte alignment is judged on).
    transport: object = msgspec.field(default=None, name="transport type")
    link: object = msgspec.field(default=None, name="link type")
    size: object = msgspec.field(default=None, name="size(Byte)")


class _Event(msgspec.Struct):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: Number = None
    dur: Number = None
    pid: _Pid = None
    tid: _Pid = None
    args: _Args | None = None


class _Trace(msgspec.Struct):
    traceEvents: list[_Event] = []


class _Meta(msgspec.Struct):
    """What the first pass decodes of an event: enough to name its process."""

    ph: str = ""
    name: str = ""
    pid: _Pid = None
    args: _Args | None = None


class _Names(msgspec.Struct):
    traceEvents: list[_Meta] = []


def _num(value: object) -> float | None:
    if not isinstance(value, (int, float, str)):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def ascend_trace(path: Path) -> bool:
    """Whether a list of events names a process of ``ASCEND`` (read until one is named)."""
    for batch in TraceStream(path, _Meta, _Names).batches():
        for ev in batch:
            if (
                ev.ph == "M"
                and ev.name == "process_name"
                and ev.args is not None
                and str(ev.args.name) in ASCEND
            ):
                return True
    return False


def _processes(path: Path) -> dict[_Pid, str]:
    """Process names by pid. torch_npu names the host process after its events, so the names
    are gathered in a pass of their own before any event is placed."""
    procs: dict[_Pid, str] = {}
    for batch in TraceStream(path, _Meta, _Names).batches():
        for ev in batch:
            if ev.ph == "M" and ev.name == "process_name" and ev.args is not None:
                procs[ev.pid] = str(ev.args.name)
    return procs


class _Device:
    """What a pass keeps of the device's events, by process (``_BY_PROC``)."""

    def __init__(self, data: TraceData, *, kernels: bool, comm: bool, runtime: bool) -> None:
        self.data, self.kernels, self.comm, self.runtime = data, kernels, comm, runtime
        self.overlap: dict[str, list[LaneSpan]] = defaultdict(list)
        self.tasks = TaskGroups()
        self.order = LaunchOrder()
        self.longest: dict[str, float] = {}

    def hardware(self, ev: _Event, ts: float, dur: float) -> None:
        if self.kernels and not is_control(ev.name):
            tally(self.data.kernels, kernel_name(None, ev.name), 1, dur)

    def hccl(self, ev: _Event, ts: float, dur: float) -> None:
        if ev.name.startswith("hcom_"):
            self.tasks.op(ev.pid, ev.name, ts, dur)
            if self.comm:
                _add_comm(self.data, ev.name, dur)
            return
        self.tasks.seen = True
        if ev.name in COPY_TASKS and ev.args is not None:
            _copy_task(self.tasks, ev.pid, ev.args, ts, dur)

    def cann(self, ev: _Event, ts: float, dur: float) -> None:
        self.order.add(ev.name, ts)
        if self.runtime:
            tally(self.data.runtime, ev.name, 1, dur)
            name = api_name(ev.name)
            self.longest[name] = max(self.longest.get(name, 0.0), dur)

    def lanes(self, ev: _Event, ts: float, dur: float) -> None:
        if ev.name in _OVERLAP:
            self.overlap[ev.name].append((ts, ts + dur, dur))

    def add(self, proc: str, ev: _Event) -> None:
        """A device process's event: a complete one with a time and a duration is kept."""
        if ev.ph != "X":
            return
        ts, dur = _num(ev.ts), _num(ev.dur)
        if ts is None or dur is None or dur < 0:
            return
        keep = _BY_PROC.get(proc)
        if keep is not None:
            keep(self, ev, ts, dur)

    def into(self, npu: NpuFacts, source: str) -> None:
        """The HCCL copy tasks, the CANN lane's order and its calls' longest into ``npu``."""
        npu.sources["host"] = source
        if self.tasks.seen:
            npu.tasks = self.tasks.done()
            npu.sources["tasks"] = source
        npu.launch_sync = self.order.done()
        if npu.launch_sync is not None:
            npu.sources["order"] = source
        if self.longest:
            npu.api_max_us.update(self.longest)
            npu.sources["api"] = source


#: What each device process's events add (the other device processes: nothing).
_BY_PROC: dict[str, Callable[[_Device, _Event, float, float], None]] = {
    "Ascend Hardware": _Device.hardware,
    "HCCL": _Device.hccl,
    "CANN": _Device.cann,
    "Overlap Analysis": _Device.lanes,
}


def read_trace_view(
    path: Path, data: TraceData, *, kernels: bool, comm: bool, runtime: bool
) -> dict[str, list[LaneSpan]]:
    """Host ranges/ops into ``data``; device kernels, HCCL ops and CANN calls where asked.

    Read a slice at a time in two passes (``stream``): memory does not grow with the file.
    Returns the Overlap Analysis intervals (``Computing``, ``Communication``, ...). Always
    kept for ``data.npu``: each HCCL operator's copy tasks by size, and the order of node
    launches and stream synchronizations on the CANN lane.
    """
    from mindspeed_prof.analysis.readers.fold import Collector  # numpy: only for this file

    procs = _processes(path)
    fold = Collector()
    device = _Device(data, kernels=kernels, comm=comm, runtime=runtime)
    count = 0
    stream = TraceStream(path, _Event, _Trace)
    for batch in stream.batches():
        count += len(batch)
        host: list[Event] = []
        for ev in batch:
            proc = procs.get(ev.pid, "")
            if proc in _DEVICE:
                device.add(proc, ev)
            elif ev.cat or ev.ph == "X":
                host.append(
                    Event(
                        ph=ev.ph,
                        cat=ev.cat,
                        name=ev.name,
                        ts=ev.ts,
                        dur=ev.dur,
                        pid=_id(ev.pid),
                        tid=_id(ev.tid),
                    )
                )
        fold.add(host)
    data.events = count
    fold.finish(data, None)
    data.problems.extend(stream.problems())
    device.into(facts(data), path.name)
    return device.overlap


def _copy_task(tasks: TaskGroups, pid: _Pid, args: _Args, ts: float, dur: float) -> None:
    """An HCCL copy task that crosses a link (SDMA, not ON_CHIP), with its size."""
    if args.transport != "SDMA" or args.link == "ON_CHIP":
        return
    size = _num(args.size)
    if size is not None and size >= 0 and size == int(size):
        tasks.task(pid, ts, int(size), dur)


def _id(value: _Pid) -> Id:
    return value if isinstance(value, (int, str)) or value is None else str(value)


def _add_comm(data: TraceData, op_name: str, us: float) -> None:
    name = comm_family(op_name)
    for row in data.comm:
        if row.name == name and row.kind == "collective":
            row.count += 1
            row.elapse_ms = (row.elapse_ms or 0.0) + us / 1000.0
            return
    data.comm.append(
        CommRow(name=name, kind="collective", step=None, count=1, elapse_ms=us / 1000.0)
    )


def _covered(intervals: list[LaneSpan], starts: list[float], lo: float, hi: float) -> float:
    """Time of sorted, disjoint ``intervals`` inside [lo, hi): an interval wholly inside
    counts its own duration (exact), not end minus start (absolute us as floats are 0.25 us
    apart)."""
    total = 0.0
    i = max(bisect.bisect_right(starts, lo) - 1, 0)
    while i < len(intervals) and intervals[i][0] < hi:
        a, b, dur = intervals[i]
        total += dur if lo <= a and b <= hi else max(0.0, min(b, hi) - max(a, lo))
        i += 1
    return total


def stage_device_rows(
    data: TraceData, overlap: dict[str, list[LaneSpan]], kinds: tuple[str, ...]
) -> list[DeviceRow]:
    """Device rows for each range of ``kinds`` (``step``, ``stage``) from the overlap intervals.

    torch_npu's Overlap Analysis lays the device timeline out as Computing, Communication (and
    its part not overlapped) and Free; a range's row is what falls inside the range's host
    window (device work that lags its host range by more than the window is not counted). Its
    ``step_ms`` is torch_npu's Stage: Computing + Communication(Not Overlapped) + Free, as
    step_trace_time.csv gives it (to 0.1 us on the corpus's text exports), Free overlapping
    Computing by a few us where torch_npu's lanes do.
    """
    if not overlap:
        return []
    lanes = {name: sorted(overlap.get(name, [])) for name in _OVERLAP}
    starts = {name: [a for a, _, _ in lane] for name, lane in lanes.items()}
    rows = []
    for r in data.ranges:
        if r.kind not in kinds:
            continue
        us = {n: _covered(lanes[n], starts[n], r.ts, r.ts + r.dur) for n in _OVERLAP}
        stage = sum(us[n] for n in _PARTITION)  # torch_npu's Stage: the three lanes' sum
        row = device_row(
            r.step,
            us["Computing"],
            us["Communication(Not Overlapped)"],
            None,
            us["Communication"],
            us["Free"],
            {"step_ms": stage},
        )
        row.stage = r.name if r.kind == "stage" else None
        rows.append(row)
    return rows
