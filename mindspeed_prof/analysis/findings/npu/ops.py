"""The AI core's operators: vector-bound ones, ones bound by no unit, AI CPU ones (and, from
``affinity``, operators with a fused API). What the rules read of a rank's operators is a
``per_rank`` answer (``captures.answered``)."""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from mindspeed_prof.analysis.findings.common import cut, one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.npu.affinity import (
    FUSED_OPTIMIZERS,
    affinity,
    affinity_apis,
)
from mindspeed_prof.analysis.findings.npu.captures import (
    MS,
    facts_of,
    files_of,
    npu_captures,
    per_rank,
    steps_of,
)
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import NpuOp, TraceData
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = [
    "AICPU_MIN_US",
    "BOUND_RATIO",
    "FUSED_OPTIMIZERS",
    "VECTOR_SHARE",
    "NoBound",
    "Unbound",
    "VectorOp",
    "affinity",
    "affinity_apis",
    "aicpu",
    "aicpu_kept",
    "aicpu_ops",
    "no_bound",
    "no_bound_kept",
    "no_bound_ops",
    "top_vector_ops",
    "unit_ratios",
    "vector_ops",
    "vector_perf",
]

# -- AI core ops

#: An operator type is looked at when it takes this share of all operator time (or 1 s).
VECTOR_SHARE = 0.01
VECTOR_MIN_US = 1e6
#: aicore_performance.yaml: a vector op is bound when vec+mte2+mte3 reaches TOTAL, or one of
#: them BOUND; otherwise its room to optimise is BOUND less its busiest ratio.
VECTOR_TOTAL, VECTOR_BOUND = 0.9, 0.7
TOP = 5


@dataclass
class VectorOp:
    """A vector operator by name and shapes: mean ratios, device time (us), runs, and its bound
    (``vec_mte2_mte3``, ``mte2``, ``mte3``, ``vec``) or else its room to optimise (0-1)."""

    name: str
    shape: str
    dtype: str
    vec: float
    mte2: float
    mte3: float
    us: float
    runs: int
    bound: str | None
    room: float


def _op_time(t: TraceData) -> float:
    """Every operator's device time (us); communication's too, as msprof-analyze counts it."""
    npu = facts_of(t)
    total = sum(o.total_us for o in npu.ops)
    if not any(o.core in ("HCCL", "COMMUNICATION") for o in npu.ops):
        total += sum((h.elapse_ms or 0.0) * MS for h in npu.hccl)
    return total


def vector_ops(t: TraceData, top: int | None = TOP) -> tuple[list[VectorOp], list[VectorOp]]:
    """(the ``top`` with the most room to optimise, the ``top`` bound ones by time; every one
    where ``top`` is None), per msprof-analyze's vector check; empty without PMU ratios."""
    npu = facts_of(t)
    vector = [
        o
        for o in npu.ops
        if o.core in ("AI_VECTOR_CORE", "MIX_AIV") and o.count and "aiv_vec_ratio" in o.ratios
    ]
    total = _op_time(t)
    by_type: dict[str, float] = defaultdict(float)
    for o in vector:
        by_type[o.type] += o.total_us
    chosen = {
        k
        for k, us in by_type.items()
        if total and (ratio(us, total, 0.0) >= VECTOR_SHARE or us >= VECTOR_MIN_US)
    }
    merged: dict[tuple[str, str, str], list[NpuOp]] = defaultdict(list)
    for o in vector:
        if o.type in chosen:
            merged[(o.name, o.input_shapes, o.output_shapes)].append(o)
    rooms: list[VectorOp] = []
    bounds: list[VectorOp] = []
    for (name, shape, _), ops in merged.items():
        runs = sum(o.count for o in ops)
        vec, mte2, mte3 = (
            sum(o.ratios.get(f"aiv_{k}_ratio", 0.0) for o in ops) / runs
            for k in ("vec", "mte2", "mte3")
        )
        bound = (
            "vec_mte2_mte3"
            if vec + mte2 + mte3 >= VECTOR_TOTAL
            else "mte2"
            if mte2 >= VECTOR_BOUND
            else "mte3"
            if mte3 >= VECTOR_BOUND
            else "vec"
            if vec >= VECTOR_BOUND
            else None
        )
        room = 0.0 if bound else max(VECTOR_BOUND - vec, VECTOR_BOUND - mte2, VECTOR_BOUND - mte3)
        v = VectorOp(
            name,
            shape,
            ops[-1].input_dtypes,
            vec,
            mte2,
            mte3,
            sum(o.total_us for o in ops),
            runs,
            bound,
            room,
        )
        (bounds if bound else rooms).append(v)
    rooms.sort(key=lambda v: (-round(v.room, 4), v.name, v.shape))
    bounds.sort(key=lambda v: (-v.us, v.name, v.shape))
    return rooms[:top], bounds[:top]


@per_rank
def top_vector_ops(t: TraceData) -> tuple[list[VectorOp], list[VectorOp]]:
    """``vector_ops(t)``: the ``TOP`` of each, what ``vector_perf`` reads (names interned: the
    same on many ranks)."""
    rooms, bounds = vector_ops(t)
    for v in (*rooms, *bounds):
        v.name, v.shape, v.dtype = sys.intern(v.name), sys.intern(v.shape), sys.intern(v.dtype)
    return rooms, bounds


def vector_perf(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = [(t, r, b) for t in npu_captures(captures) for r, b in [top_vector_ops(t)] if r or b]
    if not found:
        return []
    t, rooms, bounds = max(
        found, key=lambda f: (max((v.room for v in f[1]), default=0.0), -rank_order(f[0].rank)[1])
    )
    parts = []
    if rooms:
        parts.append(
            f"{len(rooms)} with up to {rooms[0].room:.1%} room to optimise "
            f"({cut(rooms[0].name, 30)})"
        )
    if bounds:
        parts.append(
            f"{len(bounds)} bound ({bounds[0].bound}: {cut(bounds[0].name, 30)} "
            f"{bounds[0].us:,.0f} us)"
        )
    lines = [
        f"room {v.room:5.1%}  {cut(v.name)} [{cut(v.shape, 40)}]: vec {v.vec:.2f} "
        f"mte2 {v.mte2:.2f} mte3 {v.mte3:.2f}, {v.runs} run{'s' * (v.runs != 1)} "
        f"{v.us:,.1f} us"
        for v in rooms
    ]
    lines += [
        f"bound {v.bound}  {cut(v.name)} [{cut(v.shape, 40)}]: vec {v.vec:.2f} "
        f"mte2 {v.mte2:.2f} mte3 {v.mte3:.2f}, {v.us:,.1f} us"
        for v in bounds
    ]
    lines += [
        f"rank {rank_label(o.rank)}: {len(r)} with up to "
        f"{max((v.room for v in r), default=0.0):.1%} room, {len(b)} bound"
        for o, r, b in found
        if o is not t
    ]
    traces = [f[0] for f in found]
    return [
        one_line(
            Finding(
                rule="npu.vector_ops",
                title=f"Vector operators on rank {rank_label(t.rank)}: {'; '.join(parts)}",
                detail="\n".join(lines),
                suggestion=(
                    "Look at these operators' shapes and formats (TransData runs where a format "
                    "changes: keep tensors in one format); bound ones move more data than they "
                    "compute: fuse them with their neighbours"
                ),
                severity="low",
                source=files_of(captures, traces, "ops"),
                ranks=ranks_of(traces),
            )
        )
    ]


#: operator_bound_checker.py: an operator is bound by a unit whose ratio exceeds this.
BOUND_RATIO = 0.8
NO_BOUND_MIN_US = 20.0
#: The ratios of the units each core has (msprof-analyze reads aic_ ones for vector operators
#: too, where they are 0: it calls operators bound on aiv_mte2 unbound).
CORE_RATIOS: dict[str, tuple[str, ...]] = {
    "AI_CORE": ("aic_mac_ratio", "aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio"),
    "AI_VECTOR_CORE": ("aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio"),
}
CORE_RATIOS["MIX_AIC"] = CORE_RATIOS["MIX_AIV"] = (
    *CORE_RATIOS["AI_CORE"],
    *CORE_RATIOS["AI_VECTOR_CORE"],
)


@dataclass
class NoBound:
    """Operators no unit bounds: names by their longest run, their runs and device time (us)."""

    ops: list[NpuOp]
    runs: int
    us: float

    def types(self, most: int = 10) -> list[str]:
        seen: list[str] = []
        for o in sorted(self.ops, key=lambda o: -o.max_us):
            if o.type not in seen:
                seen.append(o.type)
        return seen[:most]


def unit_ratios(op: NpuOp) -> dict[str, float]:
    """The mean ratio of each unit of the core ``op`` ran on."""
    return {k: op.ratios.get(k, 0.0) / op.count for k in CORE_RATIOS.get(op.core, ())}


def no_bound(t: TraceData) -> NoBound | None:
    """Operators with PMU ratios of which none exceeds ``BOUND_RATIO``; None unless one of
    them ran longer than ``NO_BOUND_MIN_US``."""
    ops = []
    for o in facts_of(t).ops:
        ratios = list(unit_ratios(o).values()) if o.count else []
        if any(ratios) and not any(r > BOUND_RATIO for r in ratios):
            ops.append(o)
    if not ops or max(o.max_us for o in ops) <= NO_BOUND_MIN_US:
        return None
    return NoBound(ops, sum(o.count for o in ops), sum(o.total_us for o in ops))


class Unbound(NamedTuple):
    """What ``no_bound_ops`` reads of a ``NoBound``: its types (``NoBound.types``), runs and
    device time (us)."""

    types: list[str]
    runs: int
    us: float


@per_rank
def no_bound_kept(t: TraceData) -> Unbound | None:
    """``no_bound(t)`` as ``Unbound``: not its operators."""
    nb = no_bound(t)
    return None if nb is None else Unbound([sys.intern(k) for k in nb.types()], nb.runs, nb.us)


def no_bound_ops(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found = [(t, nb) for t in npu_captures(captures) if (nb := no_bound_kept(t)) is not None]
    if not found:
        return []
    t, nb = max(found, key=lambda f: f[1].us / steps_of(f[0]))
    traces = [f[0] for f in found]
    per_step = nb.us / steps_of(t) / MS
    lines = [
        f"rank {rank_label(o.rank)}: {n.runs} runs, {n.us / steps_of(o) / MS:,.2f} ms per step"
        for o, n in found
    ]
    return [
        one_line(
            Finding(
                rule="npu.no_bound",
                title=(
                    f"{nb.runs} operator runs are bound by no unit (no mte, cube, vector or scalar "
                    f"ratio over {BOUND_RATIO:.0%}): {per_step:,.2f} ms per step on rank "
                    f"{rank_label(t.rank)}"
                ),
                detail="\n".join(["Longest first: " + ", ".join(nb.types), *lines]),
                suggestion="Tune these operators with AOE (aoe --job_type=2 ...) or look for small "
                "shapes and launch gaps: their units mostly wait",
                severity="low",
                source=files_of(captures, traces, "ops"),
                ranks=ranks_of(traces),
            )
        )
    ]


#: aicpu_checker.py: AI CPU operators longer than this are reported.
AICPU_MIN_US = 20.0


def aicpu(t: TraceData) -> list[NpuOp]:
    """The operators that ran on the AI CPU longer than ``AICPU_MIN_US``, longest first."""
    ops = [o for o in facts_of(t).ops if o.core == "AI_CPU" and o.max_us > AICPU_MIN_US]
    return sorted(ops, key=lambda o: (-o.max_us, o.name))


@per_rank
def aicpu_kept(t: TraceData) -> tuple[list[NpuOp], float]:
    """``aicpu(t)`` and the device time (us) of every AI CPU operator."""
    return aicpu(t), sum(o.total_us for o in facts_of(t).ops if o.core == "AI_CPU")


def aicpu_ops(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    kept = [(t, *aicpu_kept(t)) for t in npu_captures(captures)]
    found = [(t, ops) for t, ops, _ in kept if ops]
    if not found:
        return []
    per_step = {id(t): us / steps_of(t) / MS for t, ops, us in kept if ops}
    t, ops = max(found, key=lambda f: per_step[id(f[0])])
    traces = [f[0] for f in found]
    names = ", ".join(f"{o.name} {o.max_us:,.1f} us" for o in ops[:3])
    lines = [
        f"rank {rank_label(r.rank)} {o.name} ({o.type}): {o.count} run"
        f"{'s' * (o.count != 1)}, longest {o.max_us:,.1f} us; {o.input_dtypes or '?'} -> "
        f"{o.output_dtypes or '?'}"
        for r, rops in found
        for o in rops
    ]
    worst = per_step[id(t)]
    return [
        one_line(
            Finding(
                rule="npu.aicpu",
                title=f"{len(ops)} operator{'s' * (len(ops) != 1)} ran on the AI CPU for over "
                f"{AICPU_MIN_US:.0f} us on rank {rank_label(t.rank)}: {names}",
                detail="\n".join(lines),
                suggestion=(
                    "Avoid AI CPU operators: use data types the AI Core handles (e.g. int32 or "
                    "float instead of int64/uint64 or double) so the operator runs there"
                ),
                severity="medium" if worst >= 1.0 else "low",
                impact_ms=worst,
                source=files_of(captures, traces, "ops"),
                ranks=ranks_of(traces),
            )
        )
    ]
