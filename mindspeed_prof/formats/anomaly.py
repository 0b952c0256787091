"""An anomaly trigger as the manifest records it (``triggers``): the profiler's anomaly trigger
(``capture.anomaly``) makes one per slow step or stage it notices."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["Action", "Anomaly"]

#: What was done about an anomaly.
Action = Literal[
    "capture", "skipped: another capture is active", "skipped: anomaly_max_captures reached"
]


class Anomaly(msgspec.Struct, frozen=True):
    """One trigger as the manifest records it (``triggers``, with the rank); ``action``: what
    was done."""

    step: int | None
    stage: str | None
    time: float
    duration_ms: float
    median_ms: float
    factor: float
    action: Action
    rank: int | None = None
