"""What is summed over every capture, whatever the device scope: device time per rule of
``readers.classify`` (``classified``, and ``beyond_hta``: the rules HTA's breakdown does not
share), and the world sizes the captures record with the ranks of each captured (``worlds``).
"""

from __future__ import annotations

from collections import defaultdict

from mindspeed_prof.analysis.readers.classify import CLI_RULE, CONFIG_RULE, DEFAULT, RULES
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order, ranks_text
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.rows import Classified, World

__all__ = ["beyond_hta", "classified", "rule_kind", "worlds", "worlds_text"]

_RULES = {r.name: r for r in (*RULES, DEFAULT)}


def rule_kind(name: str) -> str:
    """The kind a rule gives (the user's own rules: communication)."""
    return _RULES[name].kind if name in _RULES else "comm"


def classified(traces: list[TraceData]) -> list[Classified]:
    """Per rule that classified a device op of ``traces``: runs and device ms, in the table's
    order (the user's rules first)."""
    ms: dict[str, float] = defaultdict(float)
    runs: dict[str, int] = defaultdict(int)
    for t in traces:
        for rule, tally in t.classified.items():
            ms[rule] += tally.total / 1000.0
            runs[rule] += tally.count
    order = [CLI_RULE, CONFIG_RULE, *_RULES]
    return [
        Classified(rule=rule, kind=rule_kind(rule), ms=ms[rule], kernels=runs[rule])
        for rule in sorted(ms, key=lambda n: (order.index(n) if n in order else -1, n))
    ]


def beyond_hta(rows: list[Classified]) -> list[Classified]:
    """The rules HTA's breakdown does not share that classified anything."""
    return [r for r in rows if not (r.rule in _RULES and _RULES[r.rule].hta)]


def worlds(traces: list[TraceData]) -> list[World]:
    """Per world size the captures record (``meta.world_size``): the ranks captured."""
    ranks: dict[int, set[int | None]] = defaultdict(set)
    for t in traces:
        size = t.meta.world_size
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            ranks[size].add(t.rank)
    return [
        World(world_size=size, ranks=sorted(held, key=rank_order))
        for size, held in sorted(ranks.items())
    ]


def worlds_text(held: list[World]) -> str:
    """``rank 0 of 64 captured``, ``2 of 64 ranks captured (0, 5)``; one part per world
    size."""
    return (
        "; ".join(
            f"rank {rank_label(w.ranks[0])} of {w.world_size}"
            if len(w.ranks) == 1
            else f"{len(w.ranks)} of {w.world_size} ranks ({ranks_text(w.ranks)})"
            for w in held
        )
        + " captured (the world size the traces record)"
    )
