"""The one rule that says a rank is slow: never for noise or a one-off, always for an effect
well over the noise, the margin and the floor; what it rests on when it cannot tell."""

from __future__ import annotations

import random
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st
from judgement_fixtures import BASE, capture

from mindspeed_prof.analysis.judgement.lag import least
from mindspeed_prof.analysis.report.report import report
from mindspeed_prof.config.schema import STAGES


def _noise(seed: int, share: float) -> Callable[[int, int, str], float]:
    """Bounded jitter: each cell within +-``share`` of its stage's time."""
    rng = random.Random(seed)
    cells: dict[tuple[int, int, str], float] = {}

    def jitter(rank: int, step: int, stage: str) -> float:
        key = (rank, step, stage)
        if key not in cells:
            cells[key] = BASE[stage] * (1 + rng.uniform(-share, share))
        return cells[key]

    return jitter


@settings(max_examples=120, deadline=None)
@given(st.integers(2, 8), st.integers(1, 12), st.integers(0, 2**32), st.floats(0.0, 0.05))
def test_a_healthy_capture_names_nobody_and_gives_no_high_finding(
    ranks: int, steps: int, seed: int, share: float
) -> None:
    rep = report(capture(ranks, steps, _noise(seed, share)))
    assert rep.verdict.behind is None
    assert [f.rule for f in rep.findings if f.severity == "high"] == []


@settings(max_examples=120, deadline=None)
@given(
    st.integers(2, 8), st.integers(3, 12), st.integers(0, 2**32), st.floats(0.0, 0.05), st.data()
)
def test_one_stall_is_a_one_off_never_a_straggler(
    ranks: int, steps: int, seed: int, share: float, data: st.DataObject
) -> None:
    jitter = _noise(seed, share)
    rank, step = data.draw(st.integers(0, ranks - 1)), data.draw(st.integers(1, steps))
    stage = data.draw(st.sampled_from(STAGES))
    stall = data.draw(st.floats(20.0, 2000.0))

    def ms(r: int, n: int, s: str) -> float:
        return jitter(r, n, s) + (stall if (r, n, s) == (rank, step, stage) else 0.0)

    v = report(capture(ranks, steps, ms)).verdict
    assert v.behind is None and v.one_off is not None
    assert (v.one_off.rank, v.one_off.step, v.one_off.name) == (rank, step, stage)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(2, 8), st.integers(6, 12), st.integers(0, 2**32), st.floats(0.001, 0.05), st.data()
)
def test_an_effect_five_times_the_noise_over_the_margin_is_named_first(
    ranks: int, steps: int, seed: int, share: float, data: st.DataObject
) -> None:
    """Noise within +-``share`` of each stage; the planted rank slower by five times that
    beyond the margin (20%) and the floor: named, the first cause, its lag within the noise."""
    jitter = _noise(seed, share)
    rank, stage = data.draw(st.integers(0, ranks - 1)), data.draw(st.sampled_from(STAGES))
    effect = BASE[stage] * (5 * share + 0.2) + 1.0

    def ms(r: int, n: int, s: str) -> float:
        return jitter(r, n, s) + (effect if (r, s) == (rank, stage) else 0.0)

    rep = report(capture(ranks, steps, ms))
    v = rep.verdict
    assert v.behind is not None and (v.behind.rank, v.behind.name) == (rank, stage)
    assert abs(v.behind.lag_ms - effect) <= 2 * share * BASE[stage] + 1e-9
    # nothing ranks above it (under 5% of the step it is no cause at all: too small to act on)
    big = v.behind.lag_ms >= 0.05 * (v.step.median_ms if v.step else 0.0)
    assert bool(v.causes) is big
    assert not v.causes or (v.causes[0].rule, v.causes[0].rank) == ("ranks.straggler", rank)


def test_what_a_rank_must_keep_over_n_steps() -> None:
    assert [least(n) for n in (1, 3, 4, 5, 8, 9, 12, 13)] == [1, 1, 1, 2, 2, 3, 3, 4]


def test_under_three_steps_it_says_what_it_rests_on() -> None:
    rep = report(capture(2, 2, lambda r, n, s: BASE[s] * (2.0 if r == 1 else 1.0)))
    assert rep.verdict.behind is None and rep.verdict.one_off is not None
    short = {g.short for g in rep.tables.lags if g.rank == 1}
    assert short == {"rests on 2 steps"}


def test_two_ranks_waiting_in_a_collective_are_the_victims_not_the_cause() -> None:
    """Rank 1 computes 10 ms longer in ``forward``; rank 0 waits as long in ``allreduce``:
    with two ranks both lag, by the same; the one that computes is named."""
    from pathlib import Path

    from mindspeed_prof.analysis.analyse import Captures
    from mindspeed_prof.analysis.readers import Range, TraceData

    traces = []
    for rank in (0, 1):
        t = TraceData(Path(f"run/rank{rank}.mstx.trace.json"), "spans", rank, "integrated", 1)
        for step in range(1, 7):
            ts = 1e5 * step
            fwd, wait = 20.0 + 10.0 * rank + 0.01 * step, 1.0 + 10.0 * (1 - rank)
            t.ranges += [
                Range(rank, "step", f"ProfilerStep#{step}", step, ts, 1e3 * 40),
                Range(rank, "stage", "actor_update", step, ts, 1e3 * 35),
                Range(rank, "range", "forward", step, ts, 1e3 * fwd),
                Range(rank, "range", "allreduce", step, ts + 1e3 * fwd, 1e3 * wait),
            ]
        traces.append(t)
    rep = report(Captures(root=Path("run"), traces=traces))
    v = rep.verdict
    assert v.behind is not None and (v.behind.rank, v.behind.name) == (1, "forward")
    (f,) = [f for f in rep.findings if f.rule == "ranks.straggler"]
    assert "rank 0 waits for it in allreduce" in f.detail
