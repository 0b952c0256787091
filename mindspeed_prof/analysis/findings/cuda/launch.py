"""``cuda.launch_overhead``: many kernels shorter than their launch call (HTA's
``get_cuda_kernel_launch_stats``): the host spends longer launching them than the GPU runs
them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.cuda.ranks import (
    Rank,
    finding,
    fired,
    ranks_said,
)
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.readers.device.streams import (
    LATE_US,
    PROMPT_US,
    SLOW_CALL_US,
    TINY_US,
)
from mindspeed_prof.analysis.readers.ratio import ratio

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["launch_overhead"]


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


def _measure(who: Rank) -> tuple[float, dict[str, float]] | None:
    """The time per step the GPU waits on launches, and ``_LAUNCH_FIELDS`` per step (None
    without launch statistics)."""
    if not who.launches:
        return None
    v = {f: sum(float(getattr(s, f)) for s in who.launches) / who.n for f in _LAUNCH_FIELDS}
    return v["starved_cpu_ms"] - v["starved_gpu_ms"], v


def launch_overhead(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    """Kernels shorter than their launch call that the GPU ran as soon as the call returned:
    it waited on the host's launching longer than it ran them (HTA's kernel launch
    statistics). Kernels that queued behind earlier work cost nothing to launch."""
    hits = fired(captures, tables, settings, _measure)
    if not hits:
        return []
    overhead, who, v = hits[0]
    share = ratio(overhead, who.span_ms, 0.0)
    said = [(h[0], h[1]) for h in hits]
    lines = []
    for _, w, x in hits:
        mean = x["delay_ms"] / x["launches"] * 1e3 if x["launches"] else 0.0
        lines.append(
            f"rank {w.label}: {x['launches']:,.0f} launches {w.per} (calls {x['cpu_ms']:,.1f} "
            f"ms, kernels {x['gpu_ms']:,.1f} ms); {x['short']:,.0f} shorter than their call, "
            f"{x['starved']:,.0f} of them run at once (calls {x['starved_cpu_ms']:,.1f} ms, "
            f"kernels {x['starved_gpu_ms']:,.1f} ms); {x['tiny']:,.0f} under {TINY_US:.0f} us; "
            f"launch delay {mean:,.1f} us on average, {x['late']:,.0f} over {LATE_US:.0f} us; "
            f"{x['slow_calls']:,.0f} calls over {SLOW_CALL_US:.0f} us"
        )
    per = who.each
    return [
        finding(
            captures,
            tables,
            settings,
            said,
            lines,
            how="HTA's kernel launch statistics: each device op against its launch call "
            "(cudaLaunchKernel, cudaMemcpyAsync...); its launch delay is its start less "
            f"the call's end; run at once: within {PROMPT_US:.0f} us of it",
            rule="cuda.launch_overhead",
            title=f"{v['starved']:,.0f} of {v['launches']:,.0f} kernels{per} are shorter than "
            f"their launch call and run as soon as it returns on {ranks_said(said)}: the "
            f"GPU waits {overhead:,.1f} ms{per} on launches ({share:.0%} of {who.whole})",
            suggestion="Launch fewer, larger kernels: capture the step in a CUDA graph "
            "(torch.cuda.graphs, torch.compile mode='reduce-overhead'), fuse small ops "
            "(torch.compile, fused or foreach optimizers), or give each kernel more work "
            "(larger batches or micro-batches).",
            share=share,
            what="Kineto device ops and their launch calls",
        )
    ]
