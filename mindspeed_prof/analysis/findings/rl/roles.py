"""``rl.role_imbalance``: one role's stage time per step far above the other roles' (actor,
reference, critic... on workers of their own)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.rl.report import finding
from mindspeed_prof.analysis.findings.rl.steps import Who, steps_of, traces_of, who_order
from mindspeed_prof.analysis.judgement.judge import step_gates
from mindspeed_prof.analysis.judgement.noise import noise_floor
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.readers.ranks import role_of
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["ROLE_MARGIN", "role_imbalance"]


#: A role is far above the others when its stage time per step exceeds the median of the
#: other roles' by this share (and the noise floor).
ROLE_MARGIN = 0.5


def role_imbalance(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """A role whose stage time per step (median over its ranks, then over the steps every
    role recorded) exceeds the median of the other roles' by ``ROLE_MARGIN`` and the noise
    floor: where roles run on workers of their own, the others wait for it."""
    roles: dict[Who, str] = {}
    for who, traces in traces_of(captures, tables, settings).items():
        named = {role_of(t) for t in traces} - {""}
        if len(named) == 1:
            roles[who] = named.pop()
    if len(set(roles.values())) < 2:  # one role: none to compare (before a pass over the steps)
        return []
    per: dict[str, dict[int, dict[Who, float]]] = defaultdict(lambda: defaultdict(dict))
    by_stage: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for who, steps in steps_of(captures, tables, settings).items():
        role = roles.get(who)
        if role is None:
            continue
        for n, s in steps.items():
            if s.stages:
                per[role][n][who] = sum(r.dur for r in s.stages) / 1000.0
                for r in s.stages:
                    by_stage[role][r.name] += r.dur / 1000.0
    if len(per) < 2:
        return []
    common = sorted(set.intersection(*(set(v) for v in per.values())))
    if not common:
        return []
    ms = {
        role: statistics.median(statistics.median(per[role][n].values()) for n in common)
        for role in per
    }
    lengths = step_gates(tables.counted)
    step_ms = (
        statistics.median(lengths[n] for n in common) if all(n in lengths for n in common) else None
    )
    floor = noise_floor(settings.noise_ms, step_ms)
    hits = []
    for role, v in ms.items():
        others = statistics.median(x for r, x in ms.items() if r != role)
        if others > 0 and v > others * (1 + ROLE_MARGIN) and v - others >= floor:
            hits.append((v - others, role, v, others))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], h[1]))
    excess, role, v, others = hits[0]
    rest = sorted(name for name in ms if name != role)
    lines = []
    for name in sorted(ms, key=lambda k: (-ms[k], k)):
        held = sorted({w for n in common for w in per[name][n]}, key=who_order)
        total = sum(by_stage[name].values()) or 1.0
        stages = ", ".join(
            f"{stage} {ms[name] * x / total:,.1f}"
            for stage, x in sorted(by_stage[name].items(), key=lambda kv: -kv[1])
        )
        lines.append(
            f"{name}: {ms[name]:,.1f} ms per step in its stages ({stages}) on ranks "
            f"{', '.join(rank_label(*w) for w in held)}"
        )
    lines.append(
        f"median over each role's ranks, then over the {len(common)} steps every "
        "role recorded; each role's stage ranges summed per step"
    )
    share = ratio(excess, step_ms or v, 0.0)
    return [
        finding(
            captures,
            tables,
            settings,
            [w for name in per for n in common for w in per[name][n]],
            rule="rl.role_imbalance",
            title=f"role {role} spends {v:,.1f} ms per step in its stages against {others:,.1f} "
            f"ms for the other roles ({', '.join(rest)}): {ratio(v, others, 0.0):.1f}x, "
            f"{excess:+,.1f} ms",
            detail="\n".join(lines),
            suggestion=f"Rebalance devices between roles: give {role} more devices (a larger "
            "data-parallel size or micro-batch), put the lighter roles on fewer devices "
            f"or colocate them with {role}, or run the roles asynchronously so the "
            "lighter ones do not wait.",
            share=share,
            impact_ms=excess,
            what="stage ranges; roles from each capture's metadata",
            ranks=[w for n in common for w in per[role][n]],
        )
    ]
