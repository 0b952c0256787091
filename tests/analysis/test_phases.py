"""A step split into generation, training, transitions, other stages and time no stage covers:
the parts add up to the step whatever the stages do (overlap, nest, spill out of the step), and
each part is what the stages of its phase cover, counted once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mindspeed_prof.analysis.phases import PRIORITY, phase_rows, split_step
from mindspeed_prof.analysis.readers.model import Range
from mindspeed_prof.config.schema import STAGE_ORDER, TRANSITIONS, phase_of

NAMES = [*STAGE_ORDER, "compute_reward", "my_stage"]
BASE = 1.7e15  # epoch microseconds, where ts + dur rounds


def union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


stages = st.lists(
    st.tuples(st.sampled_from(NAMES), st.floats(-20.0, 120.0), st.floats(0.0, 60.0)),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(stages, st.floats(1.0, 100.0))
def test_the_parts_add_up_to_the_step_and_each_is_its_phase_counted_once(items, length) -> None:
    step = Range(0, "step", "ProfilerStep#1", 1, BASE, length * 1000)
    runs = [Range(0, "stage", n, 1, BASE + a * 1000, d * 1000) for n, a, d in items]
    us = split_step(step, runs)
    assert all(us[p] >= 0 for p in (*PRIORITY, "uncovered"))
    assert abs(sum(us[p] for p in (*PRIORITY, "uncovered")) - step.dur) <= 1e-6 * step.dur
    # as recorded: at epoch microseconds a start rounds to a quarter microsecond
    clipped = {
        n: [
            (max(a, 0.0), min(a + d, length))
            for r in runs
            if r.name == n
            for a, d in [((r.ts - step.ts) / 1000, r.dur / 1000)]
        ]
        for n in NAMES
    }
    clipped = {n: [(a, b) for a, b in v if b > a] for n, v in clipped.items()}
    covered = union([s for v in clipped.values() for s in v])
    assert abs(us["uncovered"] - (length - covered) * 1000) <= 1e-6 * step.dur + 1e-3
    # the first phase in PRIORITY gets all of its union; the others at most theirs
    of_phase = {
        p: union([s for n in NAMES if (phase_of(n) or "other") == p for s in clipped[n]])
        for p in PRIORITY
    }
    assert abs(us["transition"] - of_phase["transition"] * 1000) <= 1e-6 * step.dur + 1e-3
    for p in PRIORITY:
        assert us[p] <= of_phase[p] * 1000 + 1e-6 * step.dur + 1e-3
    inner = sum(v for k, v in us.items() if k.startswith("t:"))
    assert abs(inner - us["transition"]) <= 1e-6 * step.dur + 1e-3


def test_stages_one_after_another_split_exactly() -> None:
    step = Range(0, "step", "ProfilerStep#3", 3, BASE, 100_000)
    plan = [
        ("weight_sync", 0, 20),
        ("offload", 20, 10),
        ("actor_generate", 30, 25),
        ("onload", 55, 5),
        ("actor_update", 65, 30),
        ("compute_reward", 95, 3),
    ]
    runs = [Range(0, "stage", n, 3, BASE + a * 1000, d * 1000) for n, a, d in plan]
    (row,) = phase_rows([step, *runs])
    assert (row.rank, row.step, row.step_ms) == (0, 3, 100.0)
    assert (row.generation_ms, row.training_ms, row.transition_ms) == (25.0, 30.0, 35.0)
    assert (row.other_ms, row.uncovered_ms) == (3.0, 7.0)
    assert row.transitions == {"weight_sync": 20.0, "offload": 10.0, "onload": 5.0}


def test_overlaps_count_once_for_the_transition_then_generation() -> None:
    step = Range(1, "step", "ProfilerStep#1", 1, BASE, 50_000)
    runs = [
        Range(1, "stage", "actor_generate", 1, BASE, 30_000),
        Range(1, "stage", "weight_sync", 1, BASE + 20_000, 20_000, tid="2"),
        Range(1, "stage", "actor_update", 1, BASE + 25_000, 25_000, tid="3"),
    ]
    (row,) = phase_rows([step, *runs])
    assert (row.transition_ms, row.generation_ms, row.training_ms) == (20.0, 20.0, 10.0)
    assert row.uncovered_ms == 0.0


def test_steps_without_their_own_range_and_other_ranks_apart() -> None:
    ranges = [
        Range(0, "stage", "actor_generate", 1, BASE, 5_000),  # no step range: no row
        Range(0, "step", "ProfilerStep#2", 2, BASE, 10_000),
        Range(1, "step", "ProfilerStep#2", 2, BASE, 10_000),
        Range(1, "stage", "engine_wake", 2, BASE, 4_000),
    ]
    rows = phase_rows(ranges, warmup={(1, "", 2)})
    assert [(r.rank, r.step, r.warmup) for r in rows] == [(0, 2, False), (1, 2, True)]
    assert rows[0].uncovered_ms == 10.0 and rows[1].transitions == {"engine_wake": 4.0}
    assert set(rows[1].transitions) <= set(TRANSITIONS)
