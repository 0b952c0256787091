"""The demo's rollout bookkeeping, GRPO/DAPO-style: response lengths with an optional long tail
and length limit, reward-constant groups planted on request, the groups dynamic sampling keeps.

Pure functions of tensors (and the worker's generator, drawn from only when a knob is on, so a
run with every knob off draws what it always drew)."""

from __future__ import annotations

import torch

__all__ = ["kept_groups", "plant_constant_groups", "response_lengths", "zero_variance"]


def response_lengths(
    n: int, base: int, tail: float, tail_length: int, limit: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each of ``n`` responses' length in tokens, ``base`` or for a share ``tail`` of them
    ``tail_length``, cut at ``limit`` (0: no limit); and which of them were cut."""
    lengths = torch.full((n,), base, dtype=torch.long)
    if tail > 0:
        lengths[torch.rand(n, generator=generator) < tail] = tail_length
    if limit <= 0:
        return lengths, torch.zeros(n, dtype=torch.bool)
    return lengths.clamp(max=limit), lengths > limit


def plant_constant_groups(
    rewards: torch.Tensor, group: int, share: float, generator: torch.Generator
) -> torch.Tensor:
    """``rewards`` with a share ``share`` of its groups (``group`` consecutive samples each) set
    to their group's mean: every member the same reward, so GRPO learns nothing from them."""
    if share <= 0:
        return rewards
    g = rewards.view(-1, group)
    chosen = torch.rand(g.shape[0], generator=generator) < share
    planted = torch.where(chosen.unsqueeze(1), g.mean(1, keepdim=True).expand_as(g), g)
    return planted.flatten()


def zero_variance(rewards: torch.Tensor, group: int) -> torch.Tensor:
    """Per group: whether all its rewards are equal (no advantage for GRPO)."""
    g = rewards.view(-1, group)
    return (g.max(1).values - g.min(1).values) <= 1e-6


def kept_groups(flat: torch.Tensor, filter_groups: bool) -> torch.Tensor:
    """Per group: kept for training. DAPO's dynamic sampling (``filter_groups``) drops the
    groups with no reward variance (``flat``), unless that would drop every group."""
    if not filter_groups or bool(flat.all()):
        return torch.ones_like(flat)
    return ~flat
