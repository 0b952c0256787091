"""Rank resolution order: explicit, torch.distributed, RANK, 0."""

from __future__ import annotations

import pytest

from mindspeed_prof.capture.rank import resolve_rank


def test_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    assert resolve_rank() == 0
    monkeypatch.setenv("RANK", "5")
    assert resolve_rank() == 5
    assert resolve_rank(2) == 2


def test_torch_distributed_wins_over_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    import torch.distributed as dist

    monkeypatch.setenv("RANK", "9")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        assert resolve_rank() == 0
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("bad", ["x", "-1"])
def test_bad_env(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("RANK", bad)
    with pytest.raises(ValueError, match="RANK"):
        resolve_rank()
