"""One colour per stage: MindSpeed-RL's stages and the transitions fixed, other names by their
own hash."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.config.schema import STAGE_ORDER, STAGES, TRANSITIONS
from mindspeed_prof.views.palette import (
    EXTRA,
    STAGE_PALETTE,
    TRANSITION_PALETTE,
    stage_colours,
    stage_order,
)

names = st.lists(st.text(min_size=1, max_size=30) | st.sampled_from(STAGE_ORDER), max_size=20)
FIXED = (*STAGE_PALETTE, *TRANSITION_PALETTE)


@settings(max_examples=200, deadline=None)
@given(names, st.randoms())
def test_stages_first_in_their_own_colours_and_any_order_gives_one_mapping(
    given_names: list[str], rng: random.Random
) -> None:
    colours = stage_colours(given_names)
    order = stage_order(given_names)
    assert list(colours) == order and set(order) == set(given_names)
    ours = [n for n in order if n in STAGE_ORDER]
    # the RL stages in the order a step runs them, then the transitions
    assert order[: len(ours)] == [s for s in (*STAGES, *TRANSITIONS) if s in ours]
    assert order[len(ours) :] == sorted(set(given_names) - set(STAGE_ORDER))
    for s in ours:
        assert colours[s] == FIXED[STAGE_ORDER.index(s)]
    assert len(set(FIXED)) == len(FIXED) and not set(FIXED) & set(EXTRA)
    others = [colours[n] for n in order[len(ours) :]]
    assert set(others) <= set(EXTRA) and not set(others) & set(FIXED)
    if len(others) <= len(EXTRA):
        assert len(set(others)) == len(others)  # no two names of one report share a colour
    shuffled = list(given_names)
    rng.shuffle(shuffled)
    assert stage_colours(shuffled) == colours


@settings(max_examples=200, deadline=None)
@given(names)
def test_names_of_different_hashes_keep_the_colour_of_their_own(given_names: list[str]) -> None:
    """A custom name's colour is the one it has alone, whatever other names the report holds,
    unless two of them hash alike; then each still has a colour of its own."""
    custom = sorted(set(given_names) - set(STAGE_ORDER))
    alone = {n: stage_colours([n])[n] for n in custom}
    together = stage_colours(given_names)
    if len(set(alone.values())) == len(custom):
        assert {n: together[n] for n in custom} == alone
    elif len(custom) <= len(EXTRA):
        assert len({together[n] for n in custom}) == len(custom)


def test_the_same_colours_in_every_process() -> None:
    """Not Python's salted ``hash``: another process, another hash seed, the same colours."""
    custom = ["gen", "update_actor", "奖励模型打分", "compute_advantage", "x" * 100]
    code = (
        "import json, sys; from mindspeed_prof.views.palette import stage_colours; "
        f"print(json.dumps(stage_colours({custom!r})))"
    )
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONHASHSEED": seed},
            ).stdout
        )
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] == stage_colours(custom)
