"""``ratio``: a quotient only of a normal positive divisor, and only a finite one."""

from __future__ import annotations

import math
import sys

from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.ratio import TINY, ratio

_edges = st.sampled_from(
    [
        0.0,
        -0.0,
        5e-324,
        1e-310,
        sys.float_info.min,
        1e-300,
        1.0,
        1e308,
        -1.0,
        float("inf"),
        float("-inf"),
        float("nan"),
    ]
)
_any = st.floats(allow_nan=True, allow_infinity=True) | _edges


@given(_any, _any | st.none())
def test_a_quotient_or_the_default_never_an_error(num: float, den: float | None) -> None:
    got = ratio(num, den, "default")
    if den is None or not den >= TINY:  # unknown, zero, subnormal, negative or NaN
        assert got == "default"
    elif got != "default":
        assert isinstance(got, float) and math.isfinite(got) and got == num / den
    else:
        assert not math.isfinite(num / den)


def test_the_subnormal_duration_that_divided_by_zero() -> None:
    """An NPU copy 5e-324 us long: ``us / 1e6`` rounds to 0, past a ``us > 0`` guard."""
    assert 5e-324 > 0 and 5e-324 / 1e6 == 0.0
    assert ratio(1e3 / 1e9, 5e-324 / 1e6, 0.0) == 0.0
    assert ratio(1.0, 5e-324, None) is None  # 1 / 5e-324 overflows to inf
    assert ratio(3.0, 2.0, None) == 1.5 and ratio(0.0, TINY, None) == 0.0
