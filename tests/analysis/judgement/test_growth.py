"""Growth: a trend in a stage's own time; never a constant stage, always a steady rise well
over the noise, its slope within 20%."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from judgement_fixtures import BASE, capture

from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.config.schema import STAGES


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(3, 30),
    st.integers(0, 2**32),
    st.floats(0.0, 0.05),
    st.sampled_from(STAGES),
)
def test_a_constant_stage_is_never_growing_whatever_the_others_do(
    ranks: int, steps: int, seed: int, share: float, other: str
) -> None:
    """Every stage constant up to its noise, but ``other`` shrinking (so every other stage's
    share of the step grows): no growth finding, no stage grows."""
    rng = random.Random(seed)

    def ms(r: int, n: int, s: str) -> float:
        shrink = BASE[s] * 0.5 * (1 - n / steps) if s == other else 0.0
        return BASE[s] * (1 + rng.uniform(-share, share)) + shrink

    rep = report(capture(ranks, steps, ms))
    assert not [g for g in rep.tables.growths if g.consistent and g.stage != other]
    assert not [f for f in rep.findings if f.rule == "rl.growing_stage" and f.stage != other]


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 8),
    st.integers(9, 30),
    st.integers(0, 2**32),
    st.floats(0.0, 0.02),
    st.sampled_from(STAGES),
    st.floats(0.3, 1.0),
)
def test_a_steady_rise_is_named_with_its_slope(
    ranks: int, steps: int, seed: int, share: float, stage: str, rise: float
) -> None:
    """A stage rising steadily on every rank by ``rise`` of its time (over the 20% a growth
    needs) plus 2 ms (over the floor) from the first step to the last, noise within
    +-``share`` (at most 2% of the stage: the rise is at least 5x it): named, its slope
    within 20%."""
    rng = random.Random(seed)
    slope = (rise * BASE[stage] + 2.0) / (steps - 1)

    def ms(r: int, n: int, s: str) -> float:
        rise = slope * (n - 1) if s == stage else 0.0
        return BASE[s] * (1 + rng.uniform(-share, share)) + rise

    rep = report(capture(ranks, steps, ms))
    (f,) = [f for f in rep.findings if f.rule == "rl.growing_stage" and f.stage == stage]
    grew = [g for g in rep.tables.growths if g.consistent and g.stage == stage]
    assert len(grew) == ranks
    assert all(abs(g.slope_ms - slope) <= 0.2 * slope for g in grew)
    assert f.impact_ms is not None and f.impact_ms > 0
