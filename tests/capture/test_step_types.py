"""Any integral step is ``int(step)`` in every hook; a step that is no integer never raises,
is warned about once, and the valid steps around it are still captured; a capture whose start
fails leaves no file and no open descriptor behind (issue 42, item 2)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from mindspeed_prof import Profiler

STAGE = "actor_update"


def make(tmp_path: Path, **fields: Any) -> Profiler:
    cfg = {"profile": True, "profile_save_path": str(tmp_path / "out"), **fields}
    cfg.setdefault("profile_step_start", 2)
    cfg.setdefault("profile_step_end", 4)
    return Profiler.from_config(cfg, rank=0)


def run_scopes(prof: Profiler, steps: list[Any]) -> None:
    for step in steps:
        with prof.step(step), prof.stage(STAGE):
            torch.randn(4, 4) @ torch.randn(4, 4)


def run_hooks(prof: Profiler, steps: list[Any]) -> None:
    for step in steps:
        prof.on_step_start(step)
        prof.on_stage_start(STAGE, step)
        torch.randn(4, 4) @ torch.randn(4, 4)
        prof.on_stage_end(STAGE, step)
        prof.on_step_end(step)


def outcome(prof: Profiler, root: Path) -> tuple[list[list[int]], list[str]]:
    files = sorted(p.name.split("_step")[1] for p in root.rglob("*") if p.is_file())
    return [c.steps for c in prof.captures], files


INTEGRAL: list[Callable[[int], Any]] = [
    np.int64,
    np.int32,
    np.uint16,
    torch.tensor,  # a 0-d integer tensor
    lambda i: torch.tensor(i, dtype=torch.int32),
    float,  # 2.0: an integer all the same
    np.float64,
]


@pytest.mark.parametrize("run", [run_scopes, run_hooks])
@pytest.mark.parametrize("kind", INTEGRAL)
@pytest.mark.parametrize("fields", [{}, {"stage": STAGE}, {"profile_level": "level_none"}])
def test_an_integral_step_is_its_int(
    tmp_path: Path,
    run: Callable[[Profiler, list[Any]], None],
    kind: Callable[[int], Any],
    fields: dict[str, Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    with make(tmp_path / "int", **fields) as want:
        run(want, list(range(1, 6)))
    with caplog.at_level(logging.WARNING, "mindspeed_prof"), make(tmp_path / "k", **fields) as got:
        run(got, [kind(i) for i in range(1, 6)])
    assert caplog.records == []
    assert outcome(got, tmp_path / "k") == outcome(want, tmp_path / "int")
    assert all(type(s) is int for c in got.captures for s in c.steps)
    assert got.captures and not got.failed


NOT_INTEGERS = ["3", None, 2.5, True, object(), torch.tensor(2.5), torch.ones(2), np.array([1, 2])]


@pytest.mark.parametrize("run", [run_scopes, run_hooks])
@pytest.mark.parametrize("bad", NOT_INTEGERS, ids=lambda v: type(v).__name__)
def test_a_step_that_is_no_integer_is_warned_once_and_valid_steps_are_captured(
    tmp_path: Path,
    run: Callable[[Profiler, list[Any]], None],
    bad: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "mindspeed_prof"), make(tmp_path) as prof:
        steps: list[Any] = []
        for i in range(1, 6):
            steps += [bad, i, bad]
        run(prof, steps)  # raises nothing into the trainer
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "is not an integer" in warned[0], warned
    assert [c.steps for c in prof.captures] == [[2, 3]]
    assert not prof.failed


def test_a_stage_hook_given_no_integer_is_the_current_steps_stage(tmp_path: Path) -> None:
    with make(tmp_path / "want", stage=STAGE) as want:
        run_hooks(want, list(range(1, 6)))
    with make(tmp_path / "got", stage=STAGE) as got:
        for i in range(1, 6):
            with got.step(i):
                got.on_stage_start(STAGE, "oops")  # type: ignore[arg-type]
                got.on_stage_end(STAGE, None)
    assert outcome(got, tmp_path / "got") == outcome(want, tmp_path / "want")
    assert [c.step for c in got.captures] == [2, 3]


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("level", ["level_none", "level0"])
def test_a_failed_start_leaves_no_file_and_no_descriptor(
    tmp_path: Path, level: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A header that cannot be written (the fault of a numpy step before ``as_step``)."""
    real = Profiler.metadata

    def unwritable(self: Profiler, stage: str, step: int) -> Any:
        header = real(self, stage, step)
        header.step = object()  # type: ignore[assignment]
        return header

    monkeypatch.setattr(Profiler, "metadata", unwritable)
    before = open_fds()
    warns = pytest.warns(RuntimeWarning, match="capture start failed")
    with warns, make(tmp_path, profile_level=level) as prof:
        run_scopes(prof, list(range(1, 6)))  # training goes on
    assert prof.failed and prof.captures == []
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file()] == []
    assert open_fds() <= before
