"""What a capture says happened on a device without recording it: kernel launches on the host
with no device activity at all (CUPTI, or the device profiler, off or lost). Said as missing,
never as a CPU-only run."""

from __future__ import annotations

import re

from mindspeed_prof.analysis.readers.events import NOT_RECORDED
from mindspeed_prof.analysis.readers.model import Tally, TraceData

__all__ = ["LAUNCH", "launches", "mark_missing"]

#: A runtime or driver call that launches device work (CUDA's, HIP's, a graph's).
LAUNCH = re.compile(r"(?:LaunchKernel|LaunchCooperativeKernel|GraphLaunch|ModuleLaunchKernel)")


def launches(runtime: dict[str, Tally]) -> int:
    """How many launch calls ``runtime`` holds."""
    return sum(t.count for name, t in runtime.items() if LAUNCH.search(name))


def mark_missing(data: TraceData) -> None:
    """A note and ``meta.unread_device[NOT_RECORDED]`` where ``data`` launched kernels but
    recorded no device activity (no kernels, copies, device rows or unread device events)."""
    if data.kernels or data.device or data.meta.unread_device:
        return
    n = launches(data.runtime)
    if n:
        data.meta.unread_device = {NOT_RECORDED: n}
        data.notes.append(f"{data.path}: {n:,} launches, device activity not recorded")
