"""Where a relative save path lives inside a Hydra job."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from mindspeed_prof.formats.save_root import anchor, hydra_save_root, job_save_root


def _hydra(mode: str, num: int, chdir: bool | None) -> SimpleNamespace:
    return SimpleNamespace(
        mode=mode,
        job=SimpleNamespace(num=num, chdir=chdir),
        runtime=SimpleNamespace(cwd="/launch", output_dir="/out/3"),
    )


def test_job_save_root() -> None:
    rel = Path("prof")
    assert job_save_root(
        Path("/abs"), launch_dir=Path("/l"), output_dir=Path("/o"), chdir=True, job_num=1
    ) == Path("/abs")
    assert job_save_root(
        rel, launch_dir=Path("/l"), output_dir=Path("/o"), chdir=True, job_num=1
    ) == Path("/o/prof")
    assert job_save_root(
        rel, launch_dir=Path("/l"), output_dir=Path("/o"), chdir=False, job_num=2
    ) == Path("/l/prof/2")
    assert job_save_root(
        rel, launch_dir=Path("/l"), output_dir=Path("/o"), chdir=False, job_num=None
    ) == Path("/l/prof")


def test_hydra_save_root() -> None:
    rel = Path("prof")
    assert hydra_save_root(rel, _hydra("RunMode.MULTIRUN", 3, False)) == Path("/launch/prof/3")
    assert hydra_save_root(rel, _hydra("RunMode.RUN", 3, False)) == Path("/launch/prof")
    assert hydra_save_root(rel, _hydra("RunMode.RUN", 3, True)) == Path("/out/3/prof")


def test_anchor_outside_hydra(tmp_path: Path) -> None:
    assert anchor(tmp_path) == tmp_path
    assert anchor("x").is_absolute()
