"""Hydra imports this module at every app's start: it registers the ``profiler`` presets, the
callback option and the ``profiler_sweep`` group in Hydra's ConfigStore. Keep it cheap: no torch,
ray or torch_npu here.
"""

from __future__ import annotations

from mindspeed_prof.config.presets import register

register()
