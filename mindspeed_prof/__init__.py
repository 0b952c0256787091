"""mindspeed-prof: config-driven profiling for RL post-training loops."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Profiler",
    "TrainerHook",
    "current",
    "mstx",
    "mstx_timer_decorator",
    "validate",
]

# Imported on first use: the Hydra plugin imports mindspeed_prof.config and must stay cheap.
_LAZY = {
    "ConfigError": "mindspeed_prof.config.validate",
    "validate": "mindspeed_prof.config.validate",
    "Profiler": "mindspeed_prof.capture.profiler",
    "TrainerHook": "mindspeed_prof.capture.hooks",
    "current": "mindspeed_prof.capture.profiler",
    "mstx_timer_decorator": "mindspeed_prof.mstx",
}


def __getattr__(name: str) -> Any:
    if name == "mstx":
        return importlib.import_module("mindspeed_prof.mstx")
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'mindspeed_prof' has no attribute {name!r}")
