"""Sweep summary: one row per multirun job (stage, captures, time per step or stage).

``SweepRow``/``SweepSummary`` are ``sweep_summary.json``'s rows and file, ``JobRecord`` a job's
note of where it wrote; each is written and read here only.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.analysis.report.tables import tables
from mindspeed_prof.formats import SWEEP_SUMMARY
from mindspeed_prof.formats.manifest import (
    Manifest,
    capture_count,
    find_manifests,
    nothing_captured,
    read_manifest,
)
from mindspeed_prof.jsonio import Refused, read_json, within, write_json

__all__ = [
    "RECORDS",
    "SUMMARY_NAME",
    "JobRecord",
    "SweepRow",
    "SweepSummary",
    "as_dicts",
    "profiled",
    "read_summary",
    "record_job",
    "sweep_summary",
]

SUMMARY_NAME = SWEEP_SUMMARY
#: Each profiled job of a multirun says here where its manifest is: ``job<num>.json``. The
#: summary reads these, never the sweep's config, whose ``${hydra:...}`` save paths resolve
#: only inside a job.
RECORDS = ".mindspeed_prof"
_RECORD_BYTES = 1 << 16


class JobRecord(msgspec.Struct):
    """``<sweep>/.mindspeed_prof/job<num>.json``: where job ``job`` wrote its manifest (an
    absolute path; ``shared``: its save root holds other jobs' files too)."""

    job: int
    manifest: str
    shared: bool


class SweepRow(msgspec.Struct, kw_only=True):
    """One job of a sweep (fields in the file's order; a file's missing ones: defaults)."""

    job: int
    status: str = "no manifest"
    stage: str | list[str] | None = None
    captures: int = 0
    files: int = 0
    ms_per_step: float | None = None
    ms_per_stage: float | None = None
    overrides: list[str] = []
    save_root: str | None = None
    note: str | None = None
    error: str | None = None  # a failed task's exception, one line


class SweepSummary(msgspec.Struct):
    """``sweep_summary.json``: the multirun dir and one row per job."""

    sweep_dir: str
    jobs: list[SweepRow]


def record_job(sweep_dir: Path, num: int, manifest: Path, shared: bool) -> None:
    """Note in ``sweep_dir`` that job ``num`` wrote ``manifest`` (see ``JobRecord``)."""
    write_json(
        sweep_dir / RECORDS / f"job{num}.json",
        msgspec.to_builtins(JobRecord(num, str(manifest), shared)),
    )


def _records(sweep_dir: Path) -> dict[int, tuple[Path, bool]]:
    """job num -> (its manifest, shared) from the jobs' records (unreadable ones skipped)."""
    out: dict[int, tuple[Path, bool]] = {}
    for path in sorted((sweep_dir / RECORDS).glob("job*.json")):
        try:
            record = msgspec.convert(read_json(path, _RECORD_BYTES), JobRecord, strict=False)
        except (OSError, ValueError, msgspec.ValidationError):
            continue
        out[record.job] = (Path(record.manifest), record.shared)
    return out


def read_summary(path: Path) -> SweepSummary:
    """A ``sweep_summary.json`` as written (a bare list of rows, as early versions wrote it,
    too); ``ValueError`` (or ``msgspec.ValidationError``) for one that is neither."""
    doc = read_json(path)
    if isinstance(doc, list):
        doc = {"sweep_dir": str(path.parent), "jobs": doc}
    return msgspec.convert(doc, SweepSummary, strict=False)


def _jobs(sweep_dir: Path) -> list[Path]:
    return sorted(
        (p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: int(p.name),
    )


def _own_manifest(
    job_dir: Path, refused: Callable[[Refused], None]
) -> tuple[Path, Manifest] | None:
    """A job dir's manifest, as jobs that predate the records wrote it: the first rank's, of
    its newest run."""
    return min(
        find_manifests(job_dir, refused=refused),
        key=lambda pm: (pm[1].rank or 0, -(pm[1].start_time or 0.0)),
        default=None,
    )


def _job_row(
    num: int, found: tuple[Path, Manifest] | None, shared: bool, refused: list[Refused]
) -> SweepRow:
    if found is None:
        return (
            SweepRow(job=num, status="unreadable", note=str(refused[0]))
            if refused
            else SweepRow(job=num)
        )
    path, manifest = found
    row = SweepRow(
        job=num,
        status=manifest.status,
        stage=manifest.window.stage,
        captures=capture_count(manifest, shared),
        files=len(manifest.files or []),
        overrides=list(manifest.job.overrides),
        save_root=str(path.parent),
        note=nothing_captured(manifest, shared),
        error=manifest.error,
    )
    listed = [Path(f) for c in manifest.captures or [] for f in c.files]
    files = [f for f in listed if within(f, path.parent)]  # a manifest is read, not trusted
    if len(files) < len(listed):
        outside = f"{len(listed) - len(files)} listed files outside {path.parent} not read"
        row.note = "; ".join(filter(None, [row.note, outside]))
    result = tables(analyse_files(files, path.parent) if listed else analyse(path.parent))
    steps = [r.total for r in result.per_step if r.total is not None]
    if steps:
        row.ms_per_step = sum(steps) / len(steps)
    stages = row.stage if isinstance(row.stage, list) else [row.stage]
    stage_rows = [r for r in result.stage_rank if r.stage in stages]
    if stage_rows:
        row.ms_per_stage = sum(r.total_ms for r in stage_rows) / sum(r.count for r in stage_rows)
    return row


def profiled(rows: list[SweepRow]) -> bool:
    """Whether any job of the sweep wrote a manifest."""
    return any(r.status != "no manifest" for r in rows)


def as_dicts(rows: list[SweepRow]) -> list[dict[str, object]]:
    """The rows as the file holds them (the text view and ``--json`` take these)."""
    return [msgspec.structs.asdict(r) for r in rows]


def sweep_summary(sweep_dir: Path | str) -> list[SweepRow]:
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
        refused: list[Refused] = []
        if num in records:
            path, shared = records[num]
            manifest = read_manifest(path, refused.append)
            found = None if manifest is None else (path, manifest)
        else:
            found, shared = _own_manifest(dirs[num], refused.append), False
        rows.append(_job_row(num, found, shared, refused))
    if not profiled(rows):
        return rows  # nothing profiled in this sweep: no table, no file
    write_json(sweep_dir / SUMMARY_NAME, msgspec.to_builtins(SweepSummary(str(sweep_dir), rows)))
    return rows
