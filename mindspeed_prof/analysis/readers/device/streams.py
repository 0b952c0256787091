"""Per step, each CUDA stream's idle time and the kernel launches, as HTA's idle time breakdown
and kernel launch statistics count them, from a trace's ``DeviceOps``."""

from __future__ import annotations

import numpy as np

from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.readers.events import Lane
from mindspeed_prof.analysis.readers.model import LaunchStats, StreamIdle

__all__ = [
    "KERNEL_WAIT_US",
    "LATE_US",
    "LAUNCH_CALLS",
    "PROMPT_US",
    "SLOW_CALL_US",
    "TINY_US",
    "stream_facts",
]

#: HTA's ``get_idle_time_breakdown`` default ``consecutive_kernel_delay``: a gap between two ops
#: on a stream shorter than this (us: HTA's docstring says ns, but it compares it with the
#: trace's microseconds) is kernel wait, the delay of launching back-to-back kernels.
KERNEL_WAIT_US = 30.0
#: Launch calls whose device op launch statistics count: HTA's (``cudaLaunchKernel``,
#: ``cudaLaunchKernelExC``, ``cudaMemcpyAsync``, ``cudaMemsetAsync``) and the driver API's
#: ``cuLaunchKernel``/``cuLaunchKernelEx`` (Triton launches through it; HTA leaves them out).
#: A graph launch (``cudaGraphLaunch``) runs many ops under one call: not counted.
LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
    }
)
#: HTA's ``get_cuda_kernel_launch_stats`` defaults: a launch call longer than this (us) is an
#: outlier (``runtime_cutoff``), as is a launch delay longer than ``LATE_US``.
SLOW_CALL_US = 50.0
LATE_US = 100.0
#: An op shorter than this (us) on the device is tiny: its launch costs about as much.
TINY_US = 10.0
#: An op that starts within this (us) of its launch call's end ran as soon as it could be: the
#: device was waiting for it (a queued op starts later, when the work ahead of it is done).
#: A call over ``SLOW_CALL_US`` did more than launch (it blocked on a full launch queue, or
#: copied pageable memory while the device worked): its op is not counted so.
PROMPT_US = 30.0
_NAN = float("nan")


class _Idle:
    """A step's stream: its ops, busy time and the gaps before its ops (us) by cause."""

    __slots__ = ("busy", "host", "kernel", "ops", "other")

    def __init__(self) -> None:
        self.ops = 0
        self.busy = self.host = self.kernel = self.other = 0.0

    def add(self, ts: np.ndarray, end: np.ndarray, launch: np.ndarray, prev: np.ndarray) -> None:
        """Ops in start order, ``prev`` the end of the stream's op before each (NaN: none)."""
        self.ops += len(ts)
        self.busy = _sum(self.busy, end - ts)
        gap = ts - prev
        has = prev == prev
        host = has & (prev < launch) & (launch < ts)
        kernel = has & ~host & (gap < KERNEL_WAIT_US)
        self.host = _sum(self.host, gap[host])
        self.kernel = _sum(self.kernel, gap[kernel])
        self.other = _sum(self.other, gap[has & ~host & ~kernel])

    def values(self) -> tuple[float, ...]:
        return self.ops, self.busy, self.host, self.kernel, self.other

    def row(self, step: int | None, device: str, stream: str) -> StreamIdle:
        return StreamIdle(
            step=step,
            device=device,
            stream=stream,
            ops=self.ops,
            busy_ms=self.busy / 1e3,
            host_wait_ms=self.host / 1e3,
            kernel_wait_ms=self.kernel / 1e3,
            other_ms=self.other / 1e3,
        )


class _Launches:
    """A step's counted launches: the sums ``LaunchStats`` reports (us)."""

    __slots__ = (
        "cpu",
        "delay",
        "gpu",
        "late",
        "launches",
        "short",
        "short_cpu",
        "short_gpu",
        "slow_calls",
        "starved",
        "starved_cpu",
        "starved_gpu",
        "tiny",
    )

    def __init__(self) -> None:
        self.launches = self.short = self.tiny = self.slow_calls = self.late = self.starved = 0
        self.cpu = self.gpu = self.short_cpu = self.short_gpu = self.delay = 0.0
        self.starved_cpu = self.starved_gpu = 0.0

    def add(self, ts: np.ndarray, end: np.ndarray, launch: np.ndarray, call: np.ndarray) -> None:
        """Ops in start order and their launch calls' durations ``call``."""
        dur = end - ts
        delay = ts - launch - call
        self.launches += len(ts)
        self.cpu = _sum(self.cpu, call)
        self.gpu = _sum(self.gpu, dur)
        short = dur < call
        self.short += int(short.sum())
        self.short_cpu = _sum(self.short_cpu, call[short])
        self.short_gpu = _sum(self.short_gpu, dur[short])
        starved = short & (delay < PROMPT_US) & (call <= SLOW_CALL_US)
        self.starved += int(starved.sum())
        self.starved_cpu = _sum(self.starved_cpu, call[starved])
        self.starved_gpu = _sum(self.starved_gpu, dur[starved])
        self.tiny += int((dur < TINY_US).sum())
        self.delay = _sum(self.delay, delay[delay > 0])
        self.slow_calls += int((call > SLOW_CALL_US).sum())
        self.late += int((delay > LATE_US).sum())

    def row(self, step: int | None) -> LaunchStats:
        return LaunchStats(
            step=step,
            launches=self.launches,
            cpu_ms=self.cpu / 1e3,
            gpu_ms=self.gpu / 1e3,
            short=self.short,
            short_cpu_ms=self.short_cpu / 1e3,
            short_gpu_ms=self.short_gpu / 1e3,
            tiny=self.tiny,
            delay_ms=self.delay / 1e3,
            slow_calls=self.slow_calls,
            late=self.late,
            starved=self.starved,
            starved_cpu_ms=self.starved_cpu / 1e3,
            starved_gpu_ms=self.starved_gpu / 1e3,
        )


class _Steps:
    """The step that launched an op: the last to start by its launch, if it holds it."""

    def __init__(self, steps: list[tuple[int, float, float]]) -> None:
        self.steps = sorted(steps, key=lambda s: s[1])
        self.starts = np.array([s[1] for s in self.steps], dtype=np.float64)
        self.ends = np.array([s[2] for s in self.steps], dtype=np.float64)
        first: dict[int, int] = {}  # steps of one number count as one (the first's index)
        self.canon = np.array(
            [first.setdefault(s[0], k) for k, s in enumerate(self.steps)], dtype=np.intp
        )

    def of(self, launch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per op of a block (its ``launch`` column): whether a step launched it (HTA drops
        the others), and that step's index in ``steps``; in a trace without steps, every op,
        index 0 (``number`` gives None). Steps of one number have the first's index."""
        if not self.steps:
            return np.ones(len(launch), dtype=bool), np.zeros(len(launch), dtype=np.intp)
        i = np.searchsorted(self.starts, launch, "right") - 1
        k = np.maximum(i, 0)
        return (i >= 0) & (launch <= self.ends[k]), self.canon[k]

    def number(self, k: int) -> int | None:
        return self.steps[k][0] if self.steps else None


def _sum(into: float, values: np.ndarray) -> float:
    """``into`` plus each of ``values`` in order: the float that adding them one at a time
    gives (``add.accumulate`` adds in order; ``sum`` would pair them)."""
    if not len(values):
        return into
    out = np.empty(len(values) + 1, dtype=np.float64)
    out[0] = into
    out[1:] = values
    return float(np.add.accumulate(out)[-1])


def stream_facts(
    ops: DeviceOps, steps: list[tuple[int, float, float]]
) -> tuple[list[StreamIdle], list[LaunchStats]]:
    """Per step, each stream's idle time split as HTA's ``get_idle_time_breakdown`` splits it,
    and the step's kernel launches as HTA's ``get_cuda_kernel_launch_stats`` counts them.

    The ops are those a step launched (HTA keeps only those where a trace has two steps or
    more); in a trace without steps, every op (``step`` None). On each stream, in start order,
    the gap before an op (its start less the end of the op before it) is host wait when it
    was launched after that op ended, else kernel wait when under ``KERNEL_WAIT_US``, else
    other; a launch at or after the op's own start is none recorded (the fallback of an op
    whose call is not in the trace), never host wait. An op whose launch call ``LAUNCH_CALLS``
    counts adds to its step's ``LaunchStats``; a short one (shorter than its call, which took
    at most ``SLOW_CALL_US``) that started within ``PROMPT_US`` of the call's end is
    ``starved``. One pass, a block of a stream at a time.
    """
    if not ops.count:
        return [], []
    by_step = _Steps(steps)
    idle: dict[tuple[int | None, Lane], _Idle] = {}
    calls: dict[int | None, _Launches] = {}
    for key, col in ops.streams.items():
        col.sort()
        prev = _NAN  # the end of the stream's previous op counted (NaN: none yet)
        for block in col.blocks():
            ts, end, launch, call = (np.frombuffer(c, dtype=np.float64) for c in block[:4])
            inside, step = by_step.of(launch)
            sel = np.flatnonzero(inside)
            if not len(sel):
                continue
            ts, end, launch, call, step = ts[sel], end[sel], launch[sel], call[sel], step[sel]
            before = np.empty(len(sel), dtype=np.float64)
            before[0], before[1:] = prev, end[:-1]
            prev = float(end[-1])
            firsts, at = np.unique(step, return_index=True)
            for k in firsts[np.argsort(at)].tolist():  # each step's ops, in order
                mine = np.flatnonzero(step == k)
                n = by_step.number(k)
                slot = idle.get((n, key))
                if slot is None:
                    slot = idle[(n, key)] = _Idle()
                slot.add(ts[mine], end[mine], launch[mine], before[mine])
                counted = mine[call[mine] == call[mine]]  # a counted launch call (NaN otherwise)
                if len(counted):
                    c = calls.get(n)
                    if c is None:
                        c = calls[n] = _Launches()
                    c.add(ts[counted], end[counted], launch[counted], call[counted])
    order: dict[int | None, int] = {n: k for k, (n, _, _) in enumerate(by_step.steps)}
    named = sorted(
        (((n, *_names(key)), v) for (n, key), v in idle.items()),
        key=lambda kv: (kv[0], kv[1].values()),
    )
    named.sort(key=lambda kv: order.get(kv[0][0], -1))  # steps in order, streams by name
    rows = [v.row(n, dev, stream) for (n, dev, stream), v in named]
    stats = [c.row(n) for n, c in sorted(calls.items(), key=lambda kv: order.get(kv[0], -1))]
    return rows, stats


def _names(stream: object) -> tuple[str, str]:
    """A stream key's device and stream names: the reader's keys are (pid, stream)."""
    if isinstance(stream, tuple) and len(stream) == 2:
        return str(stream[0]), str(stream[1])
    return "", str(stream)
