"""The demo's colocated step: training and the rollout engine share the devices, so around
generation the training state is offloaded and onloaded, and before it the engine's weights are
synced from the actor (pause generation, gather, transfer, load weights, cache reset).

On CPU every copy is a real copy of the tensors, and small: ``transition_ms`` stands for a slow
host link or a large model, a wait in the offload, the onload and the sync's transfer.
"""

from __future__ import annotations

import copy
import time
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import torch

from mindspeed_prof import mstx

if TYPE_CHECKING:
    from collections.abc import Callable

    from mindspeed_prof.demo.model import Policy

__all__ = ["Colocated"]


class Colocated:
    """The rollout engine's copy of the policy, and the training state it displaces."""

    def __init__(self, actor: Policy, optimizers: list[torch.optim.Optimizer], ms: float) -> None:
        self.actor, self.optimizers, self.ms = actor, optimizers, ms
        self.engine: Policy = copy.deepcopy(actor).requires_grad_(False)
        self.cache: dict[int, torch.Tensor] = {}  # the engine's prefix cache, reset at a sync
        self._host: list[torch.Tensor] = []

    def _wait(self) -> None:
        if self.ms > 0:
            time.sleep(self.ms / 1000.0)

    def _state(self) -> list[torch.Tensor]:
        return [
            t
            for opt in self.optimizers
            for state in opt.state.values()
            for t in state.values()
            if isinstance(t, torch.Tensor) and t.dim() > 0
        ]

    def weight_sync(self, stage: Callable[[str], AbstractContextManager[None]]) -> None:
        """The actor's weights into the engine, each part its own range inside the stage."""
        with stage("weight_sync"):
            with mstx.range("pause_generation"):
                self.engine.eval()
            with mstx.range("gather"):
                gathered = [p.detach().clone() for p in self.actor.parameters()]
            with mstx.range("transfer"):
                bucket = torch.cat([g.flatten() for g in gathered])
                self._wait()
            with mstx.range("load_weights"), torch.no_grad():
                at = 0
                for p in self.engine.parameters():
                    p.copy_(bucket[at : at + p.numel()].view_as(p))
                    at += p.numel()
            with mstx.range("cache_reset"):
                self.cache.clear()

    def offload(self, stage: Callable[[str], AbstractContextManager[None]]) -> None:
        """The optimizer state to host memory, for the engine's time on the device."""
        with stage("offload"):
            self._host = [t.clone() for t in self._state()]
            self._wait()

    def onload(self, stage: Callable[[str], AbstractContextManager[None]]) -> None:
        """The optimizer state back from host memory, for training."""
        with stage("onload"):
            for t, saved in zip(self._state(), self._host):
                t.copy_(saved)
            self._host = []
            self._wait()
