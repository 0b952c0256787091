"""Across ranks: a slow rank, a slow link, and links that move small packets."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import folder_of, one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.npu.captures import (
    facts_of,
    files_of,
    npu_captures,
    steps_of,
)
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import TraceData
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "PACKET_LIMITS",
    "SPREAD",
    "LinkSpread",
    "Packets",
    "RankSpread",
    "link_spread",
    "packets",
    "rank_spread",
    "slow_link",
    "slow_rank",
    "small_packets",
]

# -- across ranks

#: slow_rank_analyzer.py / slow_link_analyzer.py: a spread (max - min) over this share of the
#: mean step (of the mean bandwidth) is reported.
SPREAD = 0.05
_PARTS = (("Computing", "compute"), ("Communication", "exposed communication"), ("Free", "free"))


@dataclass
class RankSpread:
    """One step across ranks: each part's ms per rank (Computing, Communication(Not
    Overlapped), Free) and the mean of their sums."""

    step: int | None
    parts: dict[str, dict[int | None, float]]
    mean_ms: float

    def gap(self, part: str) -> tuple[float, int | None, int | None]:
        """(max - min, the rank with the most, the rank with the least)."""
        values = self.parts[part]
        hi = max(values, key=lambda r: (values[r], rank_order(r)))
        lo = min(values, key=lambda r: (values[r], rank_order(r)))
        return values[hi] - values[lo], hi, lo


def rank_spread(captures: Captures, tables: Tables, settings: Settings) -> list[RankSpread]:
    """Per step on two or more ranks: the device breakdown of each rank."""
    by_step: dict[int | None, dict[int | None, tuple[float, float, float]]] = defaultdict(dict)
    for t in npu_captures(captures):
        for d in t.device:
            if d.stage is not None:
                continue
            exposed = (
                d.comm_exposed_ms if d.comm_exposed_ms is not None else (d.comm_ms - d.overlap_ms)
            )
            by_step[d.step][t.rank] = (d.compute_ms, exposed, d.idle_ms)
    out = []
    for step, ranks in sorted(by_step.items(), key=lambda kv: rank_order(kv[0])):
        if len(ranks) < 2:
            continue
        parts = {name: {r: v[i] for r, v in ranks.items()} for i, (name, _) in enumerate(_PARTS)}
        out.append(RankSpread(step, parts, sum(sum(v) for v in ranks.values()) / len(ranks)))
    return out


def slow_rank(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    worst: tuple[float, RankSpread, list[str]] | None = None
    for s in rank_spread(captures, tables, settings):
        flagged = [p for p, _ in _PARTS if ratio(s.gap(p)[0], s.mean_ms, 0.0) > SPREAD]
        if flagged:
            top = max(s.gap(p)[0] for p in flagged)
            if worst is None or top > worst[0]:
                worst = (top, s, flagged)
    if worst is None:
        return []
    top, s, flagged = worst
    words = dict(_PARTS)
    first = max(flagged, key=lambda p: s.gap(p)[0])
    gap, hi, lo = s.gap(first)
    lines = []
    for p in flagged:
        g, h, low = s.gap(p)
        lines.append(
            f"{words[p]}: {g:,.1f} ms apart, rank {rank_label(h)} "
            f"{s.parts[p][h]:,.1f} ms, rank {rank_label(low)} {s.parts[p][low]:,.1f} ms"
        )
    lines.append(
        "each rank: "
        + "; ".join(
            f"{rank_label(r)} " + "/".join(f"{s.parts[p][r]:,.1f}" for p, _ in _PARTS)
            for r in sorted(s.parts["Computing"], key=rank_order)
        )
        + " ms (compute/exposed "
        "communication/free)"
    )
    advice = {
        "Computing": "balance the work across ranks (pipeline stages, batch or sequence "
        "lengths): the ranks that compute less wait for the others",
        "Communication": f"the rank with the least exposed communication (rank "
        f"{rank_label(s.gap('Communication')[2])}) arrives last at each "
        "collective and the others wait for it: look at what it does before",
        "Free": "the rank with the most free time waits on its host: look at its data loading "
        "and host operators",
    }
    ranks = sorted(s.parts["Computing"], key=rank_order)
    return [
        one_line(
            Finding(
                rule="npu.slow_rank",
                title=f"Ranks differ by {gap:,.1f} ms in {words[first]} at step {s.step} (rank "
                f"{rank_label(hi)} {s.parts[first][hi]:,.1f} ms, rank {rank_label(lo)} "
                f"{s.parts[first][lo]:,.1f} ms; {ratio(gap, s.mean_ms, 0.0):.0%} of the step)",
                detail="\n".join(lines),
                suggestion="; ".join(advice[p] for p in flagged),
                severity="high" if ratio(top, s.mean_ms, 0.0) > 4 * SPREAD else "medium",
                impact_ms=top,
                source=_breakdown_source(captures, tables, settings),
                ranks=ranks,
            )
        )
    ]


def _breakdown_source(captures: Captures, tables: Tables, settings: Settings) -> str:
    """Where torch_npu's step breakdown is: step_trace_time.csv of a text export, StepTraceTime
    of a db (each reader falls back on the overlap analysis where those are missing)."""
    traces = [t for t in npu_captures(captures) if any(d.stage is None for d in t.device)]
    names = sorted(
        {"StepTraceTime" if t.meta.export == "db" else "step_trace_time.csv" for t in traces}
    )
    return f"{', '.join(names)} of {', '.join(folder_of(captures, t) for t in traces)}"


@dataclass
class LinkSpread:
    """One link type's bandwidth (GB/s = MB/ms) per (step, rank)."""

    link: str
    gbps: dict[tuple[int | None, int | None], float]

    @property
    def mean(self) -> float:
        return sum(self.gbps.values()) / len(self.gbps)

    @property
    def spread(self) -> float:
        values = list(self.gbps.values())
        spread = ratio(max(values) - min(values), self.mean, 0.0)
        return spread if math.isfinite(spread) else 0.0


def link_spread(captures: Captures, tables: Tables, settings: Settings) -> list[LinkSpread]:
    """SDMA and RDMA bandwidth of each rank and step: what its operators moved over what time
    (msprof-analyze's slow link figures), on two or more ranks."""
    out = []
    for link in ("SDMA", "RDMA"):
        moved: dict[tuple[int | None, int | None], list[float]] = defaultdict(lambda: [0.0, 0.0])
        for t in npu_captures(captures):
            for h in facts_of(t).hccl:
                mb, ms = getattr(h, f"{link.lower()}_mb"), getattr(h, f"{link.lower()}_ms")
                if mb is not None and ms is not None:
                    moved[(h.step, t.rank)][0] += mb
                    moved[(h.step, t.rank)][1] += ms
        gbps = {
            k: q
            for k, (mb, ms) in moved.items()
            if mb >= 0 and (q := ratio(mb, ms, None)) is not None
        }
        if len({r for _, r in gbps}) >= 2:
            out.append(LinkSpread(link, gbps))
    return out


def slow_link(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    out = []
    for s in link_spread(captures, tables, settings):
        if s.spread <= SPREAD:
            continue
        lo = min(s.gbps, key=lambda k: s.gbps[k])
        hi = max(s.gbps, key=lambda k: s.gbps[k])
        out.append(
            one_line(
                Finding(
                    rule="npu.slow_link",
                    title=(
                        f"{s.link} bandwidth differs across ranks: "
                        f"{s.gbps[lo]:.2f}-{s.gbps[hi]:.2f} GB/s "
                        f"(mean {s.mean:.2f}, {s.spread:.0%} apart); "
                        f"slowest rank {rank_label(lo[1])} at step {lo[0]}"
                    ),
                    detail="\n".join(
                        f"rank {rank_label(r)} step {st}: {v:.3f} GB/s"
                        for (st, r), v in sorted(
                            s.gbps.items(),
                            key=lambda kv: (rank_order(kv[0][1]), rank_order(kv[0][0])),
                        )
                    ),
                    suggestion=f"Check the slowest rank's {s.link} links (cabling, link errors, "
                    "other jobs on the same links) and whether its operators move smaller "
                    "pieces",
                    severity="medium",
                    source=files_of(captures, npu_captures(captures), "hccl"),
                    ranks=sorted({r for _, r in s.gbps}, key=rank_order),
                )
            )
        )
    return out


# -- small packets

#: packet.yaml: an operator moving under MB megabytes over a link is small; more than RATIO of
#: them is reported.
PACKET_LIMITS = {"SDMA": (16.0, 0.2), "RDMA": (1.0, 0.2)}


@dataclass
class Packets:
    """Over one link type: operators that moved data, the small ones and their time (ms)."""

    link: str
    ops: int
    small: int
    small_ms: float

    @property
    def ratio(self) -> float:
        return self.small / self.ops if self.ops else 0.0


def packets(t: TraceData) -> list[Packets]:
    """Per link type, the operators (of every step) that moved data over it."""
    out = []
    for link, (limit, _) in PACKET_LIMITS.items():
        p = Packets(link, 0, 0, 0.0)
        for h in facts_of(t).hccl:
            mb = getattr(h, f"{link.lower()}_mb")
            if mb:
                p.ops += 1
                if mb < limit:
                    p.small += 1
                    p.small_ms += getattr(h, f"{link.lower()}_ms") or 0.0
        if p.ops:
            out.append(p)
    return out


def small_packets(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    out = []
    for link, (limit, most) in PACKET_LIMITS.items():
        found = [
            (t, p)
            for t in npu_captures(captures)
            for p in packets(t)
            if p.link == link and p.ratio > most
        ]
        if not found:
            continue
        t, p = max(found, key=lambda f: (f[1].ratio, f[1].small_ms))
        traces = [f[0] for f in found]
        out.append(
            one_line(
                Finding(
                    rule="npu.packet",
                    title=(
                        f"{p.small} of {p.ops} {link} communications on rank {rank_label(t.rank)} "
                        f"move under {limit:g} MB ({p.ratio:.0%}, {p.small_ms:,.3f} ms)"
                    ),
                    detail="\n".join(
                        f"rank {rank_label(o.rank)}: {q.small} of {q.ops} under {limit:g} "
                        f"MB, {q.small_ms:,.3f} ms over {steps_of(o)} step"
                        f"{'s' * (steps_of(o) != 1)}"
                        for o, q in found
                    ),
                    suggestion=(
                        "Fewer, larger transfers: a larger batch or gradient accumulation for "
                        "data parallelism, ZeRO-1/2 rather than 3 where memory allows, fused "
                        "optimizers and operators"
                    ),
                    severity="low",
                    impact_ms=max(q.small_ms / steps_of(o) for o, q in found),
                    source=files_of(captures, traces, "hccl"),
                    ranks=ranks_of(traces),
                )
            )
        )
    return out
