"""The demo's integrated worker: actor, reference and critic on one process, six RL stages, and
the transitions of a colocated step around them (weight sync, offload, onload)."""

from __future__ import annotations

import copy
import time
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TYPE_CHECKING, TypedDict

import torch

from mindspeed_prof.capture.profiler import Profiler
from mindspeed_prof.demo.colocated import Colocated
from mindspeed_prof.demo.knobs import DemoConfig
from mindspeed_prof.demo.model import Critic, Policy, make_prompts, reward
from mindspeed_prof.demo.rollout import (
    kept_groups,
    plant_constant_groups,
    response_lengths,
    zero_variance,
)
from mindspeed_prof.mstx import mstx_timer_decorator
from mindspeed_prof.ray import ProfilerMixin

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["IntegratedWorker", "Timings"]


class Timings(TypedDict):
    """A worker's own clock: seconds per stage, all steps together."""

    rank: int
    stage_seconds: dict[str, float]


class IntegratedWorker(ProfilerMixin):
    """One GRPO/PPO-style training step per ``train_step`` call, each stage under the profiler."""

    def __init__(self, rank: int, demo: DemoConfig, profiler_config: Mapping[str, object]) -> None:
        torch.set_num_threads(1)
        torch.manual_seed(demo.seed)  # every rank starts from the same policy
        self.rank, self.d = rank, demo
        self.gen = torch.Generator().manual_seed(demo.seed * 1000 + rank)
        v, n = demo.vocab, demo.length
        self.actor = Policy(v, n, demo.hidden)
        self.reference = copy.deepcopy(self.actor).requires_grad_(False)
        self.critic = Critic(v, n, demo.hidden)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=demo.actor_lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=demo.critic_lr)
        self.colocated = Colocated(
            self.actor, [self.actor_opt, self.critic_opt], demo.transition_ms
        )
        self.init_profiler(profiler_config, rank=rank)
        self.stage_seconds: dict[str, float] = {}
        self._kept: list[torch.Tensor] = []  # demo.leak_mb: what actor_update never frees

    def train_step(self, step: int) -> dict[str, float]:
        prof: Profiler = self.profiler
        with prof.step(step):
            self.colocated.weight_sync(self._stage)  # the engine generates with the new policy
            self.colocated.offload(self._stage)
            with self._stage("actor_generate"):
                if step == self.d.slow_step and self.rank == 0:
                    time.sleep(0.5)  # +demo.slow_step=N: one slow step on rank 0 (anomaly demo)
                prompts = make_prompts(
                    self.d.prompts, self.d.length, self.d.vocab, self.gen
                ).repeat_interleave(self.d.group, dim=0)
                responses = self.colocated.engine.generate(prompts, self.gen)
                scored, kept, tokens = self._rollout(prompts, responses)
                prompts, responses, rewards = prompts[kept], responses[kept], scored[kept]
            self.colocated.onload(self._stage)
            with self._stage("actor_compute_log_prob"), torch.no_grad():
                old_logp = self.actor.log_prob(prompts, responses)
            with self._stage("reference_compute_log_prob"), torch.no_grad():
                ref_logp = self.reference.log_prob(prompts, responses)
            with self._stage("critic_compute_values"), torch.no_grad():
                values = self.critic(prompts)
            adv = self._advantages(rewards, values)
            # demo.minibatch_stages: each PPO epoch its own execution of the stage (a mini-batch)
            epochs = self.d.ppo_epochs if self.d.minibatch_stages else 1
            for epoch in range(epochs):
                with self._stage("actor_update"):
                    if self.d.leak_mb > 0 and not epoch:  # kept across steps: its peak grows
                        self._kept.append(torch.ones(int(self.d.leak_mb * (1 << 20)) // 4))
                    if not epoch:
                        prof.count("tokens_trained", tokens)
                    stats = self._update_actor(
                        prompts, responses, old_logp, ref_logp, adv, self.d.ppo_epochs // epochs
                    )
            with self._stage("critic_update"):
                stats["value_loss"] = self._update_critic(prompts, rewards)
        return {"step": step, "rank": self.rank, "reward": scored.mean().item(), **stats}

    def _rollout(
        self, prompts: torch.Tensor, responses: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Inside ``actor_generate``: the long tail decoded, the rewards (reward-constant groups
        planted where asked), the samples kept for training (dynamic sampling where asked),
        all of it counted; the rewards, the kept samples and their tokens."""
        d, prof, group = self.d, self.profiler, self.d.group
        lengths, cut = response_lengths(
            len(responses),
            d.length,
            d.long_tail,
            d.long_tail_length,
            d.max_response_length,
            self.gen,
        )
        longer = lengths > d.length
        if bool(longer.any()):  # the batch decodes until its longest response ends
            self.colocated.engine.decode_more(
                int(longer.sum()), int(lengths.max()) - d.length, self.gen
            )
        rewards = plant_constant_groups(
            self._score(prompts, responses), group, d.constant_reward_groups, self.gen
        )
        flat = zero_variance(rewards, group)
        kept = kept_groups(flat, d.filter_groups).repeat_interleave(group)
        prof.count("tokens_generated", int(lengths.sum()))
        prof.count("response_length", lengths)
        prof.count("responses_truncated", int(cut.sum()))
        prof.count("reward", rewards)
        prof.count("groups", len(flat))
        prof.count("groups_zero_variance", int(flat.sum()))
        prof.count("samples_kept", int(kept.sum()))
        prof.count("samples_dropped", int((~kept).sum()))
        return rewards, kept, int(lengths[kept].sum())

    def _stage(self, name: str) -> _Timed:
        return _Timed(self, name, self.profiler.stage(name))

    @mstx_timer_decorator
    def _score(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        return reward(prompts, responses)

    def _advantages(self, rewards: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """GRPO's group-normalised reward, minus what the critic already expected."""
        g = rewards.view(-1, self.d.group)
        norm = ((g - g.mean(1, keepdim=True)) / (g.std(1, keepdim=True) + 1e-4)).flatten()
        return norm + (rewards - values)

    def _update_actor(
        self,
        prompts: torch.Tensor,
        responses: torch.Tensor,
        old: torch.Tensor,
        ref: torch.Tensor,
        adv: torch.Tensor,
        epochs: int,
    ) -> dict[str, float]:
        clip, beta = self.d.clip, self.d.kl_coef
        for _ in range(epochs):
            logp = self.actor.log_prob(prompts, responses)
            ratio = torch.exp(logp - old)
            a = adv.unsqueeze(-1)
            pg = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
            kl = (torch.exp(ref - logp) - (ref - logp) - 1).mean()  # k3 estimator
            loss = pg + beta * kl
            self.actor_opt.zero_grad()
            loss.backward()
            self.actor_opt.step()
        return {"policy_loss": pg.item(), "kl": kl.item()}

    def _update_critic(self, prompts: torch.Tensor, rewards: torch.Tensor) -> float:
        loss = torch.nn.functional.mse_loss(self.critic(prompts), rewards)
        self.critic_opt.zero_grad()
        loss.backward()
        self.critic_opt.step()
        return float(loss.item())

    def timings(self) -> Timings:
        return {"rank": self.rank, "stage_seconds": dict(self.stage_seconds)}


class _Timed:
    """A stage under the profiler, also timed with a plain clock for the demo's own table."""

    __slots__ = ("_w", "_name", "_inner", "_t0")

    def __init__(
        self, worker: IntegratedWorker, name: str, inner: AbstractContextManager[object]
    ) -> None:
        self._w, self._name, self._inner = worker, name, inner

    def __enter__(self) -> None:
        self._t0 = time.perf_counter()
        self._inner.__enter__()
        d = self._w.d
        if self._name == d.slow_stage and self._w.rank == d.slow_rank:
            time.sleep(d.slow_ms / 1000.0)  # +demo.slow_stage=NAME

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            self._inner.__exit__(kind, err, tb)
        finally:
            seconds = self._w.stage_seconds
            seconds[self._name] = seconds.get(self._name, 0.0) + time.perf_counter() - self._t0
