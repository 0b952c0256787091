"""``ProfilerCallback``: the Hydra callback every ``profiler`` preset turns on."""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import time
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

__all__ = ["ProfilerCallback"]

log = logging.getLogger("mindspeed_prof")


class ProfilerCallback(Callback):
    """Validates ``profiler_config`` before the task runs, builds ``mindspeed_prof.current()``,
    and writes the job's ``manifest.json``; closes and finalises it however the task ends.

    Holds no open resources between jobs, so launchers that pickle callbacks can ship it.
    """

    def __init__(self) -> None:
        self._job: dict[str, Any] | None = None

    def on_job_start(self, config: DictConfig, *, task_function: Any = None,
                     **kwargs: Any) -> None:
        if "profiler_config" not in config:
            return
        from mindspeed_prof.config.validate import ConfigError, validate

        try:
            cfg = validate(config.profiler_config)
        except ConfigError as err:
            # Hydra turns callback exceptions into warnings; SystemExit stops the job.
            raise SystemExit(f"mindspeed-prof: invalid config: {err}") from None
        self._job = None
        unplanned = bool(cfg.flight_recorder_steps or cfg.anomaly_factor)  # flight, anomaly
        if not (cfg.profile or unplanned or cfg.on_demand):  # current(): a disabled profiler
            import mindspeed_prof.capture.current as current

            current.set_current(None)
            return
        from mindspeed_prof.capture.profiler import Profiler

        hydra_cfg = HydraConfig.get()
        save = Path(cfg.profile_save_path).expanduser()
        if not save.is_absolute():
            save = Path(hydra_cfg.runtime.output_dir) / save
        cfg.profile_save_path = str(save)
        from mindspeed_prof.analysis.summary import after_capture

        profiler = Profiler(cfg, on_capture=after_capture(cfg))
        if not (profiler.plan.enabled or unplanned):  # off here; on-demand requests only
            return
        from mindspeed_prof.formats.manifest import host_info, manifest_name, versions

        resolved = OmegaConf.to_container(config.profiler_config, resolve=True, enum_to_str=True)
        # Several jobs of one sweep write into one save root outside their own dirs.
        shared = _multirun(hydra_cfg) and not save.resolve().is_relative_to(
            Path(hydra_cfg.runtime.output_dir).resolve())
        job_num = _job_num(hydra_cfg)
        name = manifest_name(profiler.rank, job_num if shared else None)
        self._job = {
            "profiler": profiler,
            "path": save / name,
            "cwd": hydra_cfg.runtime.cwd,
            "shared": shared,
            "manifest": {
                "status": "running",
                "job": {"name": hydra_cfg.job.name, "num": job_num,
                        "overrides": list(hydra_cfg.overrides.task),
                        "output_dir": hydra_cfg.runtime.output_dir},
                "rank": profiler.rank,
                **host_info(),
                "start_time": time.time(),
                "versions": versions(),
                "profiler_config": resolved,
            },
        }
        _write(self._job)
        atexit.register(self._finish, "exited")  # sys.exit in the task skips on_job_end

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        status = getattr(getattr(job_return, "status", None), "name", "COMPLETED")
        self._finish("completed" if status == "COMPLETED" else "failed")

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mindspeed_prof.analysis.sweep import sweep_summary

        save = Path(str(config.get("profiler_config", {}).get("integrated", {})
                        .get("profile_save_path", "")))
        shared = [save] if save.is_absolute() else []  # jobs that share one save root
        sweep_dir = Path(config.hydra.sweep.dir)
        rows = sweep_summary(sweep_dir, shared_roots=shared)
        if any(r["status"] != "no manifest" for r in rows):
            from mindspeed_prof.views.text import print_sweep

            print_sweep(rows, sweep_dir)

    def _finish(self, status: str) -> None:
        job, self._job = self._job, None
        if job is None:
            return
        profiler = job["profiler"]
        profiler.close()
        from mindspeed_prof.formats.manifest import list_files

        manifest = job["manifest"]
        manifest["status"] = "failed" if profiler.failed and status == "completed" else status
        manifest["profiler_failed"] = profiler.failed
        manifest["end_time"] = time.time()
        manifest["duration_s"] = round(manifest["end_time"] - manifest["start_time"], 3)
        manifest["captures"] = [c.to_json() for c in profiler.captures]
        manifest["triggers"] = list(profiler.triggers)  # anomalies: rank, step, stage, median
        manifest["files"] = list_files(job["path"].parent)
        _write(job)
        if _reports(profiler):
            log.info("%s", _where(job["path"].parent, Path(job["cwd"]), manifest,
                                  job["shared"]))
        if profiler.cfg.profile_analysis:
            try:
                from mindspeed_prof.analysis.summary import write_run_summary

                write_run_summary(job["path"].parent)
            except Exception as err:
                log.warning("mindspeed-prof: analysis after the job failed: %s", err)


def _reports(profiler: Any) -> bool:
    """One rank tells where the captures are: rank 0, or the first rank in ``profile_ranks``."""
    ranks = profiler.cfg.profile_ranks
    return profiler.rank == (min(ranks) if isinstance(ranks, list) and ranks else 0)


def _where(root: Path, cwd: Path, manifest: dict[str, Any], shared: bool) -> str:
    """``mindspeed-prof: 2 captures in outputs/...; read them: mindspeed-prof analyse ...``."""
    from mindspeed_prof.formats.manifest import capture_count, nothing_captured

    shown = os.path.relpath(root, cwd) if root.is_relative_to(cwd) else str(root)
    reason = nothing_captured(manifest, shared)
    if reason:
        return f"mindspeed-prof: nothing captured in {shown}: {reason}"
    n = capture_count(manifest, shared)
    return (f"mindspeed-prof: {n} capture{'' if n == 1 else 's'} in {shown}; "
            f"read them: mindspeed-prof analyse {shlex.quote(shown)}")


def _write(job: dict[str, Any]) -> None:
    from mindspeed_prof.jsonio import write_json

    try:
        write_json(job["path"], job["manifest"])
    except OSError as err:
        log.warning("mindspeed-prof: could not write %s: %s", job["path"], err)


def _multirun(hydra_cfg: Any) -> bool:
    return str(getattr(hydra_cfg, "mode", "")).endswith("MULTIRUN")


def _job_num(hydra_cfg: Any) -> int | None:
    try:
        return int(hydra_cfg.job.num)
    except Exception:
        return None
