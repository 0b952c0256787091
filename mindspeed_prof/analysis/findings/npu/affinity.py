"""Operators with a fused (affinity) API: optimizer steps with a fused NPU version."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from mindspeed_prof.analysis.findings.common import one_line, ranks_of
from mindspeed_prof.analysis.findings.finding import Finding
from mindspeed_prof.analysis.findings.npu.captures import MS, files_of, npu_captures, on_ranks
from mindspeed_prof.analysis.readers.labels import rank_label
from mindspeed_prof.analysis.readers.model import TraceData

if TYPE_CHECKING:
    from mindspeed_prof.analysis.report.captures import Captures
    from mindspeed_prof.analysis.report.settings import Settings
    from mindspeed_prof.analysis.report.tables import Tables

__all__ = ["FUSED_OPTIMIZERS", "affinity", "affinity_apis"]

#: timeline_fusion_ops.yaml: optimizers with a fused NPU version.
FUSED_OPTIMIZERS = {
    name: f"torch_npu.optim.NpuFused{name}"
    for name in (
        "AdamW",
        "SGD",
        "Adadelta",
        "Lamb",
        "AdamP",
        "BertAdam",
        "RMSprop",
        "RMSpropTF",
        "Adam",
    )
}
_OPTIMIZER = re.compile(r"^Optimizer\.step#(\w+)\.step$")


def affinity(t: TraceData) -> dict[str, tuple[str, int, float]]:
    """Optimizer steps with a fused replacement: host op -> (replacement, calls, self us)."""
    out = {}
    for name, tally in t.ops.items():
        m = _OPTIMIZER.match(name)
        if m and m.group(1) in FUSED_OPTIMIZERS:
            out[name] = (FUSED_OPTIMIZERS[m.group(1)], tally.count, tally.total)
    return out


def affinity_apis(captures: Captures, tables: Tables, settings: Settings) -> list[Finding]:
    found: dict[str, list[tuple[TraceData, int, float]]] = defaultdict(list)
    fused: dict[str, str] = {}
    for t in npu_captures(captures):
        for op, (api, calls, us) in affinity(t).items():
            found[op].append((t, calls, us))
            fused[op] = api
    out = []
    for op, seen in sorted(found.items()):
        traces = [t for t, _, _ in seen]
        calls = sum(c for _, c, _ in seen)
        out.append(
            one_line(
                Finding(
                    rule="npu.affinity_api",
                    title=f"{op} has a fused NPU version: {fused[op]} ({calls} call"
                    f"{'s' * (calls != 1)} on {on_ranks(traces)})",
                    detail="\n".join(
                        f"rank {rank_label(t.rank)}: {c} call{'s' * (c != 1)}, "
                        f"{us / MS:,.2f} ms self time"
                        for t, c, us in seen
                    ),
                    suggestion=(
                        f"Replace the optimizer with {fused[op]} (same arguments): it updates "
                        "all parameters in a few fused kernels"
                    ),
                    severity="low",
                    source=files_of(captures, traces, "host"),
                    ranks=ranks_of(traces),
                )
            )
        )
    return out
