import enum

from .experimental_config import AiCMetrics, ExportType, ProfilerLevel, _ExperimentalConfig
from .profiler import profile, tensorboard_trace_handler
from . import profiler  # noqa: F401  (torch_npu.profiler.profiler.analyse)


class ProfilerActivity(enum.Enum):
    CPU = 0
    NPU = 1


def schedule(wait, active, warmup=0, repeat=0, skip_first=0, skip_first_wait=0):
    raise NotImplementedError("mindspeed-prof starts and stops captures itself")


__all__ = ["profile", "ProfilerActivity", "tensorboard_trace_handler", "schedule",
           "_ExperimentalConfig", "ProfilerLevel", "AiCMetrics", "ExportType"]
