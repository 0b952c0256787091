"""Disk budget: what a run writes under its save root stays below ``max_disk_mb``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DiskBudget", "LEVELS", "RANGES_STEP_BYTES", "bytes_under"]

#: Levels from the most to the least output; ``level_none`` writes ranges only.
LEVELS = ("level2", "level1", "level0", "level_none")
#: One step's range file at the most (64 KB: a demo step's ranges take about 2 KB).
RANGES_STEP_BYTES = 64 * 1024


def bytes_under(path: Path) -> int:
    """Bytes of every file under ``path`` (a file: its size); unreadable entries count 0."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


class DiskBudget:
    """Decides the level of each capture so the save root stays under ``limit_mb``.

    Each finished capture teaches the bytes one step costs at its level. Before a capture of
    ``steps`` steps, the bytes already under the root (every rank of this host writes there)
    plus the estimate must fit; else the level is lowered (level2 -> level1 -> level0 ->
    ranges only) or the capture skipped. A level not measured yet is allowed while room is
    left, and is measured by that capture.
    """

    def __init__(self, limit_mb: int, root: Path) -> None:
        self.limit = limit_mb * 1024 * 1024
        self.root = root
        self.per_step: dict[str, float] = {}

    def full_at_start(self) -> str:
        """Why no capture can fit before the run writes anything ('' when one can).

        Before a capture is measured, one step's smallest output (ranges only) is estimated at
        ``RANGES_STEP_BYTES``: a whole-MB budget always holds that, so only a save root that
        earlier runs (or a restart) already filled leaves no room.
        """
        used = bytes_under(self.root) if self.root.exists() else 0
        if used + RANGES_STEP_BYTES <= self.limit:
            return ""
        return (f"{self.root} already holds {used / 2**20:.1f} MB, and one step needs about "
                f"{RANGES_STEP_BYTES // 1024} KB more")

    def choose(self, level: str, steps: int) -> tuple[str | None, str]:
        """The level to capture at (``None``: skip) and, when it differs, why."""
        used = bytes_under(self.root) if self.root.exists() else 0
        room = self.limit - used
        why = f"{used / 2**20:.1f} MB of max_disk_mb={self.limit // 2**20} used"
        if room <= 0:
            return None, why
        for candidate in LEVELS[LEVELS.index(level):]:
            estimate = self.per_step.get(candidate)
            if estimate is None or estimate * steps <= room:  # unmeasured: this capture measures
                if candidate == level:
                    return level, ""
                need = self.per_step.get(level, 0.0) * steps / 2**20
                return candidate, f"{why}; {level} would need about {need:.1f} MB"
        return None, f"{why}; even ranges only would not fit"

    def learn(self, level: str, written: int, steps: int) -> None:
        """A capture at ``level`` wrote ``written`` bytes over ``steps`` steps."""
        if steps > 0:
            self.per_step[level] = max(self.per_step.get(level, 0.0), written / steps)
