"""Findings rules: npu (see ``analysis.findings``): what Ascend's msprof-analyze advisor
checks on a torch_npu capture, and what it leaves in raw tables (host waits, run-time
compilation), each from the facts the torch_npu readers keep (``TraceData.npu``, ``device``,
``runtime``, ``ops``).

Each check has an evidence function of one capture (or of the analysis, for checks across
ranks) that returns plain numbers, and a rule that turns them into findings; the thresholds are
the advisor's (``advisor/rules/en/*.yaml`` of msprof-analyze 26.2.0) unless said otherwise.
Where the advisor looks at one rank (the slowest, else the first), these look at every rank.
One module per kind of check: ``env``, ``layout`` (alignment, dynamic shapes), ``ops`` (AI
core and AI CPU operators, affinity APIs), ``ranks`` (slow ranks and links, small packets),
``host`` (waits, compilation, synchronous launches); ``captures`` what they all read.
"""

from __future__ import annotations

from mindspeed_prof.analysis.findings.finding import Rule
from mindspeed_prof.analysis.findings.npu.env import (
    ENV_RULES,
    EnvIssue,
    EnvRule,
    env_issues,
    env_vars,
)
from mindspeed_prof.analysis.findings.npu.host import (
    COMPILE_APIS,
    HOST_WAIT_SHARE,
    LAUNCH_SYNC_RATIO,
    HostCalls,
    compile_calls,
    host_wait,
    host_waits,
    launch_blocking,
    runtime_compile,
    synchronize_stream,
)
from mindspeed_prof.analysis.findings.npu.layout import (
    ALIGN_BYTES,
    ALIGN_MIN_BYTES,
    Aligned,
    Alignment,
    alignment,
    byte_alignment,
    dynamic_shape,
    dynamic_shapes,
)
from mindspeed_prof.analysis.findings.npu.ops import (
    AICPU_MIN_US,
    BOUND_RATIO,
    FUSED_OPTIMIZERS,
    VECTOR_SHARE,
    NoBound,
    VectorOp,
    affinity,
    affinity_apis,
    aicpu,
    aicpu_ops,
    no_bound,
    no_bound_ops,
    unit_ratios,
    vector_ops,
    vector_perf,
)
from mindspeed_prof.analysis.findings.npu.ranks import (
    PACKET_LIMITS,
    SPREAD,
    LinkSpread,
    Packets,
    RankSpread,
    link_spread,
    packets,
    rank_spread,
    slow_link,
    slow_rank,
    small_packets,
)

__all__ = [
    "AICPU_MIN_US",
    "ALIGN_BYTES",
    "ALIGN_MIN_BYTES",
    "BOUND_RATIO",
    "COMPILE_APIS",
    "ENV_RULES",
    "FUSED_OPTIMIZERS",
    "HOST_WAIT_SHARE",
    "LAUNCH_SYNC_RATIO",
    "PACKET_LIMITS",
    "RULES",
    "SPREAD",
    "VECTOR_SHARE",
    "Aligned",
    "Alignment",
    "EnvIssue",
    "EnvRule",
    "HostCalls",
    "LinkSpread",
    "NoBound",
    "Packets",
    "RankSpread",
    "VectorOp",
    "affinity",
    "affinity_apis",
    "aicpu",
    "aicpu_ops",
    "alignment",
    "byte_alignment",
    "compile_calls",
    "dynamic_shape",
    "dynamic_shapes",
    "env_issues",
    "env_vars",
    "host_wait",
    "host_waits",
    "launch_blocking",
    "link_spread",
    "no_bound",
    "no_bound_ops",
    "packets",
    "rank_spread",
    "runtime_compile",
    "slow_link",
    "slow_rank",
    "small_packets",
    "synchronize_stream",
    "unit_ratios",
    "vector_ops",
    "vector_perf",
]

#: This family's rules, in the order they run.
RULES: list[Rule] = [
    env_vars,
    byte_alignment,
    dynamic_shapes,
    vector_perf,
    no_bound_ops,
    aicpu_ops,
    affinity_apis,
    slow_rank,
    slow_link,
    small_packets,
    host_wait,
    runtime_compile,
    synchronize_stream,
]
