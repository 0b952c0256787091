"""Sweep summary: one row per multirun job (stage, captures, time per step or stage)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.formats import SWEEP_SUMMARY
from mindspeed_prof.formats.manifest import (
    Manifest,
    capture_count,
    find_manifests,
    nothing_captured,
)
from mindspeed_prof.jsonio import Refused, within, write_json

__all__ = ["SUMMARY_NAME", "sweep_summary"]

SUMMARY_NAME = SWEEP_SUMMARY


def _jobs(sweep_dir: Path) -> list[Path]:
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
                  key=lambda p: int(p.name))


def _job_manifest(job_dir: Path, shared_roots: list[Path],
                  refused: Callable[[Refused], None]) -> tuple[Path, Manifest, bool] | None:
    """The job's manifest (the first rank's, of its newest run): in its own dir, else in a save
    root the sweep's jobs share, where it names this job (its number and output dir); and
    whether it came from a shared root. ``refused`` is told of a manifest of its own dir not
    read (a link, a FIFO, too large)."""
    def first(found: list[tuple[Path, Manifest]]) -> tuple[Path, Manifest] | None:
        return min(found, key=lambda pm: (pm[1].rank or 0, -(pm[1].start_time or 0.0)),
                   default=None)

    own = first(find_manifests(job_dir, refused=refused))
    if own is not None:
        return (*own, False)
    num, where = int(job_dir.name), job_dir.resolve()
    theirs = [(p, m) for root in shared_roots for p, m in find_manifests(root, recursive=False)
              if m.job.get("num") == num and (not m.job.get("output_dir") or Path(
                  str(m.job["output_dir"])).resolve() == where)]
    found = first(theirs)
    return None if found is None else (*found, True)


def _job_row(job_dir: Path, shared_roots: list[Path]) -> dict[str, Any]:
    row: dict[str, Any] = {"job": int(job_dir.name), "status": "no manifest", "stage": None,
                           "captures": 0, "files": 0, "ms_per_step": None, "ms_per_stage": None,
                           "overrides": [], "save_root": None, "note": None, "error": None}
    refused: list[Refused] = []
    found = _job_manifest(job_dir, shared_roots, refused.append)
    if found is None:
        if refused:
            row.update(status="unreadable", note=str(refused[0]))
        return row
    path, manifest, shared = found
    integrated = manifest.profiler_config.get("integrated", {})
    row.update(status=manifest.status, stage=integrated.get("stage"),
               captures=capture_count(manifest, shared), files=len(manifest.files or []),
               overrides=manifest.job.get("overrides", []),
               save_root=str(path.parent), note=nothing_captured(manifest, shared),
               error=manifest.error)  # a failed task's exception, one line
    listed = [Path(str(f)) for c in manifest.captures or [] if isinstance(c, dict)
              for f in c.get("files") or []]
    files = [f for f in listed if within(f, path.parent)]  # a manifest is read, not trusted
    if len(files) < len(listed):
        outside = f"{len(listed) - len(files)} listed files outside {path.parent} not read"
        row["note"] = "; ".join(filter(None, [row["note"], outside]))
    result = analyse_files(files, path.parent) if listed else analyse(path.parent)
    steps = [r.total for r in result.per_step() if r.total is not None]
    if steps:
        row["ms_per_step"] = sum(steps) / len(steps)
    stages = row["stage"] if isinstance(row["stage"], list) else [row["stage"]]
    stage_rows = [r for r in result.stage_rank() if r.stage in stages]
    if stage_rows:
        row["ms_per_stage"] = (sum(r.total_ms for r in stage_rows)
                               / sum(r.count for r in stage_rows))
    return row


def sweep_summary(sweep_dir: Path | str,
                  shared_roots: list[Path] | None = None) -> list[dict[str, Any]]:
    """Summarise every job of a multirun dir and write ``sweep_summary.json`` into it.

    ``shared_roots``: save roots outside the job dirs that jobs share (each manifest there
    names its job's number and output dir).
    """
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise FileNotFoundError(f"{sweep_dir}: not a multirun directory")
    rows = [_job_row(j, shared_roots or []) for j in _jobs(sweep_dir)]
    if not any(r["status"] != "no manifest" for r in rows):
        return rows  # nothing profiled in this sweep: no table, no file
    write_json(sweep_dir / SUMMARY_NAME, {"sweep_dir": str(sweep_dir), "jobs": rows})
    return rows
