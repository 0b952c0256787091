"""The counters the analysis knows (``prof.count(name, value)``, docs/counters.md): the one
place their names live. The recorder (``capture.count``) and the analysis (``analysis.counts``,
the ledger, throughput) read them from here; the docs test checks README.md, docs/counters.md
and docs/ledger.md list the same names.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["DISTRIBUTIONS", "STANDARD", "StandardCounter", "names"]


class StandardCounter(msgspec.Struct, frozen=True):
    """One name the analysis knows: a ``number`` (calls in one step and stage add up) or a
    ``distribution`` (each value one observation), and what to count."""

    name: str
    kind: Literal["number", "distribution"]
    what: str


#: Every name the analysis knows, in the order the docs list them (any other name is shown
#: as a plain counter).
STANDARD: tuple[StandardCounter, ...] = (
    StandardCounter("tokens_generated", "number", "response tokens the rollout generated"),
    StandardCounter("tokens_trained", "number", "response tokens the update trained on"),
    StandardCounter("samples_kept", "number", "samples passed on to training"),
    StandardCounter("samples_dropped", "number", "samples generated and then dropped"),
    StandardCounter("groups", "number", "prompt groups (GRPO: the samples of one prompt)"),
    StandardCounter("groups_zero_variance", "number", "groups whose rewards were all equal"),
    StandardCounter("responses", "number", "responses generated (the truncated line's whole)"),
    StandardCounter("responses_truncated", "number", "responses cut at the length limit"),
    StandardCounter("response_length", "distribution", "each response's length in tokens"),
    StandardCounter("reward", "distribution", "each sample's reward"),
)
#: The names whose values are a distribution.
DISTRIBUTIONS = frozenset(c.name for c in STANDARD if c.kind == "distribution")


def names() -> tuple[str, ...]:
    """The standard names, in order."""
    return tuple(c.name for c in STANDARD)
