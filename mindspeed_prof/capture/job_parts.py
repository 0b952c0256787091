"""The profiler's parts for the job around its captures: device memory per stage and at an OOM
(``memory.stage``), the memory window (``memory.window``), and the finish hook (``finish``)."""

from __future__ import annotations

from mindspeed_prof.capture.finish import FinishPart
from mindspeed_prof.capture.memory.allocator import device_allocator
from mindspeed_prof.capture.memory.stage import StageMemory
from mindspeed_prof.capture.memory.window import MemoryWindow
from mindspeed_prof.capture.part import Host, Part

__all__ = ["job_parts"]


def job_parts(host: Host) -> list[Part]:
    """The parts ``host``'s config asks for. Memory parts only where a device allocator
    exists (none on a host without CUDA or an NPU: one note when asked)."""
    cfg, out = host.cfg, list[Part]()
    memory = (
        cfg.stage_memory
        or cfg.oom_snapshot
        or (cfg.memory_window_steps and cfg.profile_with_memory and host.plan.enabled)
    )
    allocator = device_allocator() if memory else None
    if memory and allocator is None:
        host.warn_once(
            "no_allocator",
            "mindspeed-prof: stage_memory, oom_snapshot and memory_window_steps read a CUDA or "
            "NPU allocator; this process has neither, so they are off",
        )
    if allocator is not None and (cfg.stage_memory or cfg.oom_snapshot):
        out.append(StageMemory(host, allocator, peaks=cfg.stage_memory, oom=cfg.oom_snapshot))
    if allocator is not None and cfg.memory_window_steps and cfg.profile_with_memory:
        out.append(MemoryWindow(host, allocator, cfg.memory_window_steps))
    if cfg.finish_hook_cmd or cfg.relocate_results:
        out.append(FinishPart(host))
    return out
