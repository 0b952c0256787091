"""``backend: torch_npu``: Ascend's profiler, every ``profiler_config`` field mapped.

The arguments are MindSpeed-RL's (``get_grpo_profiler``): activities NPU then CPU,
``with_modules`` from ``profile_with_module`` (no stacks from it: ``with_stack`` is its own
field), ``msprof_tx`` from ``mstx``, ``data_simplification`` and ``aic_metrics``
(``PipeUtilization`` unless set) in the experimental config, the trace handler's
``analyse_flag`` from ``profile_analysis``. At level0 and level_none, where torch_npu resets AI
Core metrics to none with a warning, none is passed.

Written against torch-npu 2.14.0 (see ``scripts/check_torch_npu_contract.py``). torch_npu
never raises on a bad value (it warns and falls back), so ``validate()`` runs first.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from mindspeed_prof.capture.backends.base import Backend, CaptureTarget, RecordFunctionSink
from mindspeed_prof.config.schema import AicMetrics, ExportType, IntegratedConfig, Level
from mindspeed_prof.formats import NPU_FOLDER
from mindspeed_prof.formats.header import header_json
from mindspeed_prof.mstx import RangeSink

if TYPE_CHECKING:
    import torch_npu

__all__ = ["TorchNpuBackend", "npu_available"]

_LEVELS = {
    Level.level_none: "Level_none",
    Level.level0: "Level0",
    Level.level1: "Level1",
    Level.level2: "Level2",
}
_EXPORT = {ExportType.text: "Text", ExportType.db: "Db"}
_AIC = {
    AicMetrics.none: "AiCoreNone",
    AicMetrics.pipe_utilization: "PipeUtilization",
    AicMetrics.arithmetic_utilization: "ArithmeticUtilization",
    AicMetrics.memory: "Memory",
    AicMetrics.memory_l0: "MemoryL0",
    AicMetrics.memory_ub: "MemoryUB",
    AicMetrics.resource_conflict_ratio: "ResourceConflictRatio",
    AicMetrics.l2_cache: "L2Cache",
    AicMetrics.memory_access: "MemoryAccess",
}
#: The levels at which torch_npu records AI Core metrics.
_AIC_LEVELS = (Level.level1, Level.level2)


def npu_available() -> bool:
    """torch_npu imports (CANN present) and an NPU is visible."""
    try:
        import torch_npu
    except Exception:  # ImportError, or OSError from missing CANN libraries
        return False
    try:
        return bool(torch_npu.npu.is_available())
    except Exception:
        return False


class _Mstx(Protocol):
    """``torch_npu.npu.mstx``: the calls made here."""

    def mark(self, message: str, stream: None) -> object: ...

    def range_start(self, message: str, stream: None) -> int: ...

    def range_end(self, range_id: int) -> object: ...


class _MstxSink:
    """Ranges through ``torch_npu.npu.mstx`` (recorded by the profiler when ``mstx`` is on)."""

    def __init__(self, mstx: _Mstx) -> None:
        self._mstx = mstx

    def range(self, name: str, cat: str = "user_annotation") -> _MstxRange:
        return _MstxRange(self._mstx, name)

    def mark(self, name: str) -> None:
        self._mstx.mark(name, None)

    def range_start(self, name: str) -> int:
        return int(self._mstx.range_start(name, None))

    def range_end(self, range_id: int) -> None:
        self._mstx.range_end(range_id)


class _MstxRange:
    __slots__ = ("_mstx", "_name", "_id")

    def __init__(self, mstx: _Mstx, name: str) -> None:
        self._mstx = mstx
        self._name = name

    def __enter__(self) -> None:
        self._id = self._mstx.range_start(self._name, None)

    def __exit__(self, *exc: object) -> None:
        self._mstx.range_end(self._id)


class TorchNpuBackend(Backend):
    """One ``torch_npu.profiler.profile`` per capture, written by its trace handler.

    Output: ``<dir>/<stem>_<pid>_<timestamp>_ascend_pt/``; with ``profile_analysis`` torch_npu
    parses it right after the capture (``ASCEND_PROFILER_OUTPUT/``).
    """

    name = "torch_npu"

    def __init__(self, cfg: IntegratedConfig) -> None:
        super().__init__(cfg)
        import torch_npu

        self._npu = torch_npu
        self._prof: torch_npu.profiler.profile | None = None
        self._target: CaptureTarget | None = None
        self._before: set[str] = set()

    def experimental_config(self) -> torch_npu.profiler._ExperimentalConfig:
        p, cfg = self._npu.profiler, self.cfg
        metrics = cfg.aic_metrics if cfg.profile_level in _AIC_LEVELS else AicMetrics.none
        return p._ExperimentalConfig(
            aic_metrics=getattr(p.AiCMetrics, _AIC[metrics]),
            profiler_level=getattr(p.ProfilerLevel, _LEVELS[cfg.profile_level]),
            export_type=getattr(p.ExportType, _EXPORT[cfg.profile_export_type]),
            data_simplification=cfg.data_simplification,
            msprof_tx=cfg.mstx,
        )

    def activities(self) -> list[torch_npu.profiler.ProfilerActivity]:
        act, cfg = self._npu.profiler.ProfilerActivity, self.cfg
        acts = [act.NPU] if cfg.profile_with_npu or not cfg.profile_with_cpu else []
        if cfg.profile_with_cpu:  # (mstx alone still needs the device stream: NPU)
            acts.append(act.CPU)
        return acts

    def start(self, target: CaptureTarget) -> None:
        p, cfg = self._npu.profiler, self.cfg
        target.directory.mkdir(parents=True, exist_ok=True)
        self._before = {c.name for c in target.directory.iterdir()}
        self._prof = p.profile(
            with_modules=cfg.profile_with_module,
            with_stack=cfg.with_stack,
            record_shapes=cfg.profile_record_shapes,
            profile_memory=cfg.profile_with_memory,
            activities=self.activities(),
            experimental_config=self.experimental_config(),
            on_trace_ready=p.tensorboard_trace_handler(
                dir_name=str(target.directory),
                worker_name=target.stem,
                analyse_flag=cfg.profile_analysis and not target.capture.warmup,
                async_mode=False,
            ),
        )
        self._target = target
        self._prof.start()
        # the run, rank and window in profiler_metadata.json, as the other backends' headers
        add = getattr(self._prof, "add_metadata_json", None)
        if add is not None:
            add("mindspeed_prof", header_json(target.metadata))

    def sinks(self) -> list[RangeSink]:
        sinks: list[RangeSink] = []
        if self._prof is None:
            return sinks
        if self.cfg.mstx:
            sinks.append(_MstxSink(self._npu.npu.mstx))
        if self.cfg.profile_level is not Level.level_none:
            sinks.append(RecordFunctionSink())
        return sinks

    def records(self) -> list[str]:
        if self._prof is None:
            return []
        cfg = self.cfg
        out = ["ranges"] if cfg.mstx else []
        if cfg.profile_level is not Level.level_none:
            acts = self.activities()
            act = self._npu.profiler.ProfilerActivity
            out += [
                what for a, what in ((act.CPU, "host ops"), (act.NPU, "device ops")) if a in acts
            ]
        return out

    def stop(self) -> list[Path]:
        prof, target = self._prof, self._target
        self._prof, self._target = None, None
        if prof is None or target is None:
            return []
        prof.stop()
        return sorted(
            p
            for p in target.directory.iterdir()
            if p.name not in self._before and p.name.endswith(NPU_FOLDER)
        )
