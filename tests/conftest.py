"""Shared fixtures: a Hydra app outside the package, and a runner for it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

APP = textwrap.dedent('''
    import os, sys, time
    import hydra
    from omegaconf import DictConfig
    import mindspeed_prof

    @hydra.main(version_base=None, config_path=".", config_name="config")
    def main(cfg: DictConfig) -> None:
        import torch
        print("TASK BODY RAN")
        prof = mindspeed_prof.current()
        for step in range(1, cfg.steps + 1):
            with prof.step(step):
                for stage in cfg.stages:
                    with prof.stage(stage):
                        torch.randn(16, 16) @ torch.randn(16, 16)
                        if cfg.fail_at == step and stage == cfg.stages[-1]:
                            raise RuntimeError("boom in " + stage)
                if cfg.exit_at == step:
                    sys.exit(3)
        print("TASK DONE")

    if __name__ == "__main__":
        main()
''')

CONFIG = textwrap.dedent('''
    defaults:
      - profiler: none
      - _self_
    steps: 4
    stages: [actor_generate, actor_update, critic_update]
    fail_at: 0
    exit_at: 0
''')


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A small Hydra app in a temp dir, using the installed plugin (not this repo's files)."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "config.yaml").write_text(CONFIG)
    return tmp_path




@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole test session, shut down at the end."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    from helpers import COUNTS

    if COUNTS:
        terminalreporter.section("reliability counts")
        for what, n in sorted(COUNTS.items()):
            terminalreporter.write_line(f"{what}: {n}")
