"""Capture backends and ``select_backend`` (``backend: auto|torch_npu|torch|none``)."""

from __future__ import annotations

from mindspeed_prof.capture.backends.base import Backend, CaptureTarget
from mindspeed_prof.config.schema import BackendKind as BackendName
from mindspeed_prof.config.schema import IntegratedConfig

__all__ = ["Backend", "CaptureTarget", "select_backend"]


def select_backend(cfg: IntegratedConfig) -> Backend:
    """``auto``: torch_npu when it imports with an NPU present, else torch (CUDA or CPU)."""
    choice = cfg.backend
    if choice is BackendName.auto:
        from mindspeed_prof.capture.backends.torch_npu import npu_available

        choice = BackendName.torch_npu if npu_available() else BackendName.torch
    if choice is BackendName.torch_npu:
        from mindspeed_prof.capture.backends.torch_npu import TorchNpuBackend

        return TorchNpuBackend(cfg)
    if choice is BackendName.torch:
        from mindspeed_prof.capture.backends.torch import TorchBackend

        return TorchBackend(cfg)
    from mindspeed_prof.capture.backends.null import SpansOnlyBackend

    return SpansOnlyBackend(cfg)
