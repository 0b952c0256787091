"""The caching allocator's boundary: what is read of ``torch.cuda.memory`` and of
``torch_npu.npu.memory`` (the same names in both), and which one a process has."""

from __future__ import annotations

from typing import Protocol, cast

__all__ = ["Allocator", "HostMemory", "device_allocator", "is_oom"]


class Allocator(Protocol):
    """The calls made here, as both modules spell them."""

    def reset_peak_memory_stats(self, device: None = None) -> None: ...

    def max_memory_allocated(self, device: None = None) -> int: ...

    def max_memory_reserved(self, device: None = None) -> int: ...

    def _record_memory_history(
        self, enabled: str | None = "all", *, max_entries: int = ...
    ) -> None: ...

    def _dump_snapshot(self, filename: str = "dump_snapshot.pickle") -> None: ...


class HostMemory:
    """A host without a device: the process's peak resident set (``VmHWM`` of
    ``/proc/self/status``), reset through ``/proc/self/clear_refs`` (Linux 4.0 on). It has
    no history and no snapshot."""

    STATUS, CLEAR = "/proc/self/status", "/proc/self/clear_refs"

    @classmethod
    def available(cls) -> bool:
        try:
            cls().reset_peak_memory_stats()
            return cls().max_memory_allocated() > 0
        except OSError:
            return False

    def reset_peak_memory_stats(self, device: None = None) -> None:
        with open(self.CLEAR, "w") as f:
            f.write("5")

    def max_memory_allocated(self, device: None = None) -> int:
        with open(self.STATUS) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    max_memory_reserved = max_memory_allocated


def device_allocator() -> Allocator | None:
    """The allocator of this process's device: torch_npu's with an NPU, else CUDA's with a GPU;
    None on a host without either (there is no device memory to read)."""
    try:
        import torch_npu

        if torch_npu.npu.is_available():
            return cast(Allocator, torch_npu.npu.memory)
    except Exception:  # ImportError, or OSError from missing CANN libraries
        pass
    import torch

    return cast(Allocator, torch.cuda.memory) if torch.cuda.is_available() else None


def is_oom(err: BaseException | None) -> bool:
    """An out-of-memory error of a device allocator: torch's ``OutOfMemoryError`` (CUDA's, and
    torch_npu's where it raises it), or a ``RuntimeError`` saying "out of memory" (torch_npu's
    "NPU out of memory")."""
    if err is None:
        return False
    import torch

    if isinstance(err, torch.OutOfMemoryError):
        return True
    return isinstance(err, RuntimeError) and "out of memory" in str(err).lower()
