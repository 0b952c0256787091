"""Findings rules: RL post-training loops, read from the step and stage ranges that
mindspeed-prof's own captures record (``prof.step``, ``prof.stage``; roles from each capture's
metadata).

- ``uncovered``: time in a step that no stage covers (weight sync, resharding, data
  dispatch): the step's length less the union of its stages, per rank;
- ``growing_stage``: one stage's own time growing over the steps (``judgement.growth``);
- ``role_imbalance``: one role's stage time per step far above the other roles' (actor,
  reference, critic... on workers of their own);
- ``generation_tail``: the generation stage waiting for its slowest rank, a different rank
  from step to step (one rank slow in most steps is ``ranks.straggler``'s);
- ``memory_growth``: a stage's peak memory rising step over step (``stats.trend``: Mann-Kendall,
  Theil-Sen);
- ``transitions``: a transition between generation and training (weight sync, resharding,
  offload, onload, the engine's sleep and wake) over a share of the step, with its knobs.

A difference is noise under ``judgement.noise.noise_floor`` (``--noise-ms``, or 1% of the
step).
Warmup steps are left out unless ``include_warmup`` (``Tables.counted``). One module per
rule; ``steps`` what they read, ``report`` how their findings read.
"""

from __future__ import annotations

from mindspeed_prof.analysis.findings.finding import Rule
from mindspeed_prof.analysis.findings.rl.coverage import uncovered
from mindspeed_prof.analysis.findings.rl.generation import SAME_RANK, generation_tail
from mindspeed_prof.analysis.findings.rl.growth import growing_stage
from mindspeed_prof.analysis.findings.rl.memory import memory_growth
from mindspeed_prof.analysis.findings.rl.roles import ROLE_MARGIN, role_imbalance
from mindspeed_prof.analysis.findings.rl.steps import GENERATE
from mindspeed_prof.analysis.findings.rl.transitions import TRANSITION_SHARE, transitions

__all__ = [
    "GENERATE",
    "ROLE_MARGIN",
    "RULES",
    "SAME_RANK",
    "TRANSITION_SHARE",
    "Rule",
    "generation_tail",
    "growing_stage",
    "memory_growth",
    "role_imbalance",
    "transitions",
    "uncovered",
]


#: This family's rules, in the order they run.
RULES: list[Rule] = [
    uncovered,
    growing_stage,
    role_imbalance,
    generation_tail,
    transitions,
    memory_growth,
]
