"""Disk budget: what a job writes under its save root stays below ``max_disk_mb``.

``DiskBudget`` decides (pure: the bytes used come from its ``Ledger``); ``Budget`` is the
profiler's part that asks it before each capture and teaches it after each. The bytes used are
what this job's ranks wrote, as they wrote them (``ledger``): the save root is never walked, so
a root that also holds a dataset, earlier runs or a slow file system costs a step nothing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from mindspeed_prof.capture.ledger import Ledger
from mindspeed_prof.capture.naming import host_name
from mindspeed_prof.capture.part import Host, Part, Starting
from mindspeed_prof.capture.plan import ALL
from mindspeed_prof.capture.record import CaptureRecord
from mindspeed_prof.config.schema import Level

__all__ = ["Budget", "Choice", "DiskBudget", "LEVELS", "bytes_under"]

#: Levels from the most to the least output; ``level_none`` writes ranges only.
LEVELS = ("level2", "level1", "level0", "level_none")


def bytes_under(path: Path) -> int:
    """Bytes of one capture's file or folder (a folder: every file in it; missing: 0);
    unreadable entries count 0. Only ever asked of what this process wrote."""
    try:
        if not path.is_dir():
            return path.stat().st_size
    except OSError:
        return 0
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


@dataclasses.dataclass(frozen=True)
class Choice:
    """A capture's level (None: skipped), the steps it may hold (fewer than asked: the
    window goes on in a capture of its own after them), and why, where either changed."""

    level: str | None
    steps: int
    why: str = ""


class DiskBudget:
    """Decides the level and length of each capture so that this job's output stays under
    ``limit_mb``.

    Each finished capture teaches the bytes one step costs at its level. A capture of
    ``steps`` steps (a whole window is one capture) is taken at the first level, from the one
    asked down, that holds all of them in the room left; a level not measured yet is measured
    by one step on its own (the window goes on in one capture after it). Where no level holds
    every step, as many steps as fit are taken at the highest level that holds one; where
    none does, the capture is skipped. The budget is overshot by at most one step's output at
    a level not measured yet.
    """

    def __init__(self, limit_mb: int, used: Callable[[], int]) -> None:
        self.limit = limit_mb * 1024 * 1024
        self.used = used
        self.per_step: dict[str, float] = {}

    def choose(self, level: str, steps: int) -> Choice:
        used = self.used()
        room = self.limit - used
        why = f"{used / 2**20:.1f} MB of max_disk_mb={self.limit // 2**20} used"
        if room <= 0:
            return Choice(None, 0, why)
        fallback: Choice | None = None
        for candidate in LEVELS[LEVELS.index(level) :]:
            estimate = self.per_step.get(candidate)
            lower = "" if candidate == level else self._lower(level, steps, why)
            if estimate is None:  # unmeasured: one step measures it
                if steps <= 1:
                    return Choice(candidate, steps, lower)
                measure = f"{candidate} not measured yet: one step measures it"
                return Choice(candidate, 1, f"{lower}; {measure}" if lower else measure)
            if estimate * steps <= room:
                return Choice(candidate, steps, lower)
            if fallback is None and estimate <= room:
                fit = int(room // estimate)
                more = f"{steps} steps at {candidate} would need about "
                more += f"{estimate * steps / 2**20:.1f} MB"
                fallback = Choice(candidate, fit, f"{why}; {more}")
        return fallback or Choice(None, 0, f"{why}; even ranges only would not fit")

    def _lower(self, level: str, steps: int, why: str) -> str:
        need = self.per_step[level] * steps / 2**20  # measured: it did not fit
        return f"{why}; {level} would need about {need:.1f} MB"

    def learn(self, level: str, written: int, steps: int) -> None:
        """A capture at ``level`` wrote ``written`` bytes over ``steps`` steps."""
        if steps > 0:
            self.per_step[level] = max(self.per_step.get(level, 0.0), written / steps)


class Budget(Part):
    """``max_disk_mb``: each capture at the level and length that fit, or skipped (one
    warning each: lowered, split, skipped; one record counting the skips)."""

    live = False  # acts on captures only

    def __init__(self, host: Host, interval_s: float = 2.0) -> None:
        self.host = host
        name = f"{host_name()}_{os.getpid()}_{host.role}_rank{host.rank}"
        self.ledger = Ledger(host.save_root, name, interval_s)
        self.budget = DiskBudget(host.cfg.max_disk_mb, lambda: self.ledger.used)
        self._skipped: CaptureRecord | None = None

    def before_capture(self, starting: Starting) -> None:
        capture, trigger, cfg = starting.capture, starting.trigger, starting.cfg
        self.ledger.share(self.host.run[0])  # the job's other ranks, heard from now on
        plan = self.host.plan
        window = trigger is None and capture.stage == ALL and not plan.one_per_step
        steps = (
            trigger.steps
            if trigger is not None and capture.stage == ALL
            else plan.run_end(capture.step) - capture.step
            if window
            else 1
        )
        asked = cfg.profile_level.value
        choice = self.budget.choose(asked, steps)
        if choice.level is None:
            self._skip(starting, choice.why)
            return
        if choice.level != asked:
            self.host.warn_once(
                "lowered",
                f"mindspeed-prof: disk budget: capturing step {capture.step} at "
                f"{choice.level} instead of {asked} ({choice.why})",
            )
            starting.cfg = dataclasses.replace(cfg, profile_level=Level[choice.level])
        if window and choice.steps < steps:
            last = capture.step + choice.steps - 1
            first = f"step {last}" if last == capture.step else f"steps {capture.step}-{last}"
            starting.steps = choice.steps
            self.host.warn_once(
                "split",
                f"mindspeed-prof: disk budget: the window's steps {capture.step}-"
                f"{capture.step + steps - 1} are split: {first} in one capture "
                f"({choice.why}), the rest in captures of their own as room allows",
            )

    def on_capture(self, record: CaptureRecord, error: str) -> None:
        if error or not record.files:
            return
        written = sum(bytes_under(Path(f)) for f in record.files)  # this capture's own files
        self.ledger.add(written)
        if record.level is not None:
            self.budget.learn(record.level, written, max(1, len(record.steps)))

    def on_close(self) -> None:
        self.ledger.close()

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
