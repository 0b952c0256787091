"""Sweep summary: one row per multirun job (stage, captures, time per step or stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.formats import SWEEP_SUMMARY
from mindspeed_prof.formats.manifest import capture_count, nothing_captured
from mindspeed_prof.jsonio import Refused, read_json, within, write_json

__all__ = ["SUMMARY_NAME", "sweep_summary"]

SUMMARY_NAME = SWEEP_SUMMARY


def _jobs(sweep_dir: Path) -> list[Path]:
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
                  key=lambda p: int(p.name))


def _job_row(job_dir: Path, shared_roots: list[Path]) -> dict[str, Any]:
    manifests = sorted(job_dir.rglob("manifest.json"))
    shared = not manifests
    for root in shared_roots:
        manifests += sorted(root.glob(f"manifest.job{job_dir.name}.json"))
    row: dict[str, Any] = {"job": int(job_dir.name), "status": "no manifest", "stage": None,
                           "captures": 0, "files": 0, "ms_per_step": None, "ms_per_stage": None,
                           "overrides": [], "save_root": None, "note": None, "error": None}
    if not manifests:
        return row
    path = manifests[0]
    try:
        manifest = read_json(path)
        if not isinstance(manifest, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as err:
        row.update(status="unreadable", note=str(err) if isinstance(err, Refused)
                   else f"{path}: {err}")
        return row
    integrated = manifest.get("profiler_config", {}).get("integrated", {})
    row.update(status=manifest.get("status"), stage=integrated.get("stage"),
               captures=capture_count(manifest, shared), files=len(manifest.get("files", [])),
               overrides=manifest.get("job", {}).get("overrides", []),
               save_root=str(path.parent), note=nothing_captured(manifest, shared),
               error=manifest.get("error"))  # a failed task's exception, one line
    listed = [Path(f) for c in manifest.get("captures", []) for f in c.get("files", [])]
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

    ``shared_roots``: save roots outside the job dirs that jobs share (their manifests are
    ``manifest.job<n>.json``).
    """
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise FileNotFoundError(f"{sweep_dir}: not a multirun directory")
    rows = [_job_row(j, shared_roots or []) for j in _jobs(sweep_dir)]
    if not any(r["status"] != "no manifest" for r in rows):
        return rows  # nothing profiled in this sweep: no table, no file
    write_json(sweep_dir / SUMMARY_NAME, {"sweep_dir": str(sweep_dir), "jobs": rows})
    return rows
