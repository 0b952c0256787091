"""``backend: torch``: torch.profiler on CPU and CUDA, NVTX ranges on CUDA.

=========== ==========================================================================
level       what torch.profiler records
=========== ==========================================================================
level_none  nothing: torch.profiler is not started; step, stage and custom ranges only
level0      CPU operators (``profile_with_cpu``) and CUDA kernels (``profile_with_npu``; on a
            machine without CUDA, the host's operators: the host is the device there)
level1      level0 plus FLOP estimates for matmul and convolution
level2      level1 plus Python call stacks
=========== ==========================================================================

``profile_record_shapes``, ``profile_with_memory``, ``profile_with_module`` (modules and
stacks) and ``with_stack`` add to any level. ``profile_with_memory`` also writes torch's memory
timeline on CPU (needs shapes and stacks, which ``memory_debug`` turns on) and a CUDA memory
snapshot (``*.memory_snapshot.pickle``, open it at pytorch.org/memory_viz) on CUDA, its history
kept as ``trace_alloc_max_entries`` and ``stack_depth`` say (verl's torch_memory settings;
``stack_depth`` where torch's ``_record_memory_history`` takes it, which 2.13 does not).
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ContextManager, TypedDict

from mindspeed_prof.capture import crash
from mindspeed_prof.capture.backends.base import Backend, CaptureTarget, RecordFunctionSink
from mindspeed_prof.capture.backends.quiet import quiet_stderr
from mindspeed_prof.capture.trace_file import ends_whole
from mindspeed_prof.config.schema import ExportType, IntegratedConfig, Level
from mindspeed_prof.formats import DB, MEMORY_SNAPSHOT, MEMORY_TIMELINE, TRACE
from mindspeed_prof.formats.header import header_json
from mindspeed_prof.formats.shell import writable_name
from mindspeed_prof.formats.sqlite_trace import write_db
from mindspeed_prof.mstx import RangeSink

if TYPE_CHECKING:
    import torch

__all__ = ["TorchBackend"]


class MemoryHistory(TypedDict, total=False):
    """The arguments of torch's ``_record_memory_history``."""

    max_entries: int
    stack_depth: int


class _NvtxSink:
    """Ranges as NVTX push/pop, for Nsight Systems."""

    def __init__(self) -> None:
        from torch.cuda import nvtx

        self._nvtx = nvtx

    def range(self, name: str, cat: str = "user_annotation") -> ContextManager[object]:
        cm: ContextManager[object] = self._nvtx.range(name)
        return cm

    def mark(self, name: str) -> None:
        self._nvtx.mark(name)

    def range_start(self, name: str) -> int:
        return int(self._nvtx.range_start(name))

    def range_end(self, range_id: int) -> None:
        self._nvtx.range_end(range_id)


class TorchBackend(Backend):
    """One ``torch.profiler.profile`` per capture, exported with torch's own Chrome exporter."""

    name = "torch"

    def __init__(self, cfg: IntegratedConfig) -> None:
        super().__init__(cfg)
        import torch

        self._torch = torch
        self.cuda = bool(torch.cuda.is_available())
        self.activities = self._activities()
        self._prof: torch.profiler.profile | None = None
        self._target: CaptureTarget | None = None
        self._extra: list[RangeSink] = []
        self._warmup = False

    def _activities(self) -> list[torch.profiler.ProfilerActivity]:
        from torch.profiler import ProfilerActivity

        acts = []
        # Without an accelerator the host is the device: device activity is its operators.
        if self.cfg.profile_with_cpu or (self.cfg.profile_with_npu and not self.cuda):
            acts.append(ProfilerActivity.CPU)
        if self.cfg.profile_with_npu and self.cuda:
            acts.append(ProfilerActivity.CUDA)
        return acts

    @property
    def with_stack(self) -> bool:
        cfg = self.cfg
        return cfg.with_stack or cfg.profile_with_module or cfg.profile_level is Level.level2

    @property
    def snapshots(self) -> bool:
        """A CUDA memory snapshot per capture (not with a memory window: ``capture.memory``)."""
        cfg = self.cfg
        return cfg.profile_with_memory and self.cuda and not cfg.memory_window_steps

    @property
    def records_ops(self) -> bool:
        return self.cfg.profile_level is not Level.level_none and bool(self.activities)

    def start(self, target: CaptureTarget) -> None:
        cfg = self.cfg
        self._target = target
        target.directory.mkdir(parents=True, exist_ok=True)
        self._extra = []
        self._warmup = target.capture.warmup  # a schedule's warmup: run, then discarded
        if self._warmup:
            if self.records_ops:
                self._prof = self._torch.profiler.profile(activities=self.activities)
                with quiet_stderr():
                    self._prof.start()
            return
        if cfg.mstx or not self.records_ops:
            self._open_spans(target)
        if cfg.mstx and self.cuda:
            self._extra.append(_NvtxSink())
        if self.snapshots:
            self._torch.cuda.memory._record_memory_history(**self.memory_history())
        if not self.records_ops:
            return
        level = cfg.profile_level
        self._prof = self._torch.profiler.profile(
            activities=self.activities,
            record_shapes=cfg.profile_record_shapes,
            profile_memory=cfg.profile_with_memory,
            with_stack=self.with_stack,
            with_flops=level in (Level.level1, Level.level2),
            with_modules=cfg.profile_with_module,
        )
        # A block from before the start, freed inside the quiet window: c10's "Memory block of
        # unknown size" warning (once per 1000 such frees) is spent here, not mid-capture.
        primer = self._torch.empty(1) if cfg.profile_with_memory else None
        with quiet_stderr():
            self._prof.start()
            del primer
        self._extra.append(RecordFunctionSink())
        self._prof.add_metadata_json("mindspeed_prof", header_json(target.metadata))
        dist = self._torch.distributed
        if not (dist.is_available() and dist.is_initialized()):
            self._prof.add_metadata_json("distributedInfo", json.dumps({"rank": target.rank}))

    def memory_history(self) -> MemoryHistory:
        """CUDA memory history arguments (verl's torch_memory settings): ``max_entries`` from
        ``trace_alloc_max_entries``; ``stack_depth`` where this torch takes it."""
        kwargs: MemoryHistory = {"max_entries": self.cfg.trace_alloc_max_entries}
        record = self._torch.cuda.memory._record_memory_history
        if "stack_depth" in inspect.signature(record).parameters:
            kwargs["stack_depth"] = self.cfg.stack_depth
        return kwargs

    def sinks(self) -> list[RangeSink]:
        return super().sinks() + self._extra

    def records(self) -> list[str]:
        from torch.profiler import ProfilerActivity

        out = super().records()
        if self._prof is not None:
            out += [
                what
                for act, what in (
                    (ProfilerActivity.CPU, "host ops"),
                    (ProfilerActivity.CUDA, "device ops"),
                )
                if act in self.activities
            ]
        return out

    def stop(self) -> list[Path]:
        target, prof = self._target, self._prof
        self._prof, self._target, self._extra = None, None, []
        if self._warmup:  # stopped without export: a warmup's data is discarded
            self._warmup = False
            if prof is not None:
                with quiet_stderr():
                    prof.stop()
            return []
        written: list[Path] = []
        try:
            if target is not None and self.snapshots:
                written.append(self._dump_snapshot(target))
            if prof is not None and target is not None:
                with quiet_stderr():
                    prof.stop()
                written.extend(self._export(prof, target))
        finally:
            written.extend(self._close_spans())
        return written

    def _export(self, prof: torch.profiler.profile, target: CaptureTarget) -> list[Path]:
        json_path = target.directory / f"{target.stem}{TRACE}"
        tmp = json_path.with_name(json_path.name + ".tmp")
        written = []
        try:  # a half-written export (disk full) is removed; the final name appears complete
            with crash.exporting():  # a SIGTERM without a handler waits for the rename
                with writable_name(tmp) as name:  # Kineto writes the name unescaped into the trace
                    prof.export_chrome_trace(name)
                if self.cfg.profile_export_type is ExportType.db:
                    with open(tmp, "rb") as f:
                        trace = json.load(f)
                    written.append(write_db(trace, target.directory / f"{target.stem}{DB}"))
                else:
                    os.replace(tmp, json_path)
                    written.append(json_path)
        except (KeyboardInterrupt, SystemExit):
            # a signal's exception (the trainer's handler exits) once the exporter wrote the
            # whole trace: it gets its final name before the exception goes on
            if self.cfg.profile_export_type is not ExportType.db and ends_whole(tmp):
                os.replace(tmp, json_path)
            raise
        finally:  # torch's exporter may leave its own "<tmp>.tmp" behind too
            for leftover in tmp.parent.glob(tmp.name + "*"):
                leftover.unlink(missing_ok=True)
        cfg = self.cfg
        if (
            cfg.profile_with_memory
            and not self.cuda
            and cfg.profile_record_shapes
            and self.with_stack
        ):
            written.append(self._memory_timeline(prof, target))
        return written

    def _memory_timeline(self, prof: torch.profiler.profile, target: CaptureTarget) -> Path:
        path = target.directory / f"{target.stem}{MEMORY_TIMELINE}"

        def write(tmp: Path) -> None:
            raw = tmp.with_name(tmp.name + ".json")  # torch picks the format by the suffix
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                prof.export_memory_timeline(str(raw), device="cpu")
            with open(raw, "rb") as src, gzip.open(tmp, "wb") as dst:
                dst.write(src.read())

        return _whole(path, write)

    def _dump_snapshot(self, target: CaptureTarget) -> Path:
        path = target.directory / f"{target.stem}{MEMORY_SNAPSHOT}"
        memory = self._torch.cuda.memory
        try:
            return _whole(path, lambda tmp: memory._dump_snapshot(str(tmp)))
        finally:
            memory._record_memory_history(enabled=None)


def _whole(path: Path, write: Callable[[Path], None]) -> Path:
    """``write(tmp)``, then ``tmp`` renamed to ``path``: a write that fails (a full disk) leaves
    neither, nor what was written beside ``tmp`` (``<tmp>.*``)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        for leftover in tmp.parent.glob(tmp.name + "*"):
            leftover.unlink(missing_ok=True)
    return path
