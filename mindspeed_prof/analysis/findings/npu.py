"""Findings rules: npu (see ``analysis.findings``): what Ascend's msprof-analyze advisor
checks on a torch_npu capture, and what it leaves in raw tables (host waits, run-time
compilation), each from the facts the torch_npu readers keep (``TraceData.npu``, ``device``,
``runtime``, ``ops``).

Each check has an evidence function of one capture (or of the analysis, for checks across
ranks) that returns plain numbers, and a rule that turns them into findings; the thresholds are
the advisor's (``advisor/rules/en/*.yaml`` of msprof-analyze 26.2.0) unless said otherwise.
Where the advisor looks at one rank (the slowest, else the first), these look at every rank.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.readers.model import (
    NpuFacts,
    NpuOp,
    TraceData,
    rank_label,
    rank_order,
    ranks_text,
)
from mindspeed_prof.analysis.readers.npu_facts import api_name, is_sync
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.analyse import Analysis

__all__ = [
    "AICPU_MIN_US", "ALIGN_BYTES", "ALIGN_MIN_BYTES", "BOUND_RATIO", "COMPILE_APIS", "ENV_RULES",
    "FUSED_OPTIMIZERS", "HOST_WAIT_SHARE", "LAUNCH_SYNC_RATIO", "PACKET_LIMITS", "RULES",
    "SPREAD", "VECTOR_SHARE", "Aligned", "Alignment", "EnvIssue", "HostCalls", "LinkSpread",
    "NoBound", "Packets", "RankSpread", "VectorOp", "affinity", "aicpu", "alignment",
    "compile_calls", "dynamic_shape", "env_issues", "host_waits", "launch_blocking",
    "link_spread", "no_bound", "packets", "rank_spread", "unit_ratios", "vector_ops",
]

MS = 1000.0  # us per ms

# ------------------------------------------------------------------------------ helpers


def _captures(result: Analysis) -> list[TraceData]:
    """The torch_npu captures, by rank."""
    return sorted((t for t in result.traces if t.kind == "npu" and t.npu is not None),
                  key=lambda t: (rank_order(t.rank), str(t.path)))


def _facts(t: TraceData) -> NpuFacts:
    assert t.npu is not None
    return t.npu


def _folder(result: Analysis, t: TraceData) -> str:
    try:
        rel = t.path.relative_to(result.root)
    except ValueError:
        return t.path.name
    return str(rel) if rel.parts else t.path.name


def _source(result: Analysis, traces: Iterable[TraceData], key: str) -> str:
    """``rank0_ascend_pt/kernel_details.csv``, or the file and the folders where several."""
    traces = list(traces)
    files = sorted({_facts(t).sources.get(key, "?") for t in traces})
    folders = [_folder(result, t) for t in traces]
    if len(folders) == 1:
        return f"{folders[0]}/{files[0]}"
    return f"{', '.join(files)} of {', '.join(folders)}"


def _steps(t: TraceData) -> int:
    """Steps the capture holds (ProfilerStep ranges, else its device rows), at least 1."""
    steps = {r.step for r in t.ranges if r.kind == "step"}
    if not steps:
        steps = {d.step for d in t.device if d.stage is None and d.step is not None}
    return max(len(steps), 1)


def _host_step_ms(t: TraceData) -> float | None:
    """The mean step on the host (ProfilerStep), else on the device (torch_npu's Stage)."""
    host = [r.dur for r in t.ranges if r.kind == "step"]
    if host:
        return sum(host) / len(host) / MS
    device = [d.step_ms for d in t.device if d.stage is None and d.step_ms]
    return sum(device) / len(device) if device else None


def _ranks(traces: Iterable[TraceData]) -> list[int | None]:
    return sorted({t.rank for t in traces}, key=rank_order)


def _on(traces: list[TraceData]) -> str:
    ranks = _ranks(traces)
    return f"rank {ranks_text(ranks)}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


def _cut(text: str, most: int = 60) -> str:
    """``text`` on one line, at most ``most`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= most else text[:most - 3] + "..."


def _finding(**fields: Any) -> Finding:
    """A finding whose title is one line whatever the names in it (a capture's own)."""
    fields["title"] = " ".join(str(fields["title"]).split())
    return Finding(**fields)


def _grouped(per_rank: list[tuple[TraceData, Any]]) -> list[list[tuple[TraceData, Any]]]:
    """Ranks whose evidence reads the same, together (a finding names them once)."""
    groups: dict[str, list[tuple[TraceData, Any]]] = {}
    for t, ev in per_rank:
        groups.setdefault(repr(ev.key()), []).append((t, ev))
    return list(groups.values())


# ------------------------------------------------------------------------------ environment

#: When msprof-analyze flags a variable torch_npu recorded (environment_variable_checker.py),
#: why, and what to set. Values are as recorded ("" = unset); non-numbers count as 0, as there.
ENV_RULES: dict[str, tuple[Any, str, str]] = {
    "ASCEND_GLOBAL_LOG_LEVEL": (lambda v: v != "" and _int(v) != 3,
                                "log level below error (0 debug, 1 info, 2 warning) slows "
                                "training", "export ASCEND_GLOBAL_LOG_LEVEL=3"),
    "HCCL_RDMA_TC": (lambda v: v != "", "sets the DSCP of RoCE packets",
                     "check it against the network's (default 132)"),
    "HCCL_RDMA_SL": (lambda v: v != "", "sets the RDMA NIC priority; it must match the "
                     "NIC's PFC priority", "check it against the PFC priority (default 4)"),
    "ACLNN_CACHE_LIMIT": (lambda v: v == "" or _int(v) < 10000,
                          "caches few aclnn operators (default 10000 or fewer)",
                          "export ACLNN_CACHE_LIMIT=100000"),
    "HOST_CACHE_CAPACITY": (lambda v: v == "" or _int(v) == 0,
                            "the dynamic-shape host cache is off",
                            "export HOST_CACHE_CAPACITY=20"),
    "PYTORCH_NPU_ALLOC_CONF": (lambda v: "expandable_segments:True" not in v,
                               "the allocator cannot grow segments: memory fragments",
                               "export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True"),
    "ASCEND_LAUNCH_BLOCKING": (lambda v: v != "" and _int(v) == 1,
                               "every operator runs synchronously (a debugging mode)",
                               "unset ASCEND_LAUNCH_BLOCKING"),
    "HCCL_ALGO": (lambda v: v != "", "fixes the cross-server algorithm instead of letting "
                  "HCCL choose", "unset HCCL_ALGO"),
}


def _int(value: str) -> int:
    try:
        return int(float(value))
    except ValueError:
        return 0


@dataclass
class EnvIssue:
    """The variables of one capture that ``ENV_RULES`` flags, with their recorded values."""

    flagged: dict[str, str]

    def key(self) -> Any:
        return sorted(self.flagged.items())


def env_issues(t: TraceData) -> EnvIssue | None:
    """None where the capture records no environment or nothing is flagged."""
    env = _facts(t).env
    if env is None:
        return None
    flagged = {k: env[k] for k in ENV_RULES if k in env and ENV_RULES[k][0](env[k])}  # rules' order
    return EnvIssue(flagged) if flagged else None


def env_vars(result: Analysis) -> list[Finding]:
    out = []
    per_rank = [(t, e) for t in _captures(result) if (e := env_issues(t)) is not None]
    for group in _grouped(per_rank):
        traces = [t for t, _ in group]
        flagged = group[0][1].flagged
        names = ", ".join(f"{k}={v!r}" if v else f"{k} unset" for k, v in flagged.items())
        severity = ("high" if "ASCEND_LAUNCH_BLOCKING" in flagged else
                    "medium" if "ASCEND_GLOBAL_LOG_LEVEL" in flagged else "low")
        out.append(_finding(
            rule="npu.env_vars",
            title=f"{len(flagged)} environment variable{'s' * (len(flagged) != 1)} off their "
                  f"recommended values on {_on(traces)}: {names}",
            detail="\n".join(f"{k}={v!r}: {ENV_RULES[k][1]}" for k, v in flagged.items()),
            suggestion="; ".join(ENV_RULES[k][2] for k in flagged),
            severity=severity, source=_source(result, traces, "env"), ranks=_ranks(traces)))
    return out


# ------------------------------------------------------------------------------ byte alignment

#: A copy task's size should be a multiple of this many bytes; tasks this small or smaller are
#: not judged (byte_alignment.yaml: min_size 512).
ALIGN_BYTES = 512
ALIGN_MIN_BYTES = 512
#: Unaligned copy time over all judged copy time: under LOW is low priority, from HIGH high.
ALIGN_LOW, ALIGN_HIGH = 0.2, 0.7


@dataclass
class Aligned:
    """One communication operator's judged copies: bytes, time (us), copies; the unaligned
    ones' time, count and sizes."""

    op: str
    bytes: int = 0
    us: float = 0.0
    copies: int = 0
    unaligned_us: float = 0.0
    unaligned: int = 0
    sizes: list[int] = field(default_factory=list)

    @property
    def gbps(self) -> float:
        """Bytes over time in decimal GB/s, as the advisor gives it."""
        return ratio(self.bytes / 1e9, self.us / 1e6, 0.0)


@dataclass
class Alignment:
    """One capture's operators with an unaligned copy, and the time of every judged copy."""

    ops: list[Aligned]
    judged_us: float

    @property
    def unaligned_us(self) -> float:
        return sum(a.unaligned_us for a in self.ops)


def alignment(t: TraceData) -> Alignment | None:
    """None where the capture has no task detail (level0)."""
    tasks = _facts(t).tasks
    if tasks is None:
        return None
    out, total = [], 0.0
    for op in tasks:
        a = Aligned(op.op)
        for size, (count, us) in sorted(op.sizes.items()):
            if size <= ALIGN_MIN_BYTES:
                continue
            a.bytes += int(size * count)
            a.us += us
            a.copies += int(count)
            if size % ALIGN_BYTES:
                a.unaligned_us += us
                a.unaligned += int(count)
                a.sizes.append(size)
        total += a.us
        if a.unaligned:
            out.append(a)
    return Alignment(out, total)


def byte_alignment(result: Analysis) -> list[Finding]:
    found = [(t, al) for t in _captures(result) if (al := alignment(t)) is not None and al.ops]
    if not found:
        return []
    traces = [t for t, _ in found]
    lines = []
    for t, al in found:
        for op in al.ops:
            sizes = ", ".join(f"{s:,}" for s in op.sizes[:3])
            lines.append(f"rank {rank_label(t.rank)} {op.op}: {op.bytes:,} B in {op.copies} "
                         f"copies, {op.us:,.1f} us ({op.gbps:.2f} GB/s); {op.unaligned} "
                         f"unaligned ({sizes} B) took {op.unaligned_us:,.1f} us")
    bad = sum(al.unaligned_us for _, al in found)
    judged = sum(al.judged_us for _, al in found)
    per_step = max(al.unaligned_us / _steps(t) / MS for t, al in found)
    ops_n = max(len(al.ops) for _, al in found)
    share = ratio(bad, judged, 0.0)
    return [_finding(
        rule="npu.byte_alignment",
        title=f"{ops_n} communication op{'s' * (ops_n != 1)} copy sizes that are not a "
              f"multiple of {ALIGN_BYTES} B on {_on(traces)}: {bad:,.1f} us of "
              f"{judged:,.1f} us of copies ({share:.0%})",
        detail="\n".join(lines),
        suggestion=f"Make each communicated tensor (gradient bucket, all-gather shard) a "
                   f"multiple of {ALIGN_BYTES} bytes, e.g. by padding it; unaligned copies run "
                   "slower on SDMA",
        severity="low" if share < ALIGN_LOW else "high" if share >= ALIGN_HIGH else "medium",
        impact_ms=per_step, source=_source(result, traces, "tasks"), ranks=_ranks(traces))]


# ------------------------------------------------------------------------------ dynamic shape

COMPILE_FIX = ("torch_npu.npu.set_compile_mode(jit_compile=False) and "
               "torch_npu.npu.config.allow_internal_format = False at the start of the script")


def dynamic_shape(t: TraceData) -> tuple[int, int] | None:
    """(operator runs with an OP State, of them static), where the capture records states."""
    ops = _facts(t).ops
    stated = sum(o.stated for o in ops)
    return (stated, sum(o.static for o in ops)) if stated else None


def dynamic_shapes(result: Analysis) -> list[Finding]:
    found = [(t, s) for t in _captures(result) if (s := dynamic_shape(t)) and s[1] == 0]
    if not found:
        return []
    traces = [t for t, _ in found]
    runs = ", ".join(f"{n:,} on rank {rank_label(t.rank)}" for t, (n, _) in found)
    return [_finding(
        rule="npu.dynamic_shape",
        title=f"Every operator ran with a dynamic shape, none static ({runs}): operators are "
              "compiled at run time",
        detail="OP State of each operator run: 'dynamic' on all of them; msprof-analyze: "
               "\"Found all operators are dynamic shape\"",
        suggestion=f"Disable JIT compilation: {COMPILE_FIX}",
        severity="medium", source=_source(result, traces, "ops"), ranks=_ranks(traces))]


# ------------------------------------------------------------------------------ AI core ops

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
    npu = _facts(t)
    total = sum(o.total_us for o in npu.ops)
    if not any(o.core in ("HCCL", "COMMUNICATION") for o in npu.ops):
        total += sum((h.elapse_ms or 0.0) * MS for h in npu.hccl)
    return total


def vector_ops(t: TraceData, top: int | None = TOP) -> tuple[list[VectorOp], list[VectorOp]]:
    """(the ``top`` with the most room to optimise, the ``top`` bound ones by time; every one
    where ``top`` is None), per msprof-analyze's vector check; empty without PMU ratios."""
    npu = _facts(t)
    vector = [o for o in npu.ops if o.core in ("AI_VECTOR_CORE", "MIX_AIV") and o.count
              and "aiv_vec_ratio" in o.ratios]
    total = _op_time(t)
    by_type: dict[str, float] = defaultdict(float)
    for o in vector:
        by_type[o.type] += o.total_us
    chosen = {k for k, us in by_type.items()
              if total and (ratio(us, total, 0.0) >= VECTOR_SHARE or us >= VECTOR_MIN_US)}
    merged: dict[tuple[str, str, str], list[NpuOp]] = defaultdict(list)
    for o in vector:
        if o.type in chosen:
            merged[(o.name, o.input_shapes, o.output_shapes)].append(o)
    rooms: list[VectorOp] = []
    bounds: list[VectorOp] = []
    for (name, shape, _), ops in merged.items():
        runs = sum(o.count for o in ops)
        vec, mte2, mte3 = (sum(o.ratios.get(f"aiv_{k}_ratio", 0.0) for o in ops) / runs
                           for k in ("vec", "mte2", "mte3"))
        bound = ("vec_mte2_mte3" if vec + mte2 + mte3 >= VECTOR_TOTAL else
                 "mte2" if mte2 >= VECTOR_BOUND else "mte3" if mte3 >= VECTOR_BOUND else
                 "vec" if vec >= VECTOR_BOUND else None)
        room = 0.0 if bound else max(VECTOR_BOUND - vec, VECTOR_BOUND - mte2, VECTOR_BOUND - mte3)
        v = VectorOp(name, shape, ops[-1].input_dtypes, vec, mte2, mte3,
                     sum(o.total_us for o in ops), runs, bound, room)
        (bounds if bound else rooms).append(v)
    rooms.sort(key=lambda v: (-round(v.room, 4), v.name, v.shape))
    bounds.sort(key=lambda v: (-v.us, v.name, v.shape))
    return rooms[:top], bounds[:top]


def vector_perf(result: Analysis) -> list[Finding]:
    found = [(t, r, b) for t in _captures(result) for r, b in [vector_ops(t)] if r or b]
    if not found:
        return []
    t, rooms, bounds = max(found, key=lambda f: (max((v.room for v in f[1]), default=0.0),
                                                 -rank_order(f[0].rank)[1]))
    parts = []
    if rooms:
        parts.append(f"{len(rooms)} with up to {rooms[0].room:.1%} room to optimise "
                     f"({_cut(rooms[0].name, 30)})")
    if bounds:
        parts.append(f"{len(bounds)} bound ({bounds[0].bound}: {_cut(bounds[0].name, 30)} "
                     f"{bounds[0].us:,.0f} us)")
    lines = [f"room {v.room:5.1%}  {_cut(v.name)} [{_cut(v.shape, 40)}]: vec {v.vec:.2f} "
             f"mte2 {v.mte2:.2f} mte3 {v.mte3:.2f}, {v.runs} run{'s' * (v.runs != 1)} "
             f"{v.us:,.1f} us" for v in rooms]
    lines += [f"bound {v.bound}  {_cut(v.name)} [{_cut(v.shape, 40)}]: vec {v.vec:.2f} "
              f"mte2 {v.mte2:.2f} mte3 {v.mte3:.2f}, {v.us:,.1f} us" for v in bounds]
    lines += [f"rank {rank_label(o.rank)}: {len(r)} with up to "
              f"{max((v.room for v in r), default=0.0):.1%} room, {len(b)} bound"
              for o, r, b in found if o is not t]
    traces = [f[0] for f in found]
    return [_finding(
        rule="npu.vector_ops",
        title=f"Vector operators on rank {rank_label(t.rank)}: {'; '.join(parts)}",
        detail="\n".join(lines),
        suggestion="Look at these operators' shapes and formats (TransData runs where a format "
                   "changes: keep tensors in one format); bound ones move more data than they "
                   "compute: fuse them with their neighbours",
        severity="low", source=_source(result, traces, "ops"), ranks=_ranks(traces))]


#: operator_bound_checker.py: an operator is bound by a unit whose ratio exceeds this.
BOUND_RATIO = 0.8
NO_BOUND_MIN_US = 20.0
#: The ratios of the units each core has (msprof-analyze reads aic_ ones for vector operators
#: too, where they are 0: it calls operators bound on aiv_mte2 unbound).
CORE_RATIOS: dict[str, tuple[str, ...]] = {
    "AI_CORE": ("aic_mac_ratio", "aic_scalar_ratio", "aic_mte1_ratio", "aic_mte2_ratio"),
    "AI_VECTOR_CORE": ("aiv_vec_ratio", "aiv_scalar_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio"),
}
CORE_RATIOS["MIX_AIC"] = CORE_RATIOS["MIX_AIV"] = (*CORE_RATIOS["AI_CORE"],
                                                   *CORE_RATIOS["AI_VECTOR_CORE"])


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
    for o in _facts(t).ops:
        ratios = list(unit_ratios(o).values()) if o.count else []
        if any(ratios) and not any(r > BOUND_RATIO for r in ratios):
            ops.append(o)
    if not ops or max(o.max_us for o in ops) <= NO_BOUND_MIN_US:
        return None
    return NoBound(ops, sum(o.count for o in ops), sum(o.total_us for o in ops))


def no_bound_ops(result: Analysis) -> list[Finding]:
    found = [(t, nb) for t in _captures(result) if (nb := no_bound(t)) is not None]
    if not found:
        return []
    t, nb = max(found, key=lambda f: f[1].us / _steps(f[0]))
    traces = [f[0] for f in found]
    per_step = nb.us / _steps(t) / MS
    lines = [f"rank {rank_label(o.rank)}: {n.runs} runs, {n.us / _steps(o) / MS:,.2f} ms per "
             "step" for o, n in found]
    return [_finding(
        rule="npu.no_bound",
        title=f"{nb.runs} operator runs are bound by no unit (no mte, cube, vector or scalar "
              f"ratio over {BOUND_RATIO:.0%}): {per_step:,.2f} ms per step on rank "
              f"{rank_label(t.rank)}",
        detail="\n".join(["Longest first: " + ", ".join(nb.types()), *lines]),
        suggestion="Tune these operators with AOE (aoe --job_type=2 ...) or look for small "
                   "shapes and launch gaps: their units mostly wait",
        severity="low", source=_source(result, traces, "ops"), ranks=_ranks(traces))]


#: aicpu_checker.py: AI CPU operators longer than this are reported.
AICPU_MIN_US = 20.0


def aicpu(t: TraceData) -> list[NpuOp]:
    """The operators that ran on the AI CPU longer than ``AICPU_MIN_US``, longest first."""
    ops = [o for o in _facts(t).ops if o.core == "AI_CPU" and o.max_us > AICPU_MIN_US]
    return sorted(ops, key=lambda o: (-o.max_us, o.name))


def aicpu_ops(result: Analysis) -> list[Finding]:
    found = [(t, ops) for t in _captures(result) if (ops := aicpu(t))]
    if not found:
        return []
    per_step = {id(t): sum(o.total_us for o in _facts(t).ops if o.core == "AI_CPU")
                / _steps(t) / MS for t, _ in found}
    t, ops = max(found, key=lambda f: per_step[id(f[0])])
    traces = [f[0] for f in found]
    names = ", ".join(f"{o.name} {o.max_us:,.1f} us" for o in ops[:3])
    lines = [f"rank {rank_label(r.rank)} {o.name} ({o.type}): {o.count} run"
             f"{'s' * (o.count != 1)}, longest {o.max_us:,.1f} us; {o.input_dtypes or '?'} -> "
             f"{o.output_dtypes or '?'}" for r, rops in found for o in rops]
    worst = per_step[id(t)]
    return [_finding(
        rule="npu.aicpu",
        title=f"{len(ops)} operator{'s' * (len(ops) != 1)} ran on the AI CPU for over "
              f"{AICPU_MIN_US:.0f} us on rank {rank_label(t.rank)}: {names}",
        detail="\n".join(lines),
        suggestion="Avoid AI CPU operators: use data types the AI Core handles (e.g. int32 or "
                   "float instead of int64/uint64 or double) so the operator runs there",
        severity="medium" if worst >= 1.0 else "low", impact_ms=worst,
        source=_source(result, traces, "ops"), ranks=_ranks(traces))]


# ------------------------------------------------------------------------------ affinity APIs

#: timeline_fusion_ops.yaml: optimizers with a fused NPU version.
FUSED_OPTIMIZERS = {name: f"torch_npu.optim.NpuFused{name}" for name in (
    "AdamW", "SGD", "Adadelta", "Lamb", "AdamP", "BertAdam", "RMSprop", "RMSpropTF", "Adam")}
_OPTIMIZER = re.compile(r"^Optimizer\.step#(\w+)\.step$")


def affinity(t: TraceData) -> dict[str, tuple[str, int, float]]:
    """Optimizer steps with a fused replacement: host op -> (replacement, calls, self us)."""
    out = {}
    for name, tally in t.ops.items():
        m = _OPTIMIZER.match(name)
        if m and m.group(1) in FUSED_OPTIMIZERS:
            out[name] = (FUSED_OPTIMIZERS[m.group(1)], tally.count, tally.total)
    return out


def affinity_apis(result: Analysis) -> list[Finding]:
    found: dict[str, list[tuple[TraceData, int, float]]] = defaultdict(list)
    fused: dict[str, str] = {}
    for t in _captures(result):
        for op, (api, calls, us) in affinity(t).items():
            found[op].append((t, calls, us))
            fused[op] = api
    out = []
    for op, seen in sorted(found.items()):
        traces = [t for t, _, _ in seen]
        calls = sum(c for _, c, _ in seen)
        out.append(_finding(
            rule="npu.affinity_api",
            title=f"{op} has a fused NPU version: {fused[op]} ({calls} call"
                  f"{'s' * (calls != 1)} on {_on(traces)})",
            detail="\n".join(f"rank {rank_label(t.rank)}: {c} call{'s' * (c != 1)}, "
                             f"{us / MS:,.2f} ms self time" for t, c, us in seen),
            suggestion=f"Replace the optimizer with {fused[op]} (same arguments): it updates "
                       "all parameters in a few fused kernels",
            severity="low", source=_source(result, traces, "host"), ranks=_ranks(traces)))
    return out


# ------------------------------------------------------------------------------ across ranks

#: slow_rank_analyzer.py / slow_link_analyzer.py: a spread (max - min) over this share of the
#: mean step (of the mean bandwidth) is reported.
SPREAD = 0.05
_PARTS = (("Computing", "compute"), ("Communication", "exposed communication"),
          ("Free", "free"))


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


def rank_spread(result: Analysis) -> list[RankSpread]:
    """Per step on two or more ranks: the device breakdown of each rank."""
    by_step: dict[int | None, dict[int | None, tuple[float, float, float]]] = defaultdict(dict)
    for t in _captures(result):
        for d in t.device:
            if d.stage is not None:
                continue
            exposed = d.comm_exposed_ms if d.comm_exposed_ms is not None else (
                d.comm_ms - d.overlap_ms)
            by_step[d.step][t.rank] = (d.compute_ms, exposed, d.idle_ms)
    out = []
    for step, ranks in sorted(by_step.items(), key=lambda kv: rank_order(kv[0])):
        if len(ranks) < 2:
            continue
        parts = {name: {r: v[i] for r, v in ranks.items()} for i, (name, _) in enumerate(_PARTS)}
        out.append(RankSpread(step, parts, sum(sum(v) for v in ranks.values()) / len(ranks)))
    return out


def slow_rank(result: Analysis) -> list[Finding]:
    worst: tuple[float, RankSpread, list[str]] | None = None
    for s in rank_spread(result):
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
        lines.append(f"{words[p]}: {g:,.1f} ms apart, rank {rank_label(h)} "
                     f"{s.parts[p][h]:,.1f} ms, rank {rank_label(low)} {s.parts[p][low]:,.1f} ms")
    lines.append("each rank: " + "; ".join(
        f"{rank_label(r)} " + "/".join(f"{s.parts[p][r]:,.1f}" for p, _ in _PARTS)
        for r in sorted(s.parts["Computing"], key=rank_order)) + " ms (compute/exposed "
        "communication/free)")
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
    return [_finding(
        rule="npu.slow_rank",
        title=f"Ranks differ by {gap:,.1f} ms in {words[first]} at step {s.step} (rank "
              f"{rank_label(hi)} {s.parts[first][hi]:,.1f} ms, rank {rank_label(lo)} "
              f"{s.parts[first][lo]:,.1f} ms; {ratio(gap, s.mean_ms, 0.0):.0%} of the step)",
        detail="\n".join(lines), suggestion="; ".join(advice[p] for p in flagged),
        severity="high" if ratio(top, s.mean_ms, 0.0) > 4 * SPREAD else "medium", impact_ms=top,
        source=_breakdown_source(result), ranks=ranks)]


def _breakdown_source(result: Analysis) -> str:
    """Where torch_npu's step breakdown is: step_trace_time.csv of a text export, StepTraceTime
    of a db (each reader falls back on the overlap analysis where those are missing)."""
    traces = [t for t in _captures(result) if any(d.stage is None for d in t.device)]
    names = sorted({"StepTraceTime" if t.meta.get("export") == "db" else "step_trace_time.csv"
                    for t in traces})
    return f"{', '.join(names)} of {', '.join(_folder(result, t) for t in traces)}"


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


def link_spread(result: Analysis) -> list[LinkSpread]:
    """SDMA and RDMA bandwidth of each rank and step: what its operators moved over what time
    (msprof-analyze's slow link figures), on two or more ranks."""
    out = []
    for link in ("SDMA", "RDMA"):
        moved: dict[tuple[int | None, int | None], list[float]] = defaultdict(lambda: [0.0, 0.0])
        for t in _captures(result):
            for h in _facts(t).hccl:
                mb, ms = getattr(h, f"{link.lower()}_mb"), getattr(h, f"{link.lower()}_ms")
                if mb is not None and ms is not None:
                    moved[(h.step, t.rank)][0] += mb
                    moved[(h.step, t.rank)][1] += ms
        gbps = {k: q for k, (mb, ms) in moved.items()
                if mb >= 0 and (q := ratio(mb, ms, None)) is not None}
        if len({r for _, r in gbps}) >= 2:
            out.append(LinkSpread(link, gbps))
    return out


def slow_link(result: Analysis) -> list[Finding]:
    out = []
    for s in link_spread(result):
        if s.spread <= SPREAD:
            continue
        lo = min(s.gbps, key=lambda k: s.gbps[k])
        hi = max(s.gbps, key=lambda k: s.gbps[k])
        out.append(_finding(
            rule="npu.slow_link",
            title=f"{s.link} bandwidth differs across ranks: {s.gbps[lo]:.2f}-{s.gbps[hi]:.2f} "
                  f"GB/s (mean {s.mean:.2f}, {s.spread:.0%} apart); slowest rank "
                  f"{rank_label(lo[1])} at step {lo[0]}",
            detail="\n".join(f"rank {rank_label(r)} step {st}: {v:.3f} GB/s" for (st, r), v in
                             sorted(s.gbps.items(), key=lambda kv: (rank_order(kv[0][1]),
                                                                    rank_order(kv[0][0])))),
            suggestion=f"Check the slowest rank's {s.link} links (cabling, link errors, "
                       "other jobs on the same links) and whether its operators move smaller "
                       "pieces",
            severity="medium", source=_source(result, _captures(result), "hccl"),
            ranks=sorted({r for _, r in s.gbps}, key=rank_order)))
    return out


# ------------------------------------------------------------------------------ small packets

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
        for h in _facts(t).hccl:
            mb = getattr(h, f"{link.lower()}_mb")
            if mb:
                p.ops += 1
                if mb < limit:
                    p.small += 1
                    p.small_ms += getattr(h, f"{link.lower()}_ms") or 0.0
        if p.ops:
            out.append(p)
    return out


def small_packets(result: Analysis) -> list[Finding]:
    out = []
    for link, (limit, most) in PACKET_LIMITS.items():
        found = [(t, p) for t in _captures(result) for p in packets(t)
                 if p.link == link and p.ratio > most]
        if not found:
            continue
        t, p = max(found, key=lambda f: (f[1].ratio, f[1].small_ms))
        traces = [f[0] for f in found]
        out.append(_finding(
            rule="npu.packet",
            title=f"{p.small} of {p.ops} {link} communications on rank {rank_label(t.rank)} "
                  f"move under {limit:g} MB ({p.ratio:.0%}, {p.small_ms:,.3f} ms)",
            detail="\n".join(f"rank {rank_label(o.rank)}: {q.small} of {q.ops} under {limit:g} "
                             f"MB, {q.small_ms:,.3f} ms over {_steps(o)} step"
                             f"{'s' * (_steps(o) != 1)}" for o, q in found),
            suggestion="Fewer, larger transfers: a larger batch or gradient accumulation for "
                       "data parallelism, ZeRO-1/2 rather than 3 where memory allows, fused "
                       "optimizers and operators",
            severity="low", impact_ms=max(q.small_ms / _steps(o) for o, q in found),
            source=_source(result, traces, "hccl"), ranks=_ranks(traces)))
    return out


# ------------------------------------------------------------------------------ host side

#: A host that waits on the device for this share of its step is reported (ours).
HOST_WAIT_SHARE = 0.1
HOST_WAIT_MIN_MS = 1.0
#: Host operators that block on the device (tensor.item(), .cpu(), printing a device tensor).
BLOCKING_OPS = ("aten::_local_scalar_dense", "aten::item", "aten::_to_copy", "aten::copy_")
COMPILE_APIS = ("aclopCompileAndExecute", "opCompile")
COMPILE_MIN_MS = 1.0
#: synchronize.yaml: synchronizations right after a launch, per launch, above this.
LAUNCH_SYNC_RATIO = 0.5


@dataclass
class HostCalls:
    """CANN API calls of one kind: per API (calls, total us, longest us) over the capture,
    its steps and its host step (ms)."""

    apis: dict[str, tuple[int, float, float | None]]
    steps: int
    step_ms: float | None

    @property
    def us(self) -> float:
        return sum(us for _, us, _ in self.apis.values())

    @property
    def per_step_ms(self) -> float:
        return self.us / self.steps / MS


def _calls(t: TraceData, pick: Any) -> HostCalls | None:
    longest = _facts(t).api_max_us
    apis: dict[str, list[Any]] = {}
    for name, tally in t.runtime.items():
        api = api_name(name)
        if pick(api):
            slot = apis.setdefault(api, [0, 0.0, longest.get(api)])
            slot[0] += tally.count
            slot[1] += tally.total
    if not apis:
        return None
    return HostCalls({k: (v[0], v[1], v[2]) for k, v in apis.items()}, _steps(t),
                     _host_step_ms(t))


def host_waits(t: TraceData) -> HostCalls | None:
    """The ACL calls that block the host on a stream (aclrtSynchronizeStream*)."""
    return _calls(t, is_sync)


def compile_calls(t: TraceData) -> HostCalls | None:
    """aclopCompileAndExecute and opCompile: operators compiled (and run) at run time."""
    return _calls(t, lambda api: api in COMPILE_APIS)


def _api_lines(calls: HostCalls) -> list[str]:
    return [f"{api}: {n} call{'s' * (n != 1)}, {us / MS:,.1f} ms"
            + (f", longest {most / MS:,.1f} ms" if most is not None else "")
            for api, (n, us, most) in sorted(calls.apis.items(), key=lambda kv: -kv[1][1])]


def host_wait(result: Analysis) -> list[Finding]:
    found = []
    for t in _captures(result):
        w = host_waits(t)
        if (w is not None and w.step_ms and w.per_step_ms >= HOST_WAIT_MIN_MS
                and ratio(w.per_step_ms, w.step_ms, 0.0) >= HOST_WAIT_SHARE):
            found.append((t, w))
    if not found:
        return []
    t, w = max(found, key=lambda f: ratio(f[1].per_step_ms, f[1].step_ms, 0.0))
    assert w.step_ms
    share = ratio(w.per_step_ms, w.step_ms, 0.0)
    api, (n, _, most) = max(w.apis.items(), key=lambda kv: kv[1][1])
    longest = f", longest {most / MS:,.1f} ms" if most is not None else ""
    lines = []
    for o, ow in found:
        lines.append(f"rank {rank_label(o.rank)} ({ow.per_step_ms:,.1f} ms of a "
                     f"{ow.step_ms or 0:,.1f} ms step): " + "; ".join(_api_lines(ow)))
        blockers = [(op, o.ops[op]) for op in BLOCKING_OPS if op in o.ops]
        if blockers:
            lines.append(f"  host operators that wait on rank {rank_label(o.rank)}: " + ", ".join(
                f"{op} {tl.count} calls {tl.total / MS:,.1f} ms self" for op, tl in blockers))
    if len(found) > 1:
        lines.append(f"all ranks: {sum(ow.us for _, ow in found) / MS:,.1f} ms")
    traces = [f[0] for f in found]
    return [_finding(
        rule="npu.host_wait",
        title=f"The host waited on the device {w.per_step_ms:,.1f} ms per step on rank "
              f"{rank_label(t.rank)} ({share:.0%} of its {w.step_ms:,.1f} ms step): {api} "
              f"{n} call{'s' * (n != 1)}{longest}",
        detail="\n".join(lines),
        suggestion="Keep the host ahead of the device: avoid tensor.item(), .cpu() and "
                   "printing device tensors inside the step (aten::_local_scalar_dense), or "
                   "move them after the next step's launches",
        severity="high" if share >= 0.5 else "medium",
        source=_source(result, traces, "api"), ranks=_ranks(traces))]


def runtime_compile(result: Analysis) -> list[Finding]:
    found = [(t, c) for t in _captures(result) if (c := compile_calls(t)) is not None
             and "aclopCompileAndExecute" in c.apis and _compile_ms(c) >= COMPILE_MIN_MS]
    if not found:
        return []
    t, c = max(found, key=lambda f: _compile_ms(f[1]))
    n = c.apis["aclopCompileAndExecute"][0]
    per_step = _compile_ms(c)
    of = (f" ({share:.0%} of its {c.step_ms:,.1f} ms step)"
          if (share := ratio(per_step, c.step_ms, None)) is not None else "")
    inner = c.apis.get("opCompile")
    compiling = f"; opCompile {inner[1] / c.steps / MS:,.1f} ms of it" if inner else ""
    lines = [f"rank {rank_label(o.rank)}: " + "; ".join(_api_lines(oc)) for o, oc in found]
    if len(found) > 1:
        every = sum(oc.apis["aclopCompileAndExecute"][1] for _, oc in found) / MS
        lines.append(f"all ranks: aclopCompileAndExecute {every:,.1f} ms")
    traces = [f[0] for f in found]
    return [_finding(
        rule="npu.runtime_compile",
        title=f"Operators compiled at run time on rank {rank_label(t.rank)}: "
              f"aclopCompileAndExecute {per_step:,.1f} ms per step in {n} call"
              f"{'s' * (n != 1)}{of}{compiling}",
        detail="\n".join(lines),
        suggestion=f"Disable JIT compilation: {COMPILE_FIX}; where shapes stay dynamic, "
                   "HOST_CACHE_CAPACITY and ACLNN_CACHE_LIMIT keep compiled operators",
        severity="medium" if ratio(per_step, c.step_ms, 0.0) >= 0.05 else "low",
        impact_ms=per_step, source=_source(result, traces, "api"), ranks=_ranks(traces))]


def _compile_ms(c: HostCalls) -> float:
    """aclopCompileAndExecute per step (opCompile runs inside it)."""
    return c.apis.get("aclopCompileAndExecute", (0, 0.0, None))[1] / c.steps / MS


def launch_blocking(t: TraceData) -> tuple[int, int, int] | None:
    """(node launches, stream synchronizations, synchronizations right after a launch)."""
    order = _facts(t).launch_sync
    return (order[0], order[1], order[2]) if order and len(order) == 3 else None


def synchronize_stream(result: Analysis) -> list[Finding]:
    out = []
    for t in _captures(result):
        ls = launch_blocking(t)
        if ls is None or not ls[0] or ls[2] / ls[0] <= LAUNCH_SYNC_RATIO:
            continue
        launches, syncs, after = ls
        out.append(_finding(
            rule="npu.synchronize_stream",
            title=f"The host synchronizes after {after / launches:.0%} of its {launches} "
                  f"operator launches on rank {rank_label(t.rank)} ({syncs} stream "
                  "synchronizations): operators run one at a time",
            detail=f"{after} of {syncs} aclrtSynchronizeStream calls come right after a node "
                   "launch",
            suggestion="Check ASCEND_LAUNCH_BLOCKING: if it is 1, unset it and restart the "
                       "job", severity="high", source=_source(result, [t], "order"),
            ranks=[t.rank]))
    return out


#: This family's rules, in the order they run.
RULES: list[Rule] = [env_vars, byte_alignment, dynamic_shapes, vector_perf, no_bound_ops,
                     aicpu_ops, affinity_apis, slow_rank, slow_link, small_packets, host_wait,
                     runtime_compile, synchronize_stream]
