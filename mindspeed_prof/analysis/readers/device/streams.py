"""Per step, each CUDA stream's idle time and the kernel launches, as HTA's idle time breakdown
and kernel launch statistics count them, from a trace's ``DeviceOps``."""

from __future__ import annotations

import bisect
from typing import Any

from mindspeed_prof.analysis.readers.device.ops import DeviceOps
from mindspeed_prof.analysis.readers.model import LaunchStats, StreamIdle

__all__ = ["KERNEL_WAIT_US", "LATE_US", "LAUNCH_CALLS", "PROMPT_US", "SLOW_CALL_US", "TINY_US",
           "stream_facts"]

#: HTA's ``get_idle_time_breakdown`` default ``consecutive_kernel_delay``: a gap between two ops
#: on a stream shorter than this (us: HTA's docstring says ns, but it compares it with the
#: trace's microseconds) is kernel wait, the delay of launching back-to-back kernels.
KERNEL_WAIT_US = 30.0
#: Launch calls whose device op launch statistics count: HTA's (``cudaLaunchKernel``,
#: ``cudaLaunchKernelExC``, ``cudaMemcpyAsync``, ``cudaMemsetAsync``) and the driver API's
#: ``cuLaunchKernel``/``cuLaunchKernelEx`` (Triton launches through it; HTA leaves them out).
#: A graph launch (``cudaGraphLaunch``) runs many ops under one call: not counted.
LAUNCH_CALLS = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync",
                          "cudaMemsetAsync", "cuLaunchKernel", "cuLaunchKernelEx"})
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



def stream_facts(ops: DeviceOps, steps: list[tuple[int, float, float]]
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
    ``starved``. One pass, a block of a
    stream at a time.
    """
    if not ops.count:
        return [], []
    steps = sorted(steps, key=lambda s: s[1])
    starts = [s[1] for s in steps]
    idle: dict[tuple[int | None, Any], list[float]] = {}
    calls: dict[int | None, list[float]] = {}
    for key, col in ops.streams.items():
        col.sort()
        prev = None  # the end of the stream's previous op counted
        for block in col.blocks():
            for ts, end, launch, call, _ in zip(*block):
                if steps:
                    i = bisect.bisect_right(starts, launch) - 1
                    if i < 0 or launch > steps[i][2]:
                        continue  # launched outside every step: no step's (HTA drops it)
                    n: int | None = steps[i][0]
                else:
                    n = None
                slot = idle.get((n, key))
                if slot is None:
                    slot = idle[(n, key)] = [0.0] * 5  # ops, busy, host, kernel, other
                slot[0] += 1
                slot[1] += end - ts
                if prev is not None:
                    gap = ts - prev
                    if prev < launch < ts:
                        slot[2] += gap
                    elif gap < KERNEL_WAIT_US:
                        slot[3] += gap
                    else:
                        slot[4] += gap
                prev = end
                if call == call:  # a counted launch call (NaN otherwise)
                    dur = end - ts
                    c = calls.get(n)
                    if c is None:
                        c = calls[n] = [0.0] * 13
                    c[0] += 1
                    c[1] += call
                    c[2] += dur
                    delay = ts - launch - call
                    if dur < call:
                        c[3] += 1
                        c[4] += call
                        c[5] += dur
                        if delay < PROMPT_US and call <= SLOW_CALL_US:
                            c[10] += 1
                            c[11] += call
                            c[12] += dur
                    if dur < TINY_US:
                        c[6] += 1
                    if delay > 0:
                        c[7] += delay
                    if call > SLOW_CALL_US:
                        c[8] += 1
                    if delay > LATE_US:
                        c[9] += 1
    order: dict[int | None, int] = {n: k for k, (n, _, _) in enumerate(steps)}
    named = sorted(((n, *_names(key)), v) for (n, key), v in idle.items())
    named.sort(key=lambda kv: order.get(kv[0][0], -1))  # steps in order, streams by name
    rows = [StreamIdle(step=n, device=dev, stream=stream, ops=int(v[0]), busy_ms=v[1] / 1e3,
                       host_wait_ms=v[2] / 1e3, kernel_wait_ms=v[3] / 1e3, other_ms=v[4] / 1e3)
            for (n, dev, stream), v in named]
    stats = [LaunchStats(step=n, launches=int(c[0]), cpu_ms=c[1] / 1e3, gpu_ms=c[2] / 1e3,
                         short=int(c[3]), short_cpu_ms=c[4] / 1e3, short_gpu_ms=c[5] / 1e3,
                         tiny=int(c[6]), delay_ms=c[7] / 1e3, slow_calls=int(c[8]),
                         late=int(c[9]), starved=int(c[10]), starved_cpu_ms=c[11] / 1e3,
                         starved_gpu_ms=c[12] / 1e3)
             for n, c in sorted(calls.items(), key=lambda kv: order.get(kv[0], -1))]
    return rows, stats


def _names(stream: Any) -> tuple[str, str]:
    """A stream key's device and stream names: the reader's keys are (pid, stream)."""
    if isinstance(stream, tuple) and len(stream) == 2:
        return str(stream[0]), str(stream[1])
    return "", str(stream)
