"""A memory window (verl's and slime's ``memory_snapshot_num_steps``): the allocator's history
recorded from the first of ``memory_window_steps`` captured steps to the last, written as one
snapshot (``<save>/<role>/memory_window/<stem>.memory_snapshot.pickle``, ``<stem>`` naming the
window's first step), instead of one per capture."""

from __future__ import annotations

from mindspeed_prof.capture.memory.allocator import Allocator
from mindspeed_prof.capture.naming import inside, release_stem, safe_name
from mindspeed_prof.capture.part import Host, Part
from mindspeed_prof.formats import MEMORY_SNAPSHOT

__all__ = ["MemoryWindow"]


class MemoryWindow(Part):
    """Records the allocator's history over each run of ``steps`` captured steps."""

    def __init__(self, host: Host, allocator: Allocator, steps: int) -> None:
        self.host, self.allocator, self.steps = host, allocator, steps
        self.first: int | None = None  # the open window's first step
        self.count = 0
        #: Each window written: its first and last step and the snapshot's path.
        self.written: list[tuple[int, int, str]] = []

    def on_step_start(self, step: int) -> None:
        if self.first is not None or not self.host.plan.in_window(step):
            return
        try:
            self.allocator._record_memory_history(
                "all", max_entries=self.host.cfg.trace_alloc_max_entries
            )
            self.first, self.count = step, 0
        except Exception as err:
            self._warn(err)

    def on_step_end(self, step: int, took_ns: int | None, failed: bool) -> None:
        if self.first is None:
            return
        self.count += 1
        if self.count >= self.steps or not self.host.plan.in_window(step + 1):
            self._write(step)

    def on_close(self) -> None:
        if self.first is not None and self.count:
            step = self.host.step_now
            self._write(step if step is not None else self.first)

    def _write(self, last: int) -> None:
        first, self.first = self.first, None
        assert first is not None
        host = self.host
        try:
            folder = inside(host.save_root, safe_name(host.role, "role"), "memory_window")
            folder.mkdir(parents=True, exist_ok=True)
            stem = host.new_stem(folder, first, 0)
            try:
                path = folder / f"{stem}{MEMORY_SNAPSHOT}"
                self.allocator._dump_snapshot(str(path))
                self.written.append((first, last, str(path)))
            finally:
                release_stem(folder, stem)
        except Exception as err:
            self._warn(err)
        finally:
            try:
                self.allocator._record_memory_history(None)
            except Exception as err:
                self._warn(err)

    def _warn(self, err: Exception) -> None:
        self.host.warn_once(
            "memory_window",
            f"mindspeed-prof: the memory window failed ({type(err).__name__}: {err}); "
            "training goes on",
        )
