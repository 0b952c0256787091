"""``python -m mindspeed_prof.demo [overrides]``: the demo RL trainer as a Hydra app."""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

__all__ = ["main"]


@hydra.main(version_base=None, config_path="../conf", config_name="demo")
def main(cfg: DictConfig) -> None:
    from mindspeed_prof.demo.trainer import train

    train(cfg)


if __name__ == "__main__":
    main()
