"""Disk budget: what a run writes under its save root stays below ``max_disk_mb``.

``DiskBudget`` decides (pure but for reading the folder's size); ``Budget`` is the profiler's
part that asks it before each capture and teaches it after each.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from mindspeed_prof.capture.part import Host, Part, Starting
from mindspeed_prof.capture.plan import ALL
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import Level, field_key

__all__ = ["Budget", "DiskBudget", "LEVELS", "RANGES_STEP_BYTES", "bytes_under"]

#: Levels from the most to the least output; ``level_none`` writes ranges only.
LEVELS = ("level2", "level1", "level0", "level_none")
#: One step's range file at the most (64 KB: a demo step's ranges take about 2 KB).
RANGES_STEP_BYTES = 64 * 1024


def bytes_under(path: Path) -> int:
    """Bytes of every file under ``path`` (a file: its size; missing: 0); unreadable entries
    count 0."""
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
        used = bytes_under(self.root)  # 0 for a root not made yet
        if used + RANGES_STEP_BYTES <= self.limit:
            return ""
        return (
            f"{self.root} already holds {used / 2**20:.1f} MB, and one step needs about "
            f"{RANGES_STEP_BYTES // 1024} KB more"
        )

    def choose(self, level: str, steps: int) -> tuple[str | None, str]:
        """The level to capture at (``None``: skip) and, when it differs, why."""
        used = bytes_under(self.root)  # 0 for a root not made yet
        room = self.limit - used
        why = f"{used / 2**20:.1f} MB of max_disk_mb={self.limit // 2**20} used"
        if room <= 0:
            return None, why
        for candidate in LEVELS[LEVELS.index(level) :]:
            estimate = self.per_step.get(candidate)
            if estimate is None or estimate * steps <= room:  # unmeasured: this capture measures
                if candidate == level:
                    return level, ""
                need = self.per_step[level] * steps / 2**20  # measured: it did not fit
                return candidate, f"{why}; {level} would need about {need:.1f} MB"
        return None, f"{why}; even ranges only would not fit"

    def learn(self, level: str, written: int, steps: int) -> None:
        """A capture at ``level`` wrote ``written`` bytes over ``steps`` steps."""
        if steps > 0:
            self.per_step[level] = max(self.per_step.get(level, 0.0), written / steps)


class Budget(Part):
    """``max_disk_mb``: each capture at the level that fits, or skipped (one warning, one
    record counting the skips)."""

    live = False  # acts on captures only

    def __init__(self, host: Host) -> None:
        self.host = host
        cfg = host.cfg
        self.budget = DiskBudget(cfg.max_disk_mb, host.save_root)
        self._skipped: CaptureRecord | None = None
        full = self.budget.full_at_start()
        if full:
            host.warn_once(
                "skipped",
                f"mindspeed-prof: {field_key('max_disk_mb', host.role)}"
                f"={cfg.max_disk_mb}: {full}; no capture will be "
                "written (raise max_disk_mb, or clear the folder)",
            )

    def before_capture(self, starting: Starting) -> None:
        capture, trigger, cfg = starting.capture, starting.trigger, starting.cfg
        plan = self.host.plan
        steps = (
            trigger.steps
            if trigger is not None and capture.stage == ALL
            else 1
            if capture.stage != ALL or plan.one_per_step
            else plan.run_end(capture.step) - capture.step
        )
        level, why = self.budget.choose(cfg.profile_level.value, steps)
        if level is None:
            self._skip(starting, why)
        elif level != cfg.profile_level.value:
            self.host.warn_once(
                "lowered",
                f"mindspeed-prof: disk budget: capturing step "
                f"{capture.step} at {level} instead of "
                f"{cfg.profile_level.value} ({why})",
            )
            starting.cfg = dataclasses.replace(cfg, profile_level=Level[level])

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        if error or not record.files or record.level is None:
            return
        written = sum(bytes_under(Path(f)) for f in record.files if Path(f).exists())
        self.budget.learn(record.level, written, max(1, len(record.steps)))

    def _skip(self, starting: Starting, why: str) -> None:
        host, capture = self.host, starting.capture
        starting.skip = f"disk budget: {why}"
        host.warn_once(
            "skipped",
            f"mindspeed-prof: disk budget: skipping captures from step "
            f"{capture.step} on while there is no room ({why})",
        )
        if self._skipped is not None:
            self._skipped.skipped_captures += 1
            return
        self._skipped = CaptureRecord(
            stage=capture.stage,
            step=capture.step,
            index=capture.index,
            rank=host.rank,
            role=host.role,
            backend="none",
            reason="disk_budget",
            skipped=why,
            skipped_captures=1,
        )
        host.captures.append(self._skipped)
