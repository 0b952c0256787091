"""Where a relative ``profile_save_path`` lives: the current directory, or inside a Hydra job
where the app's own relative files go."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

__all__ = ["HydraNode", "anchor", "hydra_chdir", "hydra_save_root", "job_save_root"]


class _Job(Protocol):
    @property
    def num(self) -> int: ...

    @property
    def chdir(self) -> bool | None: ...


class _Runtime(Protocol):
    @property
    def cwd(self) -> str: ...

    @property
    def output_dir(self) -> str: ...


class HydraNode(Protocol):
    """What is read of a Hydra job's ``hydra`` config node (``HydraConfig.get()``)."""

    @property
    def mode(self) -> object: ...

    @property
    def job(self) -> _Job: ...

    @property
    def runtime(self) -> _Runtime: ...


def anchor(path: str | Path) -> Path:
    """An absolute save path. Inside a Hydra job a relative one lives where the app's own
    relative files do (``job_save_root``); elsewhere in the current directory."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            return hydra_save_root(p, HydraConfig.get())
    except Exception:  # noqa: BLE001 - no Hydra, or its config is not set: plain cwd
        pass
    return p.absolute()


def hydra_save_root(path: Path, hydra: HydraNode) -> Path:
    """``job_save_root`` for the Hydra job whose ``hydra`` config node is given."""
    multirun = str(getattr(hydra, "mode", "")).endswith("MULTIRUN")
    try:
        num = int(hydra.job.num) if multirun else None
    except (TypeError, ValueError):
        num = None
    return job_save_root(
        path,
        launch_dir=Path(hydra.runtime.cwd),
        output_dir=Path(hydra.runtime.output_dir),
        chdir=hydra_chdir(hydra.job.chdir),
        job_num=num,
    )


def hydra_chdir(value: bool | None) -> bool:
    """Whether Hydra moves a job into its output dir: ``hydra.job.chdir``, or when unset
    Hydra's own default (no for ``version_base`` 1.2 and later, ``None`` included)."""
    if value is not None:
        return bool(value)
    from hydra import version

    return not version.base_at_least("1.2")


def job_save_root(
    path: Path, *, launch_dir: Path, output_dir: Path, chdir: bool, job_num: int | None
) -> Path:
    """Where a relative save ``path`` lives for a Hydra job: in the job's working directory,
    as the app's own relative files do. That is the job's output dir with ``hydra.job.chdir``
    true, else the launch dir (MindSpeed-RL's ``version_base=None`` apps: ``./profiler_data``
    next to where it was started), where a multirun job gets ``<path>/<job num>/`` of its own.
    """
    if path.is_absolute():
        return path
    if chdir:
        return output_dir / path
    return launch_dir / path / str(job_num) if job_num is not None else launch_dir / path
