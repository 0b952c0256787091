"""What every judgement shares: the floor under which a difference is noise whatever the
statistics say, the error level of the tests, and the fewest steps a consistent pattern rests
on."""

from __future__ import annotations

__all__ = ["ALPHA", "DEFAULT_NOISE_MS", "MIN_STEPS", "NOISE_SHARE", "noise_floor"]

#: A difference under this many milliseconds is noise.
DEFAULT_NOISE_MS = 1.0
#: A difference under this share of the step is noise.
NOISE_SHARE = 0.01
#: The chance, over every row a rule tests in one analysis, of naming a healthy one (Holm's
#: correction keeps the family at this level).
ALPHA = 0.01
#: A pattern (a rank behind, a stage growing) is consistent only over at least this many
#: steps; on fewer, the answer says what it rests on.
MIN_STEPS = 3


def noise_floor(noise_ms: float, step_ms: float | None) -> float:
    """The smallest difference that is not noise, for a step of ``step_ms`` (None: unknown)."""
    return max(noise_ms, NOISE_SHARE * step_ms if step_ms else 0.0)
