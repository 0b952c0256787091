"""Who a profiler's captures belong to: its run, its rank, what their files record about them
(the header) and what they are named (the stem). Mixed into ``Profiler``, whose state it uses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from mindspeed_prof.capture import run as _run
from mindspeed_prof.capture.naming import claim_stem, host_name, process_token
from mindspeed_prof.capture.rank import quiet_rank
from mindspeed_prof.formats.header import CaptureHeader, ModelFacts
from mindspeed_prof.formats.stem import Stem

if TYPE_CHECKING:
    from mindspeed_prof.capture.plan import CapturePlan
    from mindspeed_prof.config.schema import IntegratedConfig

__all__ = ["CaptureIdentity"]


class CaptureIdentity:
    """``run``, ``refresh_rank``, ``metadata`` and ``new_stem``, for ``Profiler``."""

    if TYPE_CHECKING:  # the profiler's, which these use
        cfg: IntegratedConfig
        plan: CapturePlan
        enabled: bool
        rank: int
        role: str
        _rank_arg: int | None
        _run: tuple[str, str] | None

    def refresh_rank(self) -> int:
        """The rank again, where profiling is off: it may be known only now (torch.distributed)."""
        if not self.enabled:
            self.rank = quiet_rank(self._rank_arg)
        return self.rank

    @property
    def run(self) -> tuple[str, str]:
        """``(run id, how the ranks agreed on it)`` (``capture.run``), resolved on first use."""
        if self._run is None:
            self._run = _run.resolve()
        return self._run

    def metadata(self, stage: str, step: int) -> CaptureHeader:
        """What a capture's files record about it (the range file's header, the trace's):
        ``comm_kernels`` too where set, so every analysis of the trace classifies with it."""
        model = None
        if self.cfg.model_flops_per_token or self.cfg.peak_tflops:  # for MFU (0: not given)
            model = ModelFacts(
                flops_per_token=self.cfg.model_flops_per_token, peak_tflops=self.cfg.peak_tflops
            )
        return CaptureHeader(
            run=self.run[0],
            rank=self.rank,
            role=self.role,
            stage=stage,
            step=step,
            host=host_name(),
            pid=os.getpid(),
            level=self.cfg.profile_level.value,
            window=[self.plan.start, self.plan.end],
            warmup_steps=self.plan.warmup,
            comm_kernels=self.cfg.comm_kernels or None,
            model=model,
        )

    def new_stem(self, folder: Path, step: int, index: int) -> str:
        """``rank<r>_<host>_<pid>_<token>_step<s>[_<index>]``, claimed in ``folder``
        (``naming.claim_stem``): no other process or job gets it."""
        stem = Stem(self.rank, host_name(), os.getpid(), step, process_token(), index)
        return claim_stem(folder, stem.format())
