"""mindspeed-prof: config-driven profiling for RL post-training loops."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Profiler",
    "ProfilerError",
    "TrainerHook",
    "across_ranks",
    "current",
    "mstx",
    "mstx_timer_decorator",
    "validate",
]

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from mindspeed_prof import mstx
    from mindspeed_prof.capture.hooks import TrainerHook
    from mindspeed_prof.capture.profiler import Profiler, ProfilerError, current
    from mindspeed_prof.capture.telemetry import across_ranks
    from mindspeed_prof.config.validate import ConfigError, validate
    from mindspeed_prof.mstx import mstx_timer_decorator

# Lazy because the Hydra plugin imports mindspeed_prof.config at every app's start.
_LAZY = {
    "ConfigError": "mindspeed_prof.config.validate",
    "validate": "mindspeed_prof.config.validate",
    "Profiler": "mindspeed_prof.capture.profiler",
    "ProfilerError": "mindspeed_prof.capture.profiler",
    "TrainerHook": "mindspeed_prof.capture.hooks",
    "current": "mindspeed_prof.capture.profiler",
    "across_ranks": "mindspeed_prof.capture.telemetry.spread",
    "mstx_timer_decorator": "mindspeed_prof.mstx",
}


def __getattr__(name: str) -> object:
    if name == "mstx":
        return importlib.import_module("mindspeed_prof.mstx")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mindspeed_prof' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
