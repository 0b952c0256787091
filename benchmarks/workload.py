"""A level1 torch capture with shapes of a fake RL loop, made once per run and shared."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

__all__ = ["level1_trace"]


@functools.cache
def level1_trace(ops_per_stage: int, steps: int = 3) -> Path:
    """The text trace (``*.pt.trace.json``) of ``steps`` steps of 6 stages of small matmuls."""
    import torch

    from mindspeed_prof import Profiler
    from mindspeed_prof.config.schema import STAGES

    root = Path(tempfile.mkdtemp(prefix="mindspeed-prof-bench-"))
    cfg = {
        "integrated": {
            "profile": True,
            "profile_level": "level1",
            "profile_record_shapes": True,
            "profile_export_type": "text",
            "profile_step_start": 1,
            "profile_step_end": steps + 1,
            "profile_save_path": str(root),
        }
    }
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    with Profiler.from_config(cfg, rank=0) as prof:
        for step in range(1, steps + 1):
            with prof.step(step):
                for stage in STAGES:
                    with prof.stage(stage):
                        for _ in range(ops_per_stage):
                            (a @ b).relu_().add_(1.0)
    (out,) = (root / "integrated").glob("*.pt.trace.json")
    return out
