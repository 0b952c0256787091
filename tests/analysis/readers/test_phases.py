"""Foreign RL phase names as our stages: the one table, how names fold, steps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mindspeed_prof.analysis.readers.phases import FOREIGN, fold_name, is_step, stage_of
from mindspeed_prof.config.schema import STAGES, TRANSITIONS, phase_of


@pytest.mark.parametrize(
    ("name", "stage"),
    [
        ("update weights from distributed", "weight_sync"),
        ("Update_Weights", "weight_sync"),
        ("broadcast_to_vllm", "weight_sync"),
        ("engine sleep", "engine_sleep"),
        ("release_memory_occupation", "engine_sleep"),
        ("engine wake up", "engine_wake"),
        ("actor model wake up", "onload"),
        ("actor model sleep", "offload"),
        ("offload", "offload"),
        ("onload", "onload"),
        ("reshard", "reshard"),
        ("rollout", "actor_generate"),
        ("gen", "actor_generate"),
        ("old_log_prob", "actor_compute_log_prob"),
        ("ref", "reference_compute_log_prob"),
        ("values", "critic_compute_values"),
        ("train", "actor_update"),
        ("update_actor", "actor_update"),
        ("update_critic", "critic_update"),
        ("rollout_generate", "actor_generate"),  # verl's alias of ours
        ("weight_sync", "weight_sync"),  # ours, as they are
    ],
)
def test_foreign_names_are_our_stages(name: str, stage: str) -> None:
    assert stage_of(name) == stage


@pytest.mark.parametrize(
    "name",
    [
        "train wait",
        "compute loss",
        "time.sleep",
        "train (/x/trainer.py:12)",
        "",
        "step",
        "decode batch 0",
        "load weights",  # a part of weight_sync, never the whole of it
    ],
)
def test_other_names_are_not_stages(name: str) -> None:
    assert stage_of(name) is None


def test_the_table_maps_to_the_vocabulary_only() -> None:
    """Every foreign name is one of our stages or transitions; each of them has a name; the
    table's keys are folded (a lookup can find each)."""
    ours = set(STAGES) | set(TRANSITIONS)
    assert set(FOREIGN.values()) <= ours
    assert ours <= set(FOREIGN.values()) | {"reshard"}
    assert all(fold_name(k) == k for k in FOREIGN)
    assert {phase_of(v) for v in FOREIGN.values()} == {"generation", "training", "transition"}


@given(st.sampled_from(sorted(FOREIGN)), st.lists(st.sampled_from(" _-./:"), min_size=1))
def test_separators_and_case_do_not_matter(name: str, seps: list[str]) -> None:
    words = name.split(" ")
    written = "".join(w.upper() if i % 2 else w for i, w in enumerate(words))
    joined = seps[0].join(w.title() for w in words)
    assert stage_of(joined) == FOREIGN[name]
    assert fold_name(written) == "".join(w.lower() for w in words)


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("step", True),
        ("Step 3", True),
        ("training_step", True),
        ("global_step#12", True),
        ("iteration", True),
        ("stepper", False),
        ("step up", False),
        ("rollout", False),
    ],
)
def test_whole_steps(name: str, step: bool) -> None:
    assert is_step(name) is step


def test_a_torch_trace_names_them_too(tmp_path) -> None:
    """record_function ranges of a framework's own names in a torch trace (verl's
    ``marked_timer``, a trainer's ``update_weights``) are our stages, in their step."""
    import json

    from mindspeed_prof.analysis.readers import read

    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#4",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 100,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "update_weights",
            "pid": 1,
            "tid": 1,
            "ts": 10,
            "dur": 30,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "gen",
            "pid": 1,
            "tid": 1,
            "ts": 50,
            "dur": 40,
        },
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "my_loss",
            "pid": 1,
            "tid": 1,
            "ts": 91,
            "dur": 2,
        },
    ]
    path = tmp_path / "rank0.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    got = sorted((r.kind, r.name, r.step) for r in read(path).ranges)
    assert got == [
        ("range", "my_loss", 4),
        ("stage", "actor_generate", 4),
        ("stage", "weight_sync", 4),
        ("step", "ProfilerStep#4", 4),
    ]
