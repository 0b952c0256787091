"""Rank resolution order: explicit, torch.distributed, RANK, 0."""

from __future__ import annotations

import pytest

from mindspeed_prof.capture.rank import quiet_rank, resolve_rank


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


@pytest.mark.parametrize(
    "bad", ["x", "-1", "abc", "\u0663", "1_0", "+3", "3.0", "0x1", "\uff11", "1 2", "\u00b2"]
)
def test_a_rank_is_ascii_decimal_digits_only(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    """``int`` reads ``'\u0663'`` (an Arabic-Indic 3), ``1_0`` and ``+3`` as ranks; a launcher
    writes none of them: each is an error in one line naming RANK and what is allowed."""
    monkeypatch.setenv("RANK", bad)
    with pytest.raises(ValueError) as err:
        resolve_rank()
    message = str(err.value)
    assert message.startswith(f"environment variable RANK={bad!r} is no rank: ")
    assert "ASCII digits 0-9" in message and "\n" not in message
    assert quiet_rank(None) == 0  # a profiler that is off: rank 0, no error


@pytest.mark.parametrize(("text", "rank"), [("0", 0), ("12", 12), (" 7\n", 7), ("007", 7)])
def test_an_ascii_rank_is_read(monkeypatch: pytest.MonkeyPatch, text: str, rank: int) -> None:
    monkeypatch.setenv("RANK", text)
    assert resolve_rank() == rank
