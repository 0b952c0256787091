"""A tiny RL loop (GRPO-shaped: generate, score, update) with mindspeed-prof's hooks.

    python examples/train.py profiler=mstx_light
    python examples/train.py -m profiler=stage_scoped \
        profiler_config.integrated.stage=actor_generate,actor_update
"""

import hydra
import torch
from omegaconf import DictConfig

import mindspeed_prof


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg: DictConfig) -> None:
    torch.manual_seed(cfg.seed)
    actor = torch.nn.Linear(cfg.vocab, cfg.vocab)  # logits of the next token given the prompt
    reference = torch.nn.Linear(cfg.vocab, cfg.vocab).requires_grad_(False)
    reference.load_state_dict(actor.state_dict())
    optimizer = torch.optim.Adam(actor.parameters(), lr=cfg.lr)
    prompts = torch.eye(cfg.vocab).repeat(cfg.batch // cfg.vocab, 1)  # one-hot prompts
    target = prompts.argmax(-1)  # the reward: answer the prompt's own token

    prof = mindspeed_prof.current()  # the job's profiler, which the presets' callback built
    for step in range(1, cfg.steps + 1):
        with prof.step(step):
            with prof.stage("actor_generate"), torch.no_grad():
                answers = torch.distributions.Categorical(logits=actor(prompts)).sample()
            with prof.stage("reference_compute_log_prob"):
                ref_logp = (
                    torch.log_softmax(reference(prompts), -1).gather(1, answers[:, None]).squeeze(1)
                )
            rewards = (answers == target).float()
            advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)  # GRPO: vs the group
            with prof.stage("actor_update"):
                logp = torch.log_softmax(actor(prompts), -1).gather(1, answers[:, None]).squeeze(1)
                loss = -(advantages * logp).mean() + cfg.kl_coef * (logp - ref_logp).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        print(f"step {step}  reward {rewards.mean().item():.3f}")
    prof.close()


if __name__ == "__main__":
    main()
