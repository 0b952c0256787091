"""What ``doctor`` finds: each problem (a finding) of a kind, and the run's health, problems
and facts together."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from mindspeed_prof.jsonio import JsonableObject

__all__ = ["Health", "Problem", "ProblemKind"]


#: What a problem is: ``unreadable``: analyse skips the capture, or a manifest or summary was
#: refused; ``worker_*``: a Ray worker gave no summary (``ranks``); ``partly_read``: analyse
#: skips part of it; ``no_captures``: nothing under the root that analyse would read;
#: ``interrupted``: a range file never closed (its process was killed, or is still writing);
#: ``killed``: a job whose manifest says running and whose process is gone (``killed``);
#: ``unfinished_rename``: a whole trace under its temporary name; ``elsewhere``: captures the
#: cluster summary names outside the root; ``worker_restarted``: a Ray actor restarted.
ProblemKind = Literal[
    "missing_rank",
    "empty",
    "truncated",
    "temp_file",
    "nothing_captured",
    "clock_skew",
    "unreadable",
    "worker_died",
    "worker_timeout",
    "worker_failed",
    "partly_read",
    "no_captures",
    "interrupted",
    "killed",
    "unfinished_rename",
    "elsewhere",
    "worker_restarted",
]


@dataclass(frozen=True)
class Problem:
    """One problem ``doctor`` found (a finding, in its output): what kind, the file or rank
    it concerns, and one line for people."""

    kind: ProblemKind
    where: str
    message: str


@dataclass
class Health:
    """Problems (``findings``) and facts worth a line: captures and disk per rank, triggered
    captures, notes on how captures were read (a trace without ProfilerStep ranges...)."""

    root: Path
    findings: list[Problem] = field(default_factory=list)
    ranks_expected: list[int] = field(default_factory=list)
    ranks_found: list[int] = field(default_factory=list)
    #: Captures per rank as ``analyse`` reads them ("?" for a capture that names no rank).
    captures_per_rank: dict[str, int] = field(default_factory=dict)
    disk_per_rank: dict[int, int] = field(default_factory=dict)
    triggered: list[JsonableObject] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The world sizes the captures record and the ranks captured of each
    #: (``{"world_size": 64, "ranks": [0]}``).
    worlds: list[dict[str, Any]] = field(default_factory=list)
    #: Every run under the root, newest first (``runs.RunInfo`` as JSON).
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.findings

    def to_json(self) -> JsonableObject:
        out: JsonableObject = asdict(self)
        out["root"] = str(self.root)
        out["healthy"] = self.healthy
        return out
