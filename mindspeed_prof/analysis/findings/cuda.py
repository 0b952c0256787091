"""Findings rules: CUDA device time, the questions HTA (Holistic Trace Analysis) asks of a
Kineto trace, answered per rank and step from what the readers keep.

- ``idle_time``: the GPU idles a share of the step; its busiest stream's idle time split as
  HTA's ``get_idle_time_breakdown`` splits it (host wait, kernel wait, other);
- ``launch_overhead``: many kernels shorter than their launch call (HTA's
  ``get_cuda_kernel_launch_stats``): the host spends longer launching them than the GPU runs
  them;
- ``exposed_comm``: communication kernels (NCCL, DeepEP, NVSHMEM... by ``readers.classify``)
  not overlapped with compute, a share of the step.

Each fires where its time per step is over the noise floor (``stragglers.noise_floor``: the
``--noise-ms`` floor or 1% of the step) and ``FIRE_SHARE`` of the step; severity grows with the
share (``severity``). They read the captures the device verdict reads (``device_scope``):
warmup steps are left out unless ``include_warmup``; where no capture has steps, each capture
is one whole, its own unit, named by its file; captures without steps beside captures with
steps are left out (the verdict names them), never averaged with steps.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.device_scope import parts, scope
from mindspeed_prof.analysis.findings.common import files_text, severity, source_label
from mindspeed_prof.analysis.findings.finding import Finding, Rule
from mindspeed_prof.analysis.readers.device.streams import (
    KERNEL_WAIT_US,
    LATE_US,
    PROMPT_US,
    SLOW_CALL_US,
    TINY_US,
)
from mindspeed_prof.analysis.readers.labels import rank_label, rank_order
from mindspeed_prof.analysis.readers.model import DeviceRow, LaunchStats, StreamIdle, TraceData
from mindspeed_prof.analysis.readers.ratio import ratio
from mindspeed_prof.analysis.stragglers import noise_floor

if TYPE_CHECKING:
    from mindspeed_prof.analysis.result import Analysis

__all__ = ["FIRE_SHARE", "RULES", "exposed_comm", "idle_time", "launch_overhead"]

#: A finding needs its time per step to be at least this share of the step (and the floor).
FIRE_SHARE = 0.05
#: Shares of the step at which a finding is medium, then high.
MEDIUM_SHARE, HIGH_SHARE = 0.10, 0.25
#: Ranks listed one line each in a finding's detail.
DETAIL_RANKS = 4


@dataclass
class _Rank:
    """One rank's (and source's) CUDA facts over its counted steps; or one capture's without
    steps (``capture``: its file)."""

    rank: int | None
    source: str
    capture: str = ""
    traces: list[TraceData] = field(default_factory=list)
    steps: list[DeviceRow] = field(default_factory=list)  # whole-step rows
    stages: list[DeviceRow] = field(default_factory=list)
    idle: list[StreamIdle] = field(default_factory=list)
    launches: list[LaunchStats] = field(default_factory=list)

    @property
    def label(self) -> str:
        own = rank_label(self.rank, self.source)
        return f"{own} ({self.capture}, no steps)" if self.capture else own

    @property
    def n(self) -> int:
        return max(len(self.steps), 1)

    @property
    def span_ms(self) -> float:
        """The mean step on the device (its window)."""
        return sum(r.span_ms or 0.0 for r in self.steps) / self.n

    @property
    def per(self) -> str:
        return "per step" if any(r.step is not None for r in self.steps) else "in the capture"


def _ranks(result: Analysis) -> list[_Rank]:
    """Per rank and source, the CUDA rows of the counted steps of the captures the verdict
    reads (``device_scope.scope``): warmup steps left out (unless ``include_warmup``); where
    no capture has steps, each capture's one whole row, a unit of its own."""
    skip = set() if result.include_warmup else result._warmup()
    within = scope(result)
    out: dict[tuple[int | None, str, str], _Rank] = {}
    for t in within.traces:
        if all(r.span_ms is None for r in t.device):
            continue  # no CUDA breakdown (torch_npu rows have no device window)
        source = source_label(t)
        steps = {r.step for r in t.device if r.step is not None and r.stage is None}
        kept = (
            {s for s in steps if (t.rank, source, s) not in skip}
            if within.per == "step"
            else {None}
        )
        capture = result.shown(str(t.path)) if within.per == "capture" else ""
        who = out.get((t.rank, source, capture))
        if who is None:
            who = out[(t.rank, source, capture)] = _Rank(t.rank, source, capture)
        who.traces.append(t)
        for row in t.device:
            if row.span_ms is not None and row.step in kept:
                (who.steps if row.stage is None else who.stages).append(row)
        who.idle += [r for r in t.stream_idle if r.step in kept]
        who.launches += [r for r in t.launch_stats if r.step in kept]
    return sorted(
        (w for w in out.values() if w.steps),
        key=lambda w: (rank_order(w.rank), w.source, w.capture),
    )


def _fires(result: Analysis, ms: float, span: float) -> bool:
    """Over the floor and ``FIRE_SHARE`` of a step it fits in (a part longer than its step is
    a broken row, never a finding)."""
    return (
        ratio(ms, span, 0.0) >= FIRE_SHARE
        and ms <= span
        and ms >= noise_floor(result.noise_ms, span)
    )


def _ranks_said(hits: list[tuple[float, _Rank]]) -> str:
    """``rank 0`` or ``rank 0 (of 3 ranks)``: the rank shown first, and how many fired."""
    worst = hits[0][1]
    return f"rank {worst.label}" + (f" (of {len(hits)} ranks)" if len(hits) > 1 else "")


def _rank_list(hits: list[tuple[float, _Rank]]) -> list[int | None]:
    return sorted({w.rank for _, w in hits}, key=rank_order)


def _more(lines: list[str], hits: list[tuple[float, _Rank]]) -> list[str]:
    if len(hits) > DETAIL_RANKS:
        lines.append(f"... and {len(hits) - DETAIL_RANKS} more ranks")
    return lines


# -- idle time ------------------------------------------------------------------------------

_IDLE_KINDS = ("host wait", "kernel wait", "other")
_IDLE_ADVICE = {
    "host wait": "the GPU waits for the host to launch work: find what the CPU does between "
    "launches (input pipeline: more DataLoader workers, pin_memory, non_blocking "
    "copies; Python overhead: CUDA graphs or torch.compile; .item() or other "
    "syncs in the loop)",
    "kernel wait": "back-to-back small kernels: fuse them (torch.compile, fused optimizers "
    "and kernels) or capture them in a CUDA graph",
    "other": "the stream waits on other work (events, NCCL, copies on other streams): "
    "overlap communication and copies with compute, or reorder the work on the "
    "busiest stream",
}
#: The busiest stream's gaps explain the device's idle time when they add up to at least this
#: share of it; else the split is of every stream's gaps together.
EXPLAINS = 0.5


@dataclass
class _Split:
    """Idle time of one rank: the device's, and gaps split into host wait, kernel wait and
    other (ms per step) on its busiest stream or, where those do not explain the device's
    idle time, on all its streams."""

    idle_ms: float
    stream: str  # the busiest stream's name
    ops: int  # its ops per step
    busiest: list[float]
    every: list[float]

    @property
    def explained(self) -> bool:
        return sum(self.busiest) >= EXPLAINS * self.idle_ms

    @property
    def parts(self) -> list[float]:
        return self.busiest if self.explained else self.every

    @property
    def where(self) -> str:
        return f"stream {self.stream}'s gaps" if self.explained else "every stream's gaps"


def _split(who: _Rank, idle_ms: float) -> _Split | None:
    per: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * 5)
    for r in who.idle:
        v = per[(r.device, r.stream)]
        v[0] += r.busy_ms
        v[1] += r.host_wait_ms
        v[2] += r.kernel_wait_ms
        v[3] += r.other_ms
        v[4] += r.ops
    if not per:
        return None
    (device, stream), v = max(per.items(), key=lambda kv: (kv[1][0], kv[0]))
    name = stream if len({d for d, _ in per}) == 1 else f"{stream} of device {device}"
    every = [sum(x[k] for x in per.values()) / who.n for k in (1, 2, 3)]
    return _Split(idle_ms, name, round(v[4] / who.n), [x / who.n for x in v[1:4]], every)


def _of(who: _Rank) -> str:
    return "the step" if who.per == "per step" else "the capture"


def _per(who: _Rank) -> str:
    return " per step" if who.per == "per step" else ""


def idle_time(result: Analysis) -> list[Finding]:
    """The GPU idle a share of the step, and why: its busiest stream's gaps split as HTA's
    idle time breakdown splits them."""
    hits: list[tuple[float, _Rank, _Split]] = []
    for who in _ranks(result):
        idle = sum(r.idle_ms for r in who.steps) / who.n
        split = _split(who, idle)
        if split is not None and _fires(result, idle, who.span_ms):
            hits.append((idle, who, split))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], rank_order(h[1].rank)))
    idle, who, top = hits[0]
    share = ratio(idle, who.span_ms, 0.0)
    parts = top.parts
    kind = _IDLE_KINDS[max(range(3), key=lambda k: (parts[k], -k))]
    gaps = sum(parts)
    said = [(h[0], h[1]) for h in hits]
    lines = []
    for ms, w, sp in hits[:DETAIL_RANKS]:
        b, e = sp.busiest, sp.every
        lines.append(
            f"rank {w.label}: idle {ms:,.1f} of {w.span_ms:,.1f} ms {w.per}; "
            f"stream {sp.stream} (busiest, {sp.ops:,} ops): host wait {b[0]:,.1f}, "
            f"kernel wait {b[1]:,.1f}, other {b[2]:,.1f} ms; every stream: "
            f"{e[0]:,.1f}, {e[1]:,.1f}, {e[2]:,.1f} ms"
        )
    lines.append(
        f"HTA's idle time breakdown, per stream: host wait, an op launched after the "
        f"op before it ended; kernel wait, a gap under {KERNEL_WAIT_US:.0f} us; "
        "other, the rest"
    )
    return [
        Finding(
            rule="cuda.idle_time",
            title=f"GPU idle {share:.0%} of {_of(who)} ({idle:,.1f} ms{_per(who)}) on "
            f"{_ranks_said(said)}: mostly {kind} "
            f"({ratio(parts[_IDLE_KINDS.index(kind)], gaps, 0.0):.0%} of {top.where})",
            detail="\n".join(_more(lines, said)),
            suggestion=_IDLE_ADVICE[kind][0].upper() + _IDLE_ADVICE[kind][1:] + ".",
            severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
            impact_ms=idle,
            source=files_text(
                result,
                [t for _, w, _ in hits for t in w.traces],
                "Kineto device ops and their launch calls",
            ),
            ranks=_rank_list(said),
        )
    ]


# -- launch overhead ------------------------------------------------------------------------

_LAUNCH_FIELDS = (
    "launches",
    "cpu_ms",
    "gpu_ms",
    "short",
    "short_cpu_ms",
    "short_gpu_ms",
    "tiny",
    "delay_ms",
    "slow_calls",
    "late",
    "starved",
    "starved_cpu_ms",
    "starved_gpu_ms",
)


def launch_overhead(result: Analysis) -> list[Finding]:
    """Kernels shorter than their launch call that the GPU ran as soon as the call returned:
    it waited on the host's launching longer than it ran them (HTA's kernel launch
    statistics). Kernels that queued behind earlier work cost nothing to launch."""
    hits: list[tuple[float, _Rank, dict[str, float]]] = []
    for who in _ranks(result):
        if not who.launches:
            continue
        v = {f: sum(float(getattr(s, f)) for s in who.launches) / who.n for f in _LAUNCH_FIELDS}
        overhead = v["starved_cpu_ms"] - v["starved_gpu_ms"]
        if _fires(result, overhead, who.span_ms):
            hits.append((overhead, who, v))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], rank_order(h[1].rank)))
    overhead, who, v = hits[0]
    share = ratio(overhead, who.span_ms, 0.0)
    said = [(h[0], h[1]) for h in hits]
    lines = []
    for _, w, x in hits[:DETAIL_RANKS]:
        mean = x["delay_ms"] / x["launches"] * 1e3 if x["launches"] else 0.0
        lines.append(
            f"rank {w.label}: {x['launches']:,.0f} launches {w.per} (calls {x['cpu_ms']:,.1f} "
            f"ms, kernels {x['gpu_ms']:,.1f} ms); {x['short']:,.0f} shorter than their call, "
            f"{x['starved']:,.0f} of them run at once (calls {x['starved_cpu_ms']:,.1f} ms, "
            f"kernels {x['starved_gpu_ms']:,.1f} ms); {x['tiny']:,.0f} under {TINY_US:.0f} us; "
            f"launch delay {mean:,.1f} us on average, {x['late']:,.0f} over {LATE_US:.0f} us; "
            f"{x['slow_calls']:,.0f} calls over {SLOW_CALL_US:.0f} us"
        )
    lines.append(
        "HTA's kernel launch statistics: each device op against its launch call "
        "(cudaLaunchKernel, cudaMemcpyAsync...); its launch delay is its start less "
        f"the call's end; run at once: within {PROMPT_US:.0f} us of it"
    )
    per = _per(who)
    return [
        Finding(
            rule="cuda.launch_overhead",
            title=f"{v['starved']:,.0f} of {v['launches']:,.0f} kernels{per} are shorter than "
            f"their launch call and run as soon as it returns on {_ranks_said(said)}: the "
            f"GPU waits {overhead:,.1f} ms{per} on launches ({share:.0%} of {_of(who)})",
            detail="\n".join(_more(lines, said)),
            suggestion="Launch fewer, larger kernels: capture the step in a CUDA graph "
            "(torch.cuda.graphs, torch.compile mode='reduce-overhead'), fuse small ops "
            "(torch.compile, fused or foreach optimizers), or give each kernel more work "
            "(larger batches or micro-batches).",
            severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
            impact_ms=overhead,
            source=files_text(
                result,
                [t for _, w, _ in hits for t in w.traces],
                "Kineto device ops and their launch calls",
            ),
            ranks=_rank_list(said),
        )
    ]


# -- exposed communication ------------------------------------------------------------------


def _exposed(rows: list[DeviceRow]) -> float:
    return sum(parts(r)["communication"] for r in rows)


def exposed_comm(result: Analysis) -> list[Finding]:
    """Communication time on the device that no compute overlaps, a share of the step (CUDA
    rows; torch_npu's exposed communication is the npu rules')."""
    hits: list[tuple[float, _Rank, float, str]] = []
    for who in _ranks(result):
        rows = [r for r in who.steps if r.comm_exposed_ms is None]
        exposed = _exposed(rows) / who.n
        if not rows or not _fires(result, exposed, who.span_ms):
            continue
        comm = sum(max(r.comm_ms, 0.0) for r in rows) / who.n
        by_stage: dict[str, float] = defaultdict(float)
        for r in who.stages:
            if r.stage is not None and r.comm_exposed_ms is None:
                by_stage[r.stage] += parts(r)["communication"]
        top = max(by_stage.items(), key=lambda kv: (kv[1], kv[0]), default=None)
        where = (
            f"; most in {top[0]} ({top[1] / who.n:,.1f} ms {who.per})" if top and top[1] > 0 else ""
        )
        hits.append((exposed, who, comm, where))
    if not hits:
        return []
    hits.sort(key=lambda h: (-h[0], rank_order(h[1].rank)))
    exposed, who, comm, _ = hits[0]
    share = ratio(exposed, who.span_ms, 0.0)
    said = [(h[0], h[1]) for h in hits]
    lines = [
        f"rank {w.label}: communication {c:,.1f} ms {w.per}, {e:,.1f} ms of it while no "
        f"compute ran, of a {w.span_ms:,.1f} ms step{where}"
        for e, w, c, where in hits[:DETAIL_RANKS]
    ]
    lines.append(
        "device breakdown: communication kernels' time (NCCL, DeepEP, NVSHMEM... as "
        "docs/classification.md lists them) less the part that overlaps compute "
        "kernels (HTA's temporal breakdown and comm/comp overlap)"
    )
    return [
        Finding(
            rule="cuda.exposed_comm",
            title=f"Communication not overlapped with compute: {exposed:,.1f} ms {who.per} "
            f"({share:.0%} of the step, {ratio(exposed, comm, 0.0):.0%} of its "
            f"communication) on {_ranks_said(said)}",
            detail="\n".join(_more(lines, said)),
            suggestion="Overlap communication with compute: bucket gradients so all-reduce "
            "starts during backward (DDP bucket_cap_mb, Megatron overlap_grad_reduce, "
            "FSDP prefetch) and avoid syncs that wait on collectives; if it stays high, "
            "the interconnect or the parallel layout is the limit.",
            severity=severity(share, MEDIUM_SHARE, HIGH_SHARE),
            impact_ms=exposed,
            source=files_text(
                result,
                [t for _, w, *_ in hits for t in w.traces],
                "Kineto device ops: communication kernels against compute kernels",
            ),
            ranks=_rank_list(said),
        )
    ]


#: This family's rules, in the order they run.
RULES: list[Rule] = [idle_time, launch_overhead, exposed_comm]
