"""The accumulators of ``NpuFacts`` the text and trace readers fill a row or an event at a
time, so that each keeps one pass over its file: operators grouped (``OpGroups``), HCCL copy
tasks placed in their operator (``TaskGroups``), launches and synchronizations in order
(``LaunchOrder``).
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable

from mindspeed_prof.analysis.readers.model import HcclTasks, NpuOp
from mindspeed_prof.analysis.readers.npu.facts import is_launch, is_sync, shapes

__all__ = ["LaunchOrder", "OpGroups", "TaskGroups"]

_INF = float("inf")


class OpGroups:
    """Device operators grouped by name, type, core, shapes and data types (``NpuOp``); the
    PMU ratios named ``ratios`` are summed, a run at a time."""

    def __init__(self, ratios: tuple[str, ...] = ()) -> None:
        self.groups: dict[tuple[str, ...], NpuOp] = {}
        self.ratios = ratios

    def add(
        self,
        key: tuple[str, str, str, str, str, str, str],
        us: float,
        state: str | None,
        cells: list[str] | tuple[()] = (),
    ) -> None:
        op = self.groups.get(key)
        if op is None:
            name, kind, core, ins, outs, idt, odt = key
            op = self.groups[key] = NpuOp(
                name=name,
                type=kind,
                core=core,
                input_shapes=shapes(ins),
                output_shapes=shapes(outs),
                input_dtypes=idt,
                output_dtypes=odt,
                ratios=dict.fromkeys(self.ratios, 0.0),
            )
        op.count += 1
        op.total_us += us
        if us > op.max_us:
            op.max_us = us
        if state:
            state = state.strip().lower()
            if state == "static":
                op.stated += 1
                op.static += 1
            elif state == "dynamic":
                op.stated += 1
        sums = op.ratios
        for name, cell in zip(self.ratios, cells):
            try:
                value = float(cell)
            except (TypeError, ValueError):
                continue
            if value == value and value not in (_INF, -_INF):
                sums[name] += value

    def done(self) -> list[NpuOp]:
        return list(self.groups.values())


class TaskGroups:
    """HCCL copy tasks placed in the operator whose span holds their start (``HcclTasks``)."""

    def __init__(self) -> None:
        self.ops: dict[Hashable, list[tuple[float, float, str]]] = {}  # lane -> (start, end, name)
        self.tasks: list[tuple[Hashable, float, int, float]] = []  # (lane, start, bytes, us)
        self.seen = False  # any task at all: the capture has task detail (not level0)

    def op(self, lane: Hashable, name: str, start: float, dur: float) -> None:
        self.ops.setdefault(lane, []).append((start, start + dur, name))

    def task(self, lane: Hashable, start: float, size: int, dur: float) -> None:
        self.tasks.append((lane, start, size, dur))

    def done(self) -> list[HcclTasks]:
        spans = {lane: sorted(ops) for lane, ops in self.ops.items()}
        starts = {lane: [s for s, _, _ in ops] for lane, ops in spans.items()}
        out: dict[str, HcclTasks] = {
            name: HcclTasks(op=name, sizes={}) for ops in spans.values() for _, _, name in ops
        }
        for lane, start, size, dur in self.tasks:
            ops = spans.get(lane, [])
            i = bisect.bisect_right(starts.get(lane, []), start) - 1
            if i < 0 or start > ops[i][1]:
                continue  # a task outside every operator's span
            slot = out[ops[i][2]].sizes.setdefault(size, [0, 0.0])
            slot[0] += 1
            slot[1] += dur
        return list(out.values())


class LaunchOrder:
    """Node launches and stream synchronizations in start order: how many synchronizations
    came right after a launch (msprof-analyze's "synchronize stream" check)."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, bool]] = []  # (start, is a synchronization)

    def add(self, name: str, start: float) -> None:
        if is_sync(name):
            self.calls.append((start, True))
        elif is_launch(name):
            self.calls.append((start, False))

    def done(self) -> list[int] | None:
        if not self.calls:
            return None
        self.calls.sort()
        launches = sum(1 for _, sync in self.calls if not sync)
        syncs = len(self.calls) - launches
        after = sum(
            1 for (_, prev), (_, sync) in zip(self.calls, self.calls[1:]) if sync and not prev
        )
        return [launches, syncs, after]
