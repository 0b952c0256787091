"""``ratio``: the one way the analysis divides by a duration (or any measured quantity).

A duration read from a trace may be zero, negative, NaN or subnormal (positive yet below the
smallest normal double, 2.2e-308): ``x / 5e-324`` overflows to infinity, and ``5e-324 / 1e6``
rounds to 0, so a guard of ``us > 0`` before ``x / (us / 1e6)`` still divides by zero. A
quotient is a number only when its divisor is a normal positive number and it is finite.
"""

from __future__ import annotations

import math
import sys
from typing import TypeVar

__all__ = ["TINY", "ratio"]

#: The smallest divisor ``ratio`` divides by: the smallest positive normal double.
TINY = sys.float_info.min

D = TypeVar("D")


def ratio(num: float, den: float | None, default: D) -> float | D:
    """``num / den``, or ``default`` where ``den`` is unknown (None) or below ``TINY`` (zero,
    subnormal, negative, NaN), or the quotient is not finite."""
    if den is None or not den >= TINY:
        return default
    quotient = num / den
    return quotient if math.isfinite(quotient) else default
