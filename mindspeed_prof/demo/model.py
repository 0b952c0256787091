"""The demo's toy RL task: copy a short token sequence; a tiny policy, reference and critic."""

from __future__ import annotations

import torch
from torch import nn

from mindspeed_prof import mstx

__all__ = ["Critic", "Policy", "make_prompts", "reward"]


def make_prompts(batch: int, length: int, vocab: int, generator: torch.Generator) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=generator)


def reward(prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
    """Rule-based reward: the fraction of positions where the response copies the prompt."""
    return (prompts == responses).float().mean(dim=-1)


class Policy(nn.Module):  # type: ignore[misc,unused-ignore]  # torch is read as Any
    """Autoregressive policy: position t sees prompt token t, the previous token and t itself."""

    def __init__(self, vocab: int, length: int, hidden: int = 64) -> None:
        super().__init__()
        self.vocab, self.length = vocab, length
        self.prompt = nn.Embedding(vocab, hidden)
        self.prev = nn.Embedding(vocab + 1, hidden)  # index vocab = start token
        self.pos = nn.Embedding(length, hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, vocab))

    def logits(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Logits for every response position given the tokens before it (teacher forcing)."""
        start = torch.full_like(responses[:, :1], self.vocab)
        prev = torch.cat([start, responses[:, :-1]], dim=1)
        pos = torch.arange(self.length, device=prompts.device)
        return self.mlp(self.prompt(prompts) + self.prev(prev) + self.pos(pos))

    def generate(self, prompts: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        with torch.no_grad():
            return self._generate(prompts, generator)

    def _generate(self, prompts: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        batch = prompts.shape[0]
        out = torch.empty(batch, self.length, dtype=torch.long)
        prev = torch.full((batch,), self.vocab, dtype=torch.long)
        for t in range(self.length):
            with mstx.iteration(t):  # one decode iteration (iteration windows: docs/rollout.md)
                h = self.prompt(prompts[:, t]) + self.prev(prev) + self.pos.weight[t]
                probs = torch.softmax(self.mlp(h), dim=-1)
                prev = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
                out[:, t] = prev
        return out

    def decode_more(self, rows: int, steps: int, generator: torch.Generator) -> None:
        """``steps`` more decode iterations for ``rows`` responses still running after the
        answer (tokens the reward ignores): what a batch pays waiting for its longest ones."""
        prev = torch.full((rows,), self.vocab, dtype=torch.long)
        with torch.no_grad():
            for t in range(steps):
                probs = torch.softmax(
                    self.mlp(self.prev(prev) + self.pos.weight[t % self.length]), dim=-1
                )
                prev = torch.multinomial(probs, 1, generator=generator).squeeze(-1)

    def log_prob(self, prompts: torch.Tensor, responses: torch.Tensor) -> torch.Tensor:
        """Per-token log-probabilities of ``responses``, shape (batch, length)."""
        logp = torch.log_softmax(self.logits(prompts, responses), dim=-1)
        return logp.gather(-1, responses.unsqueeze(-1)).squeeze(-1)


class Critic(nn.Module):  # type: ignore[misc,unused-ignore]  # as Policy
    """Value head: expected reward of a prompt."""

    def __init__(self, vocab: int, length: int, hidden: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.head = nn.Sequential(
            nn.Linear(hidden * length, hidden), nn.Tanh(), nn.Linear(hidden, 1)
        )

    def forward(self, prompts: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(prompts).flatten(1)).squeeze(-1)
