"""``TrainerHook``: the events a trainer emits; ``Profiler`` implements them all."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["TrainerHook"]


@runtime_checkable
class TrainerHook(Protocol):
    """Step and stage events with the trainer's global step numbers."""

    def on_step_start(self, step: int) -> None: ...

    def on_step_end(self, step: int) -> None: ...

    def on_stage_start(self, stage: str, step: int) -> None: ...

    def on_stage_end(self, stage: str, step: int) -> None: ...

    def on_train_end(self) -> None: ...
