"""``ProfilerCallback``: the Hydra callback every ``profiler_config`` preset turns on."""

from __future__ import annotations

import atexit
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mindspeed_prof.capture import current
from mindspeed_prof.formats.save_root import hydra_save_root
from mindspeed_prof.hydra import lines
from mindspeed_prof.hydra.launch import command

if TYPE_CHECKING:
    from hydra.conf import HydraConf

    from mindspeed_prof.capture.profiler import Profiler
    from mindspeed_prof.formats.manifest import Manifest

__all__ = ["ProfilerCallback"]

log = logging.getLogger("mindspeed_prof")


class ProfilerCallback(Callback):
    """Validates ``profiler_config`` before the task runs, builds ``mindspeed_prof.current()``,
    and writes the job's manifest (``manifest-<run>.json``: one per job instance and rank);
    closes and finalises it however the task ends.

    Holds no open resources between jobs, so launchers that pickle callbacks can ship it.
    A multirun's summary is written at its end, or at exit when a job failed (Hydra's sweeper
    raises then, before ``on_multirun_end``).
    """

    def __init__(self) -> None:
        self._job: _Job | None = None
        self._sweep: Path | None = None  # the multirun's dir until its summary is out
        self._words: list[str] | None = None  # the multirun's command, as its driver saw it
        self._said: set[str] = set()  # the notes given (a multirun's jobs: once in all)

    def on_job_start(self, config: DictConfig, *, task_function: Any = None, **kwargs: Any) -> None:
        if "profiler_config" not in config:
            return
        from mindspeed_prof.config.schema import to_sections
        from mindspeed_prof.config.validate import ConfigError, sections, validate

        hydra_cfg = HydraConfig.get()
        overrides = list(hydra_cfg.overrides.task)
        typed = lines.typed_fields(overrides)
        try:  # what the command line set stops the run even with profile: false
            cfg = validate(config.profiler_config, typed=typed)
        except ConfigError as err:
            # Hydra turns callback exceptions into warnings; SystemExit stops the job.
            raise SystemExit(f"mindspeed-prof: invalid config: {err}") from None
        self._job = None
        _name_overridden_preset(config.profiler_config, overrides)
        self._say_once(lines.off_note(cfg.profile, typed))
        unplanned = bool(cfg.flight_recorder_steps or cfg.anomaly_factor)  # flight, anomaly
        if not (cfg.profile or unplanned or cfg.on_demand):  # current(): a disabled profiler
            current.set_current(None)
            return
        from mindspeed_prof.capture.profiler import Profiler
        from mindspeed_prof.capture.rank import resolve_rank

        # a relative path where the app's own files go: the launch dir unless hydra.job.chdir
        save = hydra_save_root(Path(cfg.profile_save_path).expanduser(), hydra_cfg)
        cfg.profile_save_path = str(save)
        from mindspeed_prof.analysis.summary import after_capture
        from mindspeed_prof.capture.run import start_job

        job_num = _job_num(hydra_cfg)
        run, how = start_job(job_num if _multirun(hydra_cfg) else None)
        try:  # a RANK that is no rank stops the job before training, in one line (not only
            resolve_rank()  # where it profiles: a flight recorder's dumps carry the rank too)
            profiler = Profiler(cfg, on_capture=after_capture(cfg), run=run)
        except ValueError as err:
            raise SystemExit(f"mindspeed-prof: cannot profile this job: {err}") from None
        world = lines.world_size()
        if lines.reports(profiler.rank, cfg.profile_ranks, world):
            self._say_once(lines.ranks_note(cfg.profile_ranks, world))
            cwd = Path(hydra_cfg.runtime.cwd)
            self._say_once(lines.telemetry_note(cfg.telemetry, save, cwd), logging.INFO)
        if not (profiler.plan.enabled or unplanned):  # off here; on-demand requests only
            return
        import msgspec

        from mindspeed_prof.formats.manifest import (
            Job,
            Manifest,
            host_info,
            manifest_name,
            versions,
        )
        from mindspeed_prof.hydra.launch import launch_info

        # the job's checked settings, and the role sections as composed
        resolved = {**sections(config.profiler_config), **to_sections(cfg)}
        # Several jobs of one sweep write into one save root outside their own dirs.
        shared = _multirun(hydra_cfg) and not save.resolve().is_relative_to(
            Path(hydra_cfg.runtime.output_dir).resolve()
        )
        current.set_job_profiler(profiler)  # current() is it; from_config warns of a second
        self._job = _Job(
            profiler=profiler,
            path=save / manifest_name(run, profiler.rank),
            cwd=Path(hydra_cfg.runtime.cwd),
            shared=shared,
            manifest=Manifest(
                status="running",
                run=run,
                run_how=how,
                job=msgspec.convert(
                    {
                        "name": hydra_cfg.job.name,
                        "num": job_num,
                        "overrides": list(hydra_cfg.overrides.task),
                        "output_dir": hydra_cfg.runtime.output_dir,
                        "world_size": world,  # the ranks doctor expects of profile_ranks
                        **launch_info(hydra_cfg, self._words),  # command, cwd
                    },
                    Job,
                ),
                rank=profiler.rank,
                **host_info(),
                start_time=time.time(),
                versions=versions(),
                profiler_config=resolved,
            ),
        )
        _write(self._job)
        if _multirun(hydra_cfg) and job_num is not None:
            _record(hydra_cfg, job_num, self._job)
        atexit.register(self._finish, "exited")  # sys.exit in the task skips on_job_end

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        status = getattr(getattr(job_return, "status", None), "name", "COMPLETED")
        if status == "COMPLETED":
            self._finish("completed")
        else:
            self._finish("failed", _error_line(getattr(job_return, "_return_value", None)))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._sweep = _sweep_dir(config)  # resolved now, as the launcher resolves it
        self._words = command(list(sys.orig_argv), list(sys.argv))  # jobs may run elsewhere
        atexit.register(self._summary_at_exit)  # a failed job: Hydra raises past the end hook

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep, self._sweep = self._sweep or _sweep_dir(config), None
        atexit.unregister(self._summary_at_exit)
        if sweep is not None:
            _sweep_summary(sweep)

    def _summary_at_exit(self) -> None:
        sweep, self._sweep = self._sweep, None
        if sweep is None:
            return
        try:
            _sweep_summary(sweep)
        except Exception as err:  # at exit: one line, not a traceback
            log.warning("mindspeed-prof: could not write the sweep summary: %s", err)

    def _say_once(self, line: str | None, level: int = logging.WARNING) -> None:
        if line and line not in self._said:
            self._said.add(line)
            log.log(level, "%s", line)

    def _finish(self, status: str, error: str | None = None) -> None:
        job, self._job = self._job, None
        if job is None or not job.profiler.owned:  # a forked child: the parent's to write
            return
        profiler = job.profiler
        profiler.close()
        current.set_job_profiler(None)
        import msgspec

        from mindspeed_prof.formats.manifest import job_files

        manifest = job.manifest
        manifest.status = "failed" if profiler.failed and status == "completed" else status
        if error:
            manifest.error = error  # the task's exception, one line
        manifest.profiler_failed = profiler.failed
        manifest.end_time = time.time()
        manifest.duration_s = round(manifest.end_time - (manifest.start_time or 0.0), 3)
        manifest.captures = [msgspec.structs.replace(c) for c in profiler.captures]
        manifest.triggers = list(profiler.triggers)  # anomalies: rank, step, stage, median
        # what this job (and its Ray workers) wrote, as they recorded it: the root is not
        # walked (it may hold a dataset), and a file gone since is listed nowhere
        manifest.files = job_files(job.path.parent, manifest.captures or [], manifest.run)
        _write(job)
        world = lines.world_size()
        if lines.reports(profiler.rank, profiler.cfg.profile_ranks, world):
            log.info("%s", lines.where_line(job.path.parent, job.cwd, manifest, job.shared, world))
        if profiler.cfg.profile_analysis:
            try:
                from mindspeed_prof.analysis.summary import write_run_summary

                write_run_summary(job.path.parent, manifest.run)  # this job's run
            except Exception as err:
                log.warning("mindspeed-prof: analysis after the job failed: %s", err)


@dataclass(frozen=True)
class _Job:
    """A profiled job: its profiler, where its manifest goes, the launch dir, whether its save
    root holds other jobs' files too, and the manifest (filled in as the job ends)."""

    profiler: Profiler
    path: Path
    cwd: Path
    shared: bool
    manifest: Manifest


def _error_line(err: object) -> str | None:
    """A task's exception as one printable line (``RuntimeError: boom``), or None."""
    if not isinstance(err, BaseException):
        return None
    text = next((line.strip() for line in str(err).splitlines() if line.strip()), "")
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    line = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return line if len(line) <= 300 else line[:299] + "…"


def _sweep_dir(config: DictConfig) -> Path | None:
    """The multirun's dir (``hydra.sweep.dir``, relative to the launch dir), or None with one
    line where it cannot be resolved here."""
    try:
        return Path(str(config.hydra.sweep.dir))
    except Exception as err:  # noqa: BLE001 - the jobs still run; only the summary is lost
        log.warning(
            "mindspeed-prof: no sweep summary: hydra.sweep.dir: %s", str(err).splitlines()[0]
        )
        return None


def _record(hydra_cfg: HydraConf, num: int, job: _Job) -> None:
    """Where this multirun job's manifest is, for the summary at the multirun's end."""
    from mindspeed_prof.analysis.sweep import record_job

    sweep = Path(str(hydra_cfg.sweep.dir))
    if not sweep.is_absolute():  # relative to the launch dir, wherever the job runs
        sweep = Path(hydra_cfg.runtime.cwd) / sweep
    try:
        record_job(sweep, num, job.path.absolute(), job.shared)
    except OSError as err:
        log.warning("mindspeed-prof: could not note job %s for the sweep summary: %s", num, err)


def _sweep_summary(sweep: Path) -> None:
    """``sweep_summary.json`` in the multirun dir, and its table, when a job was profiled:
    from the jobs' records of where they wrote (no config is read again)."""
    from mindspeed_prof.analysis.sweep import as_dicts, profiled, sweep_summary

    rows = sweep_summary(sweep)
    if profiled(rows):
        from mindspeed_prof.views.text import print_sweep

        print_sweep(as_dicts(rows), sweep)


def _name_overridden_preset(profiler_config: object, overrides: list[str]) -> None:
    """One line when the app's config overrides fields of the preset the command line chose."""
    from mindspeed_prof.config.presets import chosen_preset, overridden_fields, overridden_line
    from mindspeed_prof.config.validate import sections

    preset = chosen_preset(overrides)
    fields = overridden_fields(preset, sections(profiler_config), overrides) if preset else []
    if preset and fields:
        log.warning("%s", overridden_line(preset, fields))


def _write(job: _Job) -> None:
    from mindspeed_prof.formats.manifest import write_manifest

    try:
        write_manifest(job.path, job.manifest)
    except OSError as err:
        log.warning("mindspeed-prof: could not write %s: %s", job.path, err)


def _multirun(hydra_cfg: HydraConf) -> bool:
    return str(getattr(hydra_cfg, "mode", "")).endswith("MULTIRUN")


def _job_num(hydra_cfg: HydraConf) -> int | None:
    try:
        return int(hydra_cfg.job.num)
    except Exception:
        return None
