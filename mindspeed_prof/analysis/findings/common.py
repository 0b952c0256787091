"""What every family of findings shares: severity from a share, the files and ranks a finding
names, one-line titles."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from mindspeed_prof.analysis.findings.finding import Finding, Severity
from mindspeed_prof.analysis.readers.labels import rank_order
from mindspeed_prof.analysis.readers.model import TraceData

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures

__all__ = [
    "cut",
    "duration",
    "files_text",
    "folder_of",
    "one_line",
    "ranks_of",
    "severity",
    "source_label",
]


def severity(share: float, medium: float, high: float) -> Severity:
    """``high`` from ``high`` (a share of the step) on, ``medium`` from ``medium``, else
    ``low``."""
    return "high" if share >= high else "medium" if share >= medium else "low"


def duration(ms: float) -> str:
    """A time at the precision that shows it: ms below a second (never ``0.00 s``), else s."""
    if abs(ms) >= 1000.0:
        return f"{ms / 1000.0:,.2f} s"
    return f"{ms:,.1f} ms" if abs(ms) >= 0.1 or ms == 0 else f"{ms:,.3f} ms"


def files_text(captures: Captures, traces: Iterable[TraceData], what: str, most: int = 3) -> str:
    """``a.json, b.json and 2 more (what)``: the files below the analysed root."""
    names = sorted({captures.shown(str(t.path)) for t in traces})
    shown = ", ".join(names[:most]) + (
        f" and {len(names) - most} more" if len(names) > most else ""
    )
    return f"{shown} ({what})" if what else shown


def folder_of(captures: Captures, t: TraceData) -> str:
    """The capture's path below the analysed root (its name when it is the root or outside)."""
    try:
        rel = t.path.relative_to(captures.root)
    except ValueError:
        return t.path.name
    return str(rel) if rel.parts else t.path.name


def ranks_of(traces: Iterable[TraceData]) -> list[int | None]:
    """The ranks of ``traces``, each once, in rank order."""
    return sorted({t.rank for t in traces}, key=rank_order)


def source_label(t: TraceData) -> str:
    """The label that tells apart two captures of one rank (a header's ``source``), or ""."""
    source = t.clash_label
    return source if isinstance(source, str) else ""


def cut(text: str, most: int = 60) -> str:
    """``text`` on one line, at most ``most`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= most else text[: most - 3] + "..."


def one_line(finding: Finding) -> Finding:
    """``finding`` with its title on one line whatever the names in it (a capture's own)."""
    return msgspec.structs.replace(finding, title=" ".join(finding.title.split()))
