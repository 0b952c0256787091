"""What a timeline keeps: a window of steps (``--steps``) and the ranks whose operator detail
is added (``--detail``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EVERY_STEP", "StepWindow", "parse_ranks", "parse_steps"]


@dataclass(frozen=True)
class StepWindow:
    """Steps ``start <= step < end`` (either side open when None), like the profiler's window."""

    start: int | None = None
    end: int | None = None

    def __contains__(self, step: object) -> bool:
        if not isinstance(step, int):
            return False
        return (self.start is None or step >= self.start) and (self.end is None or step < self.end)

    @property
    def everything(self) -> bool:
        return self.start is None and self.end is None


#: The window of every step (a timeline's default).
EVERY_STEP = StepWindow()


def parse_steps(text: str) -> StepWindow:
    """``A:B`` (A included, B not), ``A:``, ``:B`` or ``A`` (that step alone)."""
    try:
        if ":" not in text:
            return StepWindow(int(text), int(text) + 1)
        a, b = text.split(":")
        window = StepWindow(int(a) if a.strip() else None, int(b) if b.strip() else None)
    except ValueError:
        raise ValueError(f"--steps {text!r}: use A:B (steps A..B-1), A: or :B") from None
    if window.start is not None and window.end is not None and window.end <= window.start:
        raise ValueError(f"--steps {text!r}: B must be greater than A")
    return window


def parse_ranks(text: str) -> frozenset[int] | None:
    """``all`` (None) or a list like ``0,3,8-11``."""
    if text.strip() == "all":
        return None
    ranks: set[int] = set()
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            ranks.update(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        raise ValueError(f"--detail {text!r}: use 'all' or ranks like 0,3,8-11") from None
    return frozenset(ranks)
