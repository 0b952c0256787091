"""Sweep summary: one row per multirun job (stage, captures, time per step or stage)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.formats import SWEEP_SUMMARY
from mindspeed_prof.formats.manifest import capture_count, nothing_captured
from mindspeed_prof.jsonio import write_json

__all__ = ["RECORDS", "SUMMARY_NAME", "record_job", "sweep_summary"]

SUMMARY_NAME = SWEEP_SUMMARY
#: Each profiled job of a multirun says here where its manifest is: ``job<num>.json``. The
#: summary reads these, never the sweep's config, whose ``${hydra:...}`` save paths resolve
#: only inside a job.
RECORDS = ".mindspeed_prof"


def record_job(sweep_dir: Path, num: int, manifest: Path, shared: bool) -> None:
    """Note in ``sweep_dir`` that job ``num`` wrote ``manifest`` (an absolute path; ``shared``:
    its save root holds other jobs' files too)."""
    write_json(sweep_dir / RECORDS / f"job{num}.json",
               {"job": num, "manifest": str(manifest), "shared": shared})


def _records(sweep_dir: Path) -> dict[int, tuple[Path, bool]]:
    """job num -> (its manifest, shared) from the jobs' records (unreadable ones skipped)."""
    out: dict[int, tuple[Path, bool]] = {}
    for path in sorted((sweep_dir / RECORDS).glob("job*.json")):
        try:
            record = json.loads(path.read_text()) if path.stat().st_size < 65536 else {}
            out[int(record["job"])] = (Path(str(record["manifest"])), bool(record["shared"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _jobs(sweep_dir: Path) -> list[Path]:
    return sorted((p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
                  key=lambda p: int(p.name))


def _job_row(num: int, manifests: list[Path], shared: bool) -> dict[str, Any]:
    row: dict[str, Any] = {"job": num, "status": "no manifest", "stage": None,
                           "captures": 0, "files": 0, "ms_per_step": None, "ms_per_stage": None,
                           "overrides": [], "save_root": None, "note": None, "error": None}
    if not manifests:
        return row
    path = manifests[0]
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        row.update(status="unreadable", note=f"{path}: {err}")
        return row
    integrated = manifest.get("profiler_config", {}).get("integrated", {})
    row.update(status=manifest.get("status"), stage=integrated.get("stage"),
               captures=capture_count(manifest, shared), files=len(manifest.get("files", [])),
               overrides=manifest.get("job", {}).get("overrides", []),
               save_root=str(path.parent), note=nothing_captured(manifest, shared),
               error=manifest.get("error"))  # a failed task's exception, one line
    files = [Path(f) for c in manifest.get("captures", []) for f in c.get("files", [])]
    result = analyse_files(files, path.parent) if files else analyse(path.parent)
    steps = [r.total for r in result.per_step() if r.total is not None]
    if steps:
        row["ms_per_step"] = sum(steps) / len(steps)
    stages = row["stage"] if isinstance(row["stage"], list) else [row["stage"]]
    stage_rows = [r for r in result.stage_rank() if r.stage in stages]
    if stage_rows:
        row["ms_per_stage"] = (sum(r.total_ms for r in stage_rows)
                               / sum(r.count for r in stage_rows))
    return row


def sweep_summary(sweep_dir: Path | str) -> list[dict[str, Any]]:
    """Summarise every job of a multirun dir and write ``sweep_summary.json`` into it.

    A job's manifest is where its record says (``record_job``), else in its own dir
    (``<sweep>/<num>/``, as jobs that predate the records wrote it).
    """
    sweep_dir = Path(sweep_dir)
    if not sweep_dir.is_dir():
        raise FileNotFoundError(f"{sweep_dir}: not a multirun directory")
    records = _records(sweep_dir)
    dirs = {int(p.name): p for p in _jobs(sweep_dir)}
    rows = []
    for num in sorted(set(dirs) | set(records)):
        if num in records:
            manifest, shared = records[num]
            rows.append(_job_row(num, [manifest] if manifest.is_file() else [], shared))
        else:
            rows.append(_job_row(num, sorted(dirs[num].rglob("manifest.json")), False))
    if not any(r["status"] != "no manifest" for r in rows):
        return rows  # nothing profiled in this sweep: no table, no file
    write_json(sweep_dir / SUMMARY_NAME, {"sweep_dir": str(sweep_dir), "jobs": rows})
    return rows
