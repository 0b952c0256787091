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
What a rule reads of a rank's device operators is a ``per_rank`` answer: ``answered`` computes
them as each capture is read and releases the operators, so that ranks by the thousand are not
held whole until the analysis across ranks ends.
"""

from __future__ import annotations

from mindspeed_prof.analysis.findings.finding import Rule
from mindspeed_prof.analysis.findings.npu.captures import answered
from mindspeed_prof.analysis.findings.npu.env import env_vars
from mindspeed_prof.analysis.findings.npu.host import host_wait, runtime_compile, synchronize_stream
from mindspeed_prof.analysis.findings.npu.layout import byte_alignment, dynamic_shapes
from mindspeed_prof.analysis.findings.npu.ops import (
    affinity_apis,
    aicpu_ops,
    no_bound_ops,
    vector_perf,
)
from mindspeed_prof.analysis.findings.npu.ranks import slow_link, slow_rank, small_packets

__all__ = ["RULES", "answered"]

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
