"""The schedule inside a step: which executions (mini-batches) of a captured stage are captured,
as ``torch.profiler.schedule`` walks its steps.

The first ``skip_first`` executions of each step are left alone; then cycles of ``wait``
(nothing), ``warmup`` (the profiler runs, its data is discarded) and ``active`` (captured), each
execution one slot; ``repeat`` cycles (0: without end). torch counts the profiler's ``step()``
calls; here each execution of the stage within one step is one, counted from 0 at every step,
as verl advances its schedule once per update mini-batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mindspeed_prof.config.schema import IntegratedConfig

__all__ = ["InnerAction", "InnerSchedule"]

#: What an execution gets: nothing, a warmup (recorded, discarded) or a capture.
InnerAction = Literal["none", "warmup", "record"]


@dataclass(frozen=True)
class InnerSchedule:
    """``schedule_*`` of a config; ``stage``: the stage it walks ("" every captured stage)."""

    active: int
    skip_first: int = 0
    wait: int = 0
    warmup: int = 0
    repeat: int = 0
    stage: str = ""

    @classmethod
    def from_config(cls, cfg: IntegratedConfig) -> InnerSchedule | None:
        """The config's schedule, or None where ``schedule_active`` is 0 (every execution)."""
        if cfg.schedule_active <= 0:
            return None
        return cls(
            active=cfg.schedule_active,
            skip_first=cfg.schedule_skip_first,
            wait=cfg.schedule_wait,
            warmup=cfg.schedule_warmup,
            repeat=cfg.schedule_repeat,
            stage=cfg.schedule_stage,
        )

    def walks(self, stage: str) -> bool:
        return not self.stage or self.stage == stage

    def action(self, index: int) -> InnerAction:
        """What execution ``index`` (0-based, within its step) gets."""
        if index < self.skip_first:
            return "none"
        i = index - self.skip_first
        cycle = self.wait + self.warmup + self.active
        if self.repeat and i >= self.repeat * cycle:
            return "none"
        at = i % cycle
        if at < self.wait:
            return "none"
        return "warmup" if at < self.wait + self.warmup else "record"
