"""``Captures``: what reading a run gives, as data (the captures, the files skipped, clashes,
where each was read, the runs under the root). Every table is computed from it
(``report.tables``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from mindspeed_prof.analysis.readers import TraceData
from mindspeed_prof.analysis.runs import RunInfo
from mindspeed_prof.formats import capture_stem

__all__ = ["Captures", "Placement", "relative", "stem_key"]


class Placement(TypedDict):
    """With ``--ray``: where one capture was read."""

    path: str
    node: str
    host: str
    bytes: int


def stem_key(path: Path) -> tuple[str, str]:
    """A capture's folder and stem: every file of one capture has the same."""
    return (str(path.parent), capture_stem(path))


@dataclass
class Captures:
    """The captures of one run as read below ``root``."""

    root: Path
    traces: list[TraceData] = field(default_factory=list)
    #: Files or parts that could not be read, one line each.
    bad: list[str] = field(default_factory=list)
    #: Captures that claimed the same rank and step (kept apart by ``Range.source``).
    clashes: list[str] = field(default_factory=list)
    #: With ``--ray``: where each capture was read (path, node, host, bytes).
    placement: list[Placement] = field(default_factory=list)
    #: The user's pattern of communication kernels (``--comm-kernels``; ``readers.classify``).
    comm_kernels: str = ""
    #: The run these captures are of, and every run under the root, newest first (``runs``).
    run: RunInfo | None = None
    runs: list[RunInfo] = field(default_factory=list)

    def shown(self, line: str) -> str:
        """A problem or note for people: the file it names relative to the analysed root."""
        prefix = f"{str(self.root).rstrip('/')}/"
        return line[len(prefix) :] if line.startswith(prefix) else line

    def messages(self) -> list[str]:
        """The stderr lines: each skipped file or part (``skipped ...``), then each note."""
        return [f"skipped {self.shown(b)}" for b in self.bad] + [
            f"note: {self.shown(n)}" for t in self.traces for n in t.notes
        ]

    @property
    def has_device(self) -> bool:
        return any(t.device or t.kernels for t in self.traces)


def relative(path: Path, root: Path) -> str:
    """``path`` below ``root`` (its name where it is the root, the whole path outside)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return str(rel) if rel.parts else path.name  # the root itself (a torch_npu folder): its name
