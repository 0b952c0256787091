"""The profiler's parts for the job around its captures: device memory per stage and at an OOM
(``memory.stage``), the memory window (``memory.window``), the host-memory budget
(``host_budget``) and the finish hook (``finish``)."""

from __future__ import annotations

from mindspeed_prof.capture.finish import FinishPart
from mindspeed_prof.capture.host_budget import HostBudget
from mindspeed_prof.capture.memory.allocator import Allocator, HostMemory, device_allocator
from mindspeed_prof.capture.memory.stage import StageMemory
from mindspeed_prof.capture.memory.window import MemoryWindow
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.capture.ranges import RangeTap

__all__ = ["job_parts"]


def job_parts(host: Host, tap: RangeTap) -> list[Part]:
    """The parts ``host``'s config asks for. Memory parts read the device's allocator; on a
    host without CUDA or an NPU, stage peaks read the process's resident set instead, and the
    OOM observer and the memory window (which need the allocator's snapshot) are off, with one
    note."""
    cfg, out = host.cfg, list[Part]()
    window = bool(cfg.memory_window_steps and cfg.profile_with_memory and host.plan.enabled)
    allocator = device_allocator() if cfg.stage_memory or cfg.oom_snapshot or window else None
    if allocator is None and (cfg.oom_snapshot or window):
        host.warn_once(
            "no_allocator",
            "mindspeed-prof: oom_snapshot and memory_window_steps read a CUDA or NPU "
            "allocator's snapshot; this process has neither, so they are off",
        )
    peaks: Allocator | HostMemory | None = allocator
    if peaks is None and cfg.stage_memory and HostMemory.available():
        peaks = HostMemory()  # the host is the device: its resident set
    if peaks is not None and (cfg.stage_memory or (cfg.oom_snapshot and allocator)):
        oom = bool(cfg.oom_snapshot and allocator is not None)
        out.append(StageMemory(host, peaks, peaks=cfg.stage_memory, oom=oom))
    if allocator is not None and window:
        out.append(MemoryWindow(host, allocator, cfg.memory_window_steps))
    if cfg.capture_host_mb and host.plan.enabled:
        if HostMemory.available():
            out.append(HostBudget(host, tap, HostMemory()))
        else:
            host.warn_once(
                "host_budget",
                "mindspeed-prof: capture_host_mb reads the process's resident set from /proc "
                "(Linux); this host has none, so captures run unchecked",
            )
    if cfg.finish_hook_cmd or cfg.relocate_results:
        out.append(FinishPart(host))
    return out
