"""Small JSON summaries written next to captures (``profile_analysis: true``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mindspeed_prof.analysis.analyse import analyse, analyse_files
from mindspeed_prof.formats import ANALYSIS, SUMMARY, capture_stem
from mindspeed_prof.jsonio import write_json

__all__ = ["capture_summary", "write_capture_summary", "write_run_summary"]


def capture_summary(files: list[Path]) -> dict[str, Any]:
    """Per-stage totals of one capture's files."""
    result = analyse_files(files, files[0].parent if files else Path("."))
    return {"files": [Path(f).name for f in files], "stage_rank": result.stage_rank(),
            "per_step": result.per_step(), "top_ops": result.top_ops(10),
            "skipped": result.bad}


def write_capture_summary(files: list[Path]) -> Path | None:
    captures = [Path(f) for f in files if Path(f).is_file()]
    if not captures:
        return None
    first = captures[0]
    path = first.parent / f"{capture_stem(first)}{SUMMARY}"
    write_json(path, capture_summary(captures))
    return path


def write_run_summary(root: Path) -> Path:
    path = Path(root) / ANALYSIS
    write_json(path, analyse(root).to_json())
    return path
