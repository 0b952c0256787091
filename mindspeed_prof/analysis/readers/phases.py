"""Foreign phase names as RL frameworks write them, read as our stages.

A phase tracer of another framework (verl's ``marked_timer`` names, slime's and OpenRLHF's
timers, an engine's own log of what it did) names the parts of an RL step in its own words:
``update weights from distributed``, ``engine sleep``, ``actor model wake up``, ``gen``,
``update_actor``. ``stage_of`` says which of our stages (``config.schema.STAGES``) or the
transitions between them (``TRANSITIONS``) such a name is, so a foreign timeline feeds the same
tables, stragglers and verdict as our own stages. ``is_step`` says whether a name is the whole
step. The words are matched after folding case and separators (``update_weights``,
``Update Weights``, ``update-weights`` are one name); the table is the one place they live.
"""

from __future__ import annotations

import re

from mindspeed_prof.config.schema import STAGES, TRANSITIONS, canonical_stage

__all__ = ["FOREIGN", "STEP_NAMES", "fold_name", "is_step", "stage_of"]

#: Names of a whole step, folded (``fold_name``).
STEP_NAMES = frozenset({"step", "training step", "train step", "global step", "iteration"})

#: Foreign names (folded) -> our stage or transition. Each transition's words first, then the
#: stages'. Names are whole: ``train`` is the update, ``train wait`` is not a stage.
FOREIGN: dict[str, str] = {
    # weight_sync: the trainer's weights into the inference engine
    **dict.fromkeys(
        (
            "weight sync",
            "sync weights",
            "sync weight",
            "update weights",
            "update weight",
            "update weights from distributed",
            "update weights from tensor",
            "update weights from disk",
            "broadcast to vllm",
            "broadcast weights",
            "sync rollout weights",
            "weights sync",
        ),
        "weight_sync",
    ),
    # reshard: the trainer's layout into the engine's
    **dict.fromkeys(("reshard", "resharding", "reshard weights", "resharding weights"), "reshard"),
    # offload / onload: models, optimiser states or caches moved off and back on the device
    **dict.fromkeys(
        (
            "offload",
            "offload model",
            "offload params",
            "offload optimizer",
            "offload actor",
            "actor model offload",
            "actor model sleep",
            "offload ref",
            "offload critic",
        ),
        "offload",
    ),
    **dict.fromkeys(
        (
            "onload",
            "onload model",
            "onload params",
            "onload optimizer",
            "load model",
            "actor model onload",
            "actor model wake up",
            "actor wake up",
            "reload model",
            "reload",
        ),
        "onload",
    ),
    # engine_sleep / engine_wake: a colocated inference engine frees and takes back its memory
    **dict.fromkeys(
        (
            "sleep",
            "engine sleep",
            "rollout sleep",
            "release memory occupation",
            "release memory",
            "rollout model sleep",
        ),
        "engine_sleep",
    ),
    **dict.fromkeys(
        (
            "wake up",
            "wakeup",
            "engine wake up",
            "engine wakeup",
            "engine wake",
            "rollout wake up",
            "resume memory occupation",
            "resume memory",
            "rollout model wake up",
        ),
        "engine_wake",
    ),
    # our stages under other frameworks' names
    **dict.fromkeys(
        ("rollout", "gen", "generate", "generation", "generate sequences", "rollout generate"),
        "actor_generate",
    ),
    **dict.fromkeys(
        ("old log prob", "compute log prob", "log probs", "actor log prob", "old logprob"),
        "actor_compute_log_prob",
    ),
    **dict.fromkeys(
        ("ref", "ref log prob", "ref log probs", "reference log prob", "compute ref log prob"),
        "reference_compute_log_prob",
    ),
    **dict.fromkeys(("values", "compute values", "critic values"), "critic_compute_values"),
    **dict.fromkeys(
        ("train", "update actor", "actor train", "train actor", "actor update", "policy update"),
        "actor_update",
    ),
    **dict.fromkeys(
        ("update critic", "critic train", "train critic", "critic update"), "critic_update"
    ),
}

_SEPARATORS = re.compile(r"[\s_\-./:]+")
_NUMBERED = re.compile(r"\s*#?\s*\d+$")
_OURS = frozenset((*STAGES, *TRANSITIONS))
_TRANSITIONS = frozenset(TRANSITIONS)


def fold_name(name: str) -> str:
    """``Update_Weights-From distributed`` -> ``update weights from distributed``."""
    return _SEPARATORS.sub(" ", name).strip().lower()


def stage_of(name: str) -> str | None:
    """Our stage or transition that ``name`` is (ours and verl's names as they are; a
    transition's as the last part of a decorated method's, as ``mstx_timer_decorator`` names
    ``Worker.weight_sync``; a foreign name through ``FOREIGN``); None for any other name."""
    ours = canonical_stage(name)
    if ours in _OURS:
        return ours
    last = name.rpartition(".")[2]
    if last in _TRANSITIONS:
        return last
    return FOREIGN.get(fold_name(name))


def is_step(name: str) -> bool:
    """Whether ``name`` is a whole RL step (``step``, ``training_step``, ``global step 12``,
    ``step#3``): a name of ``STEP_NAMES``, a number after it or not."""
    return _NUMBERED.sub("", fold_name(name)) in STEP_NAMES
