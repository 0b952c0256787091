"""``across_ranks``: max, median and the slowest rank per figure."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

import mindspeed_prof
from mindspeed_prof.capture.telemetry.spread import across_ranks


def test_a_straggler_is_the_max_and_named_the_median_is_the_others() -> None:
    per_rank = {
        0: {"prof/stage/actor_update/ms": 10.0, "prof/count/tokens_generated": 5.0},
        1: {"prof/stage/actor_update/ms": 95.0, "prof/count/tokens_generated": 7.0},
        2: {"prof/stage/actor_update/ms": 11.0, "prof/count/tokens_generated": 6.0},
    }
    out = across_ranks(per_rank)
    assert out == {
        "prof/ranks": 3.0,
        "prof/stage/actor_update/ms/max": 95.0,
        "prof/stage/actor_update/ms/median": 11.0,
        "prof/stage/actor_update/ms/slowest_rank": 1.0,
        "prof/count/tokens_generated/max": 7.0,
        "prof/count/tokens_generated/median": 6.0,
    }


def test_a_gathered_list_is_indexed_by_rank_and_ties_name_the_lowest_rank() -> None:
    out = mindspeed_prof.across_ranks(
        [{"prof/step/ms": 4.0}, {"prof/step/ms": 9.0}, {}, {"prof/step/ms": 9.0}]
    )
    assert out["prof/step/ms/slowest_rank"] == 1.0
    assert out["prof/step/ms/median"] == 9.0
    assert out["prof/ranks"] == 3.0  # the rank with nothing to say is not counted


def test_a_figure_only_some_ranks_have_is_spread_over_those() -> None:
    out = across_ranks(
        {
            4: {"prof/stage/actor_generate/ms": 3.0},
            7: {"prof/stage/actor_generate/ms": 5.0, "prof/stage/critic_update/ms": 2.0},
        }
    )
    assert out["prof/stage/actor_generate/ms/median"] == 4.0
    assert out["prof/stage/critic_update/ms/slowest_rank"] == 7.0
    assert out["prof/stage/critic_update/ms/max"] == 2.0


figures = st.dictionaries(
    st.sampled_from(["prof/step/ms", "prof/stage/a/ms", "prof/count/c"]),
    st.floats(0, 1e6, allow_nan=False),
    min_size=1,
)


@given(st.dictionaries(st.integers(0, 1023), figures, min_size=1, max_size=16))
def test_max_median_and_slowest_agree_with_the_ranks_figures(per_rank: dict) -> None:
    out = across_ranks(per_rank)
    names = {n for m in per_rank.values() for n in m}
    for name in names:
        values = [m[name] for m in per_rank.values() if name in m]
        assert out[f"{name}/max"] == max(values)
        assert out[f"{name}/median"] == statistics.median(values)
        if name.endswith("/ms"):
            slowest = int(out[f"{name}/slowest_rank"])
            assert per_rank[slowest][name] == max(values)
            assert slowest == min(r for r, m in per_rank.items() if m.get(name) == max(values))
        else:
            assert f"{name}/slowest_rank" not in out
