"""Each stage's device memory: the allocator's peak allocated and reserved bytes from the
stage's start (its peaks reset there) to its end, as counters of the stage; and the OOM
observer: an out-of-memory error leaving a stage dumps the allocator's snapshot under
``<save>/oom_<step>_<stage>_<time>/``, writes the ranges so far, names the stage and step, and
lets the error go on to the trainer unchanged."""

from __future__ import annotations

import logging
import sys
import time

from mindspeed_prof.capture.memory.allocator import Allocator, HostMemory, is_oom
from mindspeed_prof.capture.naming import inside, safe_name
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.formats import MEMORY_SNAPSHOT
from mindspeed_prof.jsonio import write_json

__all__ = ["PEAK_ALLOCATED", "PEAK_RESERVED", "PEAK_RSS", "StageMemory"]

log = logging.getLogger("mindspeed_prof")

#: The counters each stage gets (bytes; docs/counters.md).
PEAK_ALLOCATED, PEAK_RESERVED = "memory_peak_allocated_bytes", "memory_peak_reserved_bytes"
#: On a host without a device: the process's peak resident set in the stage.
PEAK_RSS = "memory_peak_rss_bytes"


class StageMemory(Part):
    """``peaks``: each stage's peak allocated and reserved bytes as its counters. A stage inside
    another gets its own; the outer one's is the larger of what it held before the inner one
    began and what the allocator saw since. ``oom``: the OOM observer."""

    def __init__(
        self, host: Host, allocator: Allocator | HostMemory, *, peaks: bool, oom: bool
    ) -> None:
        self.host, self.allocator, self.peaks, self.oom = host, allocator, peaks, oom
        self._on_host = isinstance(allocator, HostMemory)
        self._carry: list[tuple[int, int]] = []  # per open stage: its peaks before a reset

    def _now(self) -> tuple[int, int]:
        a = self.allocator
        return int(a.max_memory_allocated()), int(a.max_memory_reserved())

    def on_stage_start(self, stage: str, step: int | None) -> None:
        if not self.peaks:
            return
        try:
            now = self._now()
            if self._carry:  # the enclosing stage keeps what it saw so far
                self._carry[-1] = _max(self._carry[-1], now)
            self._carry.append((0, 0))
            self.allocator.reset_peak_memory_stats()
        except Exception as err:
            self._off(err)

    def before_stage_end(self, stage: str, step: int | None, failed: bool) -> None:
        allocator = self.allocator
        if failed and self.oom and not isinstance(allocator, HostMemory):
            err = sys.exc_info()[1]
            if is_oom(err):
                self._dump(allocator, stage, step, err)
        if not self.peaks or not self._carry:
            return
        try:
            allocated, reserved = _max(self._carry.pop(), self._now())
            # one value per execution (a distribution): a step's peak is their largest
            if self._on_host:
                self.host.count(PEAK_RSS, [allocated])
                return
            self.host.count(PEAK_ALLOCATED, [allocated])
            self.host.count(PEAK_RESERVED, [reserved])
        except Exception as err:
            self._off(err)

    def _off(self, err: Exception) -> None:
        self.peaks = False
        self.host.warn_once(
            "stage_memory",
            f"mindspeed-prof: stage memory could not be read ({type(err).__name__}: {err}); "
            "it is off for this run, training goes on",
        )

    def _dump(
        self, allocator: Allocator, stage: str, step: int | None, err: BaseException | None
    ) -> None:
        """The allocator's snapshot and what the error was, under the save root; never raises."""
        host = self.host
        try:
            name = f"oom_{step}_{safe_name(stage, 'stage')}_{time.strftime('%Y%m%d-%H%M%S')}"
            folder = inside(host.save_root, name)
            folder.mkdir(parents=True, exist_ok=True)
            stem = f"rank{host.rank}_{safe_name(host.role, 'role')}"
            snapshot = folder / f"{stem}{MEMORY_SNAPSHOT}"
            allocator._dump_snapshot(str(snapshot))
            allocated, reserved = self._now()
            write_json(
                folder / f"{stem}.oom.json",
                {
                    "rank": host.rank,
                    "role": host.role,
                    "stage": stage,
                    "step": step,
                    "error": " ".join(str(err).split())[:2000],
                    "peak_allocated_bytes": allocated,
                    "peak_reserved_bytes": reserved,
                    "snapshot": snapshot.name,
                },
            )
            host.flush_ranges()
            log.warning(
                "mindspeed-prof: out of memory in stage %s of step %s on rank %d; the allocator's "
                "snapshot is in %s (open it at pytorch.org/memory_viz); the error goes on",
                stage,
                step,
                host.rank,
                folder,
            )
        except Exception as fault:  # the OOM is the trainer's to handle, not this
            host.warn_once(
                "oom_snapshot",
                f"mindspeed-prof: out of memory in stage {stage} of step {step}; its snapshot "
                f"could not be written ({type(fault).__name__}: {fault})",
            )


def _max(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return max(a[0], b[0]), max(a[1], b[1])
