"""Small JSON summaries written next to captures (``profile_analysis: true``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypedDict

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.analysis.ranges import stage_rows
from mindspeed_prof.analysis.report.compute import merged_ranges, top_ops, warmup_of
from mindspeed_prof.analysis.report.per_step import per_step
from mindspeed_prof.analysis.report.report import analysis_json
from mindspeed_prof.analysis.rows import to_json
from mindspeed_prof.analysis.runs import UnknownRun
from mindspeed_prof.formats import ANALYSIS, SUMMARY, capture_stem
from mindspeed_prof.jsonio import JsonableObject, write_json

__all__ = [
    "CaptureSummary",
    "Captured",
    "after_capture",
    "capture_summary",
    "write_capture_summary",
    "write_run_summary",
]


class Captured(Protocol):
    """What the summary hook reads of a capture's record (``capture.record.CaptureRecord``)."""

    @property
    def backend(self) -> str: ...

    @property
    def files(self) -> Sequence[str]: ...


class CaptureSummary(TypedDict):
    """``capture_summary``'s answer: the files read, three tables' rows, the files skipped."""

    files: list[str]
    stage_rank: list[JsonableObject]
    per_step: list[JsonableObject]
    top_ops: list[JsonableObject]
    skipped: list[str]


def capture_summary(files: list[Path]) -> CaptureSummary:
    """Per-stage totals of one capture's files."""
    result = analyse_files(files, files[0].parent if files else Path("."))
    ranges = merged_ranges(result.traces)  # three tables: not every one (``tables``)
    return {
        "files": [Path(f).name for f in files],
        "stage_rank": to_json(stage_rows(ranges)),
        "per_step": to_json(per_step(ranges, warmup_of(result.traces))),
        "top_ops": to_json(top_ops(result.traces, 10)),
        "skipped": result.bad,
    }


def write_capture_summary(files: list[Path]) -> Path | None:
    captures = [Path(f) for f in files if Path(f).is_file()]
    if not captures:
        return None
    first = captures[0]
    path = first.parent / f"{capture_stem(first)}{SUMMARY}"
    write_json(path, capture_summary(captures))
    return path


def write_run_summary(root: Path, run: str | None = None) -> Path | None:
    """``analysis.json`` in ``root``: the analysis of the run ``run`` (a job's own, at its end;
    None: the newest run there). None, and nothing written, where that run captured nothing."""
    try:
        result = analyse(root, run=run)
    except UnknownRun:
        return None
    path = Path(root) / ANALYSIS
    write_json(path, analysis_json(result))
    return path


def after_capture(cfg: object, role: str = "integrated") -> list[Callable[[Captured], None]]:
    """``profile_analysis: true``: the ``on_capture`` hook that writes each capture's summary
    (torch_npu parses its own folders: not those). ``cfg`` is a checked section or a whole
    ``profiler_config``."""
    from mindspeed_prof.config.schema import IntegratedConfig
    from mindspeed_prof.config.validate import validate

    section = cfg if isinstance(cfg, IntegratedConfig) else validate(cfg, role)
    if not section.profile_analysis:
        return []

    def summarize(record: Captured) -> None:
        if record.backend != "torch_npu":
            write_capture_summary([Path(f) for f in record.files])

    return [summarize]
