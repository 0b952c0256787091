"""``cuda.exposed_comm``: communication kernels (NCCL, DeepEP, NVSHMEM... by
``readers.classify``) not overlapped with compute, a share of the step."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.device_scope import parts
from mindspeed_prof.analysis.findings.cuda.ranks import (
    Rank,
    finding,
    fired,
    ranks_said,
)
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["exposed_comm"]


def _measure(who: Rank) -> tuple[float, tuple[float, str]] | None:
    """The communication time per step no compute overlaps, all of it, and the stage with
    the most (None without CUDA rows)."""
    rows = [r for r in who.steps if r.comm_exposed_ms is None]
    if not rows:
        return None
    exposed = sum(parts(r)["communication"] for r in rows) / who.n
    comm = sum(max(r.comm_ms, 0.0) for r in rows) / who.n
    by_stage: dict[str, float] = defaultdict(float)
    for r in who.stages:
        if r.stage is not None and r.comm_exposed_ms is None:
            by_stage[r.stage] += parts(r)["communication"]
    top = max(by_stage.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    where = f"; most in {top[0]} ({top[1] / who.n:,.1f} ms {who.per})" if top and top[1] > 0 else ""
    return exposed, (comm, where)


def exposed_comm(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Communication time on the device that no compute overlaps, a share of the step (CUDA
    rows; torch_npu's exposed communication is the npu rules')."""
    hits = fired(captures, tables, settings, _measure)
    if not hits:
        return []
    exposed, who, (comm, _) = hits[0]
    share = ratio(exposed, who.span_ms, 0.0)
    said = [(h[0], h[1]) for h in hits]
    lines = [
        f"rank {w.label}: communication {c:,.1f} ms {w.per}, {e:,.1f} ms of it while no "
        f"compute ran, of a {w.span_ms:,.1f} ms step{where}"
        for e, w, (c, where) in hits
    ]
    return [
        finding(
            captures,
            tables,
            settings,
            said,
            lines,
            how="device breakdown: communication kernels' time (NCCL, DeepEP, NVSHMEM... as "
            "docs/classification.md lists them) less the part that overlaps compute "
            "kernels (HTA's temporal breakdown and comm/comp overlap)",
            rule="cuda.exposed_comm",
            title=f"Communication not overlapped with compute: {exposed:,.1f} ms {who.per} "
            f"({share:.0%} of the step, {ratio(exposed, comm, 0.0):.0%} of its "
            f"communication) on {ranks_said(said)}",
            suggestion="Overlap communication with compute: bucket gradients so all-reduce "
            "starts during backward (DDP bucket_cap_mb, Megatron overlap_grad_reduce, "
            "FSDP prefetch) and avoid syncs that wait on collectives; if it stays high, "
            "the interconnect or the parallel layout is the limit.",
            share=share,
            what="Kineto device ops: communication kernels against compute kernels",
        )
    ]
